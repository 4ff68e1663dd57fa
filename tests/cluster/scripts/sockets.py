"""Child script: after a cross-process psum, print this process's listening TCP sockets."""

import os
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import phalanx.cluster

phalanx.cluster.initialize()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from listening import listening_addresses  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("x",))
local = np.full((jax.local_device_count(),), jax.process_index() + 1, np.float32)
x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), local)
total = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))(x)
print(f"process {jax.process_index()} psum {float(total)}", flush=True)
found = sorted(f"{host} {port}" for host, port in listening_addresses())
print(f"process {jax.process_index()} listens on {';'.join(found)}", flush=True)
