"""``ReplicaContext``: what the function given to ``strategy.run`` sees of its replica."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

from ._reduce_op import ReduceOp

if TYPE_CHECKING:
    from ._strategy import Strategy


class ReplicaContext:
    """The replica that is running, and collectives across all replicas.

    Inside ``strategy.run``, ``fn`` runs once per replica under ``jax.shard_map``;
    ``replica_id_in_sync_group`` is then a traced int32 scalar (as TensorFlow's is
    a tensor inside ``tf.function``). Outside any strategy, the default replica
    context has one replica, id 0, and its collectives return their input.

    Attributes:
      strategy: the strategy this replica belongs to.
    """

    def __init__(self, strategy: Strategy, axis_name: str | None):
        self.strategy = strategy
        self._axis_name = axis_name  # None: not under shard_map (default context).

    @property
    def num_replicas_in_sync(self) -> int:
        """The number of replicas that run in lockstep."""
        return self.strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> jax.Array | int:
        """This replica's index in ``0 .. num_replicas_in_sync - 1``."""
        if self._axis_name is None:
            return 0
        return jax.lax.axis_index(self._axis_name)

    def all_reduce(self, reduce_op: ReduceOp | str, value: Any) -> Any:
        """Sums or averages ``value`` (a pytree of arrays) over all replicas.

        Every replica gets the same result; returned from ``run`` it is a
        replicated array.

        Examples:
          >>> import jax.numpy as jnp
          >>> from phalanx.distribute import get_replica_context
          >>> get_replica_context().all_reduce("sum", jnp.ones(2)).tolist()
          [1.0, 1.0]
        """
        op = ReduceOp.from_any(reduce_op)
        if self._axis_name is None:
            return jax.tree.map(jnp.asarray, value)
        collective = jax.lax.psum if op is ReduceOp.SUM else jax.lax.pmean
        return jax.tree.map(lambda v: collective(v, self._axis_name), value)

    def all_gather(self, value: Any, axis: int) -> Any:
        """Concatenates every replica's ``value`` along ``axis``, in replica order.

        Args:
          value: a pytree of arrays of the same shape on every replica.
          axis: the axis to concatenate along; negative counts from the end.

        Returns:
          The pytree, each leaf's ``axis`` ``num_replicas_in_sync`` times longer.
        """
        if self._axis_name is None:
            return jax.tree.map(jnp.asarray, value)

        def gather(v):
            v = jnp.asarray(v)
            if v.ndim == 0:
                raise ValueError(
                    "all_gather needs arrays of rank >= 1 to concatenate along an axis; got a "
                    "scalar. Use value[None] to gather scalars into a vector."
                )
            return jax.lax.all_gather(v, self._axis_name, axis=axis % v.ndim, tiled=True)

        return jax.tree.map(gather, value)

    def __repr__(self) -> str:
        return f"ReplicaContext(strategy={self.strategy!r})"
