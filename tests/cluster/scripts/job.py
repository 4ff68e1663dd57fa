"""Child script for the launcher's failure tests: ``job.py MODE [INIT_TIMEOUT]``.

Modes: ``loop`` (every process reports ``ready pid=N`` then all-reduces until
killed), ``raise`` (process 1 raises after the first all-reduce, the others
keep going), ``init`` (only initialize, then print ``joined``).
"""

import os
import sys
import time

os.environ["JAX_PLATFORMS"] = "cpu"

import phalanx.cluster

mode = sys.argv[1]
timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
phalanx.cluster.initialize(initialization_timeout=timeout)
if mode == "init":
    print("joined", flush=True)
    sys.exit(0)

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("x",))
step = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))


def all_reduce() -> float:
    local = np.ones((jax.local_device_count(),), np.float32)
    return float(step(jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)))


print(f"ready pid={os.getpid()} sum={all_reduce()}", flush=True)
if mode == "raise" and jax.process_index() == 1:
    raise ValueError("boom from process 1")
while True:
    all_reduce()
    time.sleep(0.05)
