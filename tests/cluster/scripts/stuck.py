"""Child script: a training loop whose process 1 gets stuck in step 3; the watchdog must fire."""

import os
import time

os.environ["JAX_PLATFORMS"] = "cpu"

import phalanx.cluster
from phalanx.cluster import watchdog

phalanx.cluster.initialize(initialization_timeout=30)

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("x",))
step_fn = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))
local = np.ones((jax.local_device_count(),), np.float32)
for step in range(1000):
    watchdog.beat(step=step, phase="train", timeout=60 if step == 0 else None)
    if step == 3 and jax.process_index() == 1:
        print("stuck in step 3", flush=True)
        time.sleep(600)
    float(step_fn(jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)))
    time.sleep(0.3)
