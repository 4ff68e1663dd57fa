"""Distributed values: ``PerReplica`` and ``Mirrored`` (DESIGN.md, decision 2).

Both are thin pytrees over sharded ``jax.Array`` s, with no operator
overloading:

- ``PerReplica(values)``: every leaf has a leading *replica axis* of length
  ``num_replicas_in_sync``; leaf ``[i]`` belongs to replica ``i``. On a strategy's
  mesh the leaves are sharded ``P('replica')``, so each device holds its own.
- ``Mirrored(values)``: every replica holds the same value. ``strategy.run``
  returns a plain replicated ``jax.Array`` (``NamedSharding(mesh, P())``) for a
  cross-replica result; wrap a value in ``Mirrored`` to say explicitly that it is
  one distributed value held by every replica (so that ``reduce(SUM, ...)``
  counts every copy, as TensorFlow does).

A batch from a distributed dataset is neither: it is a global ``jax.Array``
sharded on its batch axis, and each replica sees its slice of the batch.
"""

from __future__ import annotations

from typing import Any

import jax

from ..errors import DistributedValueError


@jax.tree_util.register_pytree_node_class
class PerReplica:
    """One value per replica, stacked on a leading replica axis.

    Unlike ``tf.distribute``'s ``PerReplica((v0, v1, ...))``, it holds one value
    whose leaves are stacked: a Python ``list`` of per-replica values is
    refused, with how to stack it.

    Attributes:
      values: a pytree whose leaves have shape ``[num_replicas, ...]``.

    Raises:
      DistributedValueError: ``values`` is a list (one value per replica).

    Examples:
      >>> import numpy as np
      >>> v = PerReplica(np.arange(4))
      >>> v.num_replicas
      4
    """

    __slots__ = ("values",)

    def __init__(self, values: Any):
        if isinstance(values, list):
            raise DistributedValueError(_LIST_MESSAGE.format(n=len(values)))
        self.values = values

    @classmethod
    def _of(cls, values: Any) -> PerReplica:
        """Wraps ``values`` as they are (a list too): for pytrees phalanx builds itself."""
        out = object.__new__(cls)
        out.values = values
        return out

    @property
    def num_replicas(self) -> int:
        """The length of the leading replica axis (of the first leaf)."""
        leaves = jax.tree.leaves(self.values)
        return int(leaves[0].shape[0]) if leaves else 0

    def tree_flatten(self):
        return (self.values,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        del aux
        return cls._of(children[0])

    def __repr__(self) -> str:
        return f"PerReplica({self.values!r})"


_LIST_MESSAGE = (
    "PerReplica takes one value whose leaves are stacked on a leading replica axis (leaf[i] "
    "belongs to replica i), not a list of per-replica values as tf.distribute's PerReplica; "
    "got a list of {n} item(s). Stack them: PerReplica(np.stack(values)) (for pytrees, "
    "jax.tree.map(lambda *v: np.stack(v), *values)), or build it with "
    "strategy.experimental_distribute_values_from_function(lambda ctx: "
    "values[ctx.replica_id_in_sync_group])."
)


@jax.tree_util.register_pytree_node_class
class Mirrored:
    """One value that every replica holds, stored once as a replicated array.

    Attributes:
      values: a pytree of arrays (replicated over the strategy's mesh once passed
        through ``strategy.run``).

    Examples:
      >>> Mirrored(1.0).values
      1.0
    """

    __slots__ = ("values",)

    def __init__(self, values: Any):
        self.values = values

    def tree_flatten(self):
        return (self.values,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        del aux
        return cls(children[0])

    def __repr__(self) -> str:
        return f"Mirrored({self.values!r})"


def check_replica_axis(leaf: Any, num_replicas: int) -> None:
    """Raises ``DistributedValueError`` unless ``leaf`` (of a ``PerReplica``) has one row per replica.

    ``strategy.run``, ``reduce``, ``gather`` and ``experimental_local_results``
    all check it: a ``PerReplica`` of another length would be summed short or
    indexed past its end.
    """
    shape = tuple(getattr(leaf, "shape", ()))
    if not shape or shape[0] != num_replicas:
        got = "a scalar" if not shape else f"shape {shape}"
        raise DistributedValueError(
            f"A PerReplica value for {num_replicas} replicas needs a leading replica axis of "
            f"length {num_replicas}; got {got}. Build it with "
            "strategy.experimental_distribute_values_from_function, or stack one row per "
            "replica."
        )


def is_distributed_value(x: Any) -> bool:
    """True for ``PerReplica`` and ``Mirrored``."""
    return isinstance(x, PerReplica | Mirrored)
