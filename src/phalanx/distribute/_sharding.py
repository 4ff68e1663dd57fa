"""Sharded parameters (ZeRO-3 / FSDP): the layout of variables over the replicas.

``MirroredStrategy(shard_parameters=True)`` (and ``MultiWorkerMirroredStrategy``)
keeps each model variable (parameters, optimizer state) split over the
replicas instead of whole on each: every replica stores ``1/N`` of it. The
layout is a function of the array's shape only, so a parameter and its
optimizer moments (same shape) are split alike:

- the largest axis whose length divides by the number of replicas is split
  (the first such axis on a tie);
- an array with fewer than ``MIN_SHARDED_SIZE`` elements, a scalar, or one with
  no divisible axis stays whole on every replica (a bias of 10 units is not
  worth a collective).

Sharded variables live on the *variable mesh*: the strategy's devices in the
same order, under the axis name ``'fsdp'`` (``VARIABLE_AXIS``). The devices,
and so the tiling, are the replica mesh's; the name differs so that a sharded
variable is never mistaken for a distributed batch (which is split over
``'replica'``, on axis 0, like many variables): ``strategy.run`` gives each
replica the whole value of a sharded argument (XLA gathers it inside the
compiled program) and its slice of a batch.

How a step computes with them (``fit``, ``phalanx.train._programs``): each
replica all-gathers the parameters for the forward and backward passes;
differentiating through the all-gather reduce-scatters the gradients, so each
replica receives the summed gradient of its own slice; the optimizer updates
slices (XLA partitions the update from the shardings, so a global norm is
still global). ``strategy.run`` in a custom loop gathers sharded arguments
for ``fn`` and stores the outputs that do not vary over replicas with this
layout again (docs/sharded_parameters.md).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

#: Arrays with fewer elements stay whole on every replica.
MIN_SHARDED_SIZE = 1024
#: The axis name of the variable mesh.
VARIABLE_AXIS = "fsdp"


def shard_axis(shape: tuple[int, ...], replicas: int) -> int | None:
    """The axis of an array of ``shape`` that is split over ``replicas``, or None.

    Args:
      shape: the array's global shape.
      replicas: the number of replicas.

    Returns:
      The largest axis whose length divides by ``replicas`` (the first on a tie),
      or None when the array stays whole: one replica, a scalar, fewer than
      ``MIN_SHARDED_SIZE`` elements, or no divisible axis.

    Examples:
      >>> shard_axis((784, 128), 8), shard_axis((10,), 8), shard_axis((100, 30), 8)
      (0, None, None)
      >>> shard_axis((30, 1000), 8)
      1
    """
    if replicas <= 1 or not shape or int(np.prod(shape)) < MIN_SHARDED_SIZE:
        return None
    divisible = [(size, -axis) for axis, size in enumerate(shape) if size % replicas == 0]
    if not divisible:
        return None
    return -max(divisible)[1]


def spec(shape: tuple[int, ...], replicas: int, axis_name: str) -> P:
    """The ``PartitionSpec`` of a variable of ``shape`` with its split axis named ``axis_name``."""
    axis = shard_axis(shape, replicas)
    if axis is None:
        return P()
    return P(*([None] * axis), axis_name)


def variable_mesh(devices: tuple[jax.Device, ...]) -> Mesh:
    """The mesh sharded variables live on: ``devices`` in replica order, axis ``'fsdp'``."""
    return Mesh(np.array(devices), (VARIABLE_AXIS,), axis_types=(AxisType.Auto,))


def is_key(x: Any) -> bool:
    """Whether ``x`` is a typed PRNG key array (always kept whole)."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


class VariableLayout:
    """Where a strategy keeps each variable: whole, or split by ``shard_axis``.

    Args:
      mesh: the variable mesh (``variable_mesh``).
      replicated: the replica mesh's whole-value sharding (``P()``), used for
        arrays that stay whole, so they are exactly what ``replicate`` gives.
    """

    def __init__(self, mesh: Mesh, replicated: NamedSharding):
        self.mesh = mesh
        self.replicated = replicated
        self.replicas = mesh.devices.size

    def sharding(self, x: Any) -> NamedSharding:
        """The sharding a variable like ``x`` (an array or ``ShapeDtypeStruct``) is kept with."""
        if is_key(x):
            return self.replicated
        shape = tuple(np.shape(x))
        if shard_axis(shape, self.replicas) is None:
            return self.replicated
        return NamedSharding(self.mesh, spec(shape, self.replicas, VARIABLE_AXIS))

    def is_sharded(self, x: Any) -> bool:
        """Whether ``x`` is an array split over this layout's variable mesh."""
        if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
            return False
        sharding = x.sharding
        return isinstance(sharding, NamedSharding) and sharding.mesh == self.mesh

    def replica_spec(self, x: Any, axis_name: str) -> P:
        """``x``'s layout as a spec over the replica mesh's axis (for ``shard_map``)."""
        if is_key(x):
            return P()
        return spec(tuple(np.shape(x)), self.replicas, axis_name)
