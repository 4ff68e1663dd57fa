"""Child script: initialize, check the process and device counts, psum across processes."""

import os

os.environ["JAX_PLATFORMS"] = "cpu"

import phalanx.cluster

phalanx.cluster.initialize()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

assert jax.process_count() == 2, jax.process_count()
assert jax.device_count() == 4, jax.devices()
mesh = Mesh(np.array(jax.devices()), ("x",))
local = np.full((jax.local_device_count(),), jax.process_index() + 1, np.float32)
x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)
total = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))(x)
print(f"process {jax.process_index()} psum {float(total)}", flush=True)
