"""``compute_average_loss``: TensorFlow's loss scaling for synchronous replicas.

Each replica divides the sum of its per-example losses by the *global* batch
size. Inside ``strategy.run`` (``jax.shard_map`` with ``check_vma=True``), the
gradient of such a per-replica loss with respect to replicated parameters is
already summed over the replicas (DESIGN.md), so it equals the gradient of the
mean loss over the global batch on one device: apply it as it is, as TF's
optimizer applies it after its all-reduce. An explicit ``all_reduce(SUM)`` of it
counts it N times, as TF 2.21 does when its Keras 3 optimizer sums the already
all-reduced gradients again.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..errors import DistributeArgumentError, ReplicaContextError
from ._context import get_replica_context, get_strategy, in_cross_replica_context


def _check_global_batch_size(global_batch_size) -> None:
    if isinstance(global_batch_size, jax.Array | jnp.ndarray):
        return  # traced or concrete array: TensorFlow checks it at run time; we trust it.
    if isinstance(global_batch_size, bool) or not isinstance(global_batch_size, int):
        raise DistributeArgumentError(
            "global_batch_size must be a positive int (the batch size summed over all "
            f"replicas), got {type(global_batch_size).__name__} {global_batch_size!r}."
        )
    if global_batch_size <= 0:
        raise DistributeArgumentError(
            f"global_batch_size must be positive (the batch size summed over all replicas), "
            f"got {global_batch_size}."
        )


def compute_average_loss(
    per_example_loss: jax.Array,
    global_batch_size: int | None = None,
    sample_weight: jax.Array | float | None = None,
) -> jax.Array:
    """Scales per-example losses by the global batch size (``tf.nn.compute_average_loss``).

    Returns ``sum(per_example_loss * sample_weight) / global_batch_size``. When
    ``global_batch_size`` is None it is this replica's batch (the leading
    dimension of ``per_example_loss``) times ``num_replicas_in_sync``.

    Args:
      per_example_loss: this replica's losses, shape ``[per_replica_batch, ...]``.
      global_batch_size: the batch size over all replicas; None to infer it.
      sample_weight: optional weights, broadcastable to ``per_example_loss``.

    Returns:
      A scalar: this replica's share of the global mean loss. Summed over the
      replicas it is the mean over the global batch.

    Raises:
      DistributeArgumentError: ``per_example_loss`` is a scalar, or ``global_batch_size``
        is not a positive int (a ``ValueError`` and a ``TypeError``).
      ReplicaContextError: called inside ``scope()`` outside ``run`` with no
        ``global_batch_size``.

    Examples:
      >>> import jax.numpy as jnp
      >>> float(compute_average_loss(jnp.array([1.0, 2.0, 3.0]), global_batch_size=6))
      1.0
    """
    per_example_loss = jnp.asarray(per_example_loss)
    if per_example_loss.ndim == 0:
        raise DistributeArgumentError(
            "compute_average_loss expects per-example losses with a leading batch axis "
            "(rank >= 1); got a scalar. Compute the loss with reduction='none' "
            "(e.g. optax.softmax_cross_entropy_with_integer_labels, not its mean)."
        )
    dtype = per_example_loss.dtype
    if sample_weight is not None:
        weight = jnp.asarray(sample_weight, dtype=dtype)
        if weight.ndim < per_example_loss.ndim and weight.ndim > 0:
            weight = weight.reshape(weight.shape + (1,) * (per_example_loss.ndim - weight.ndim))
        per_example_loss = per_example_loss * weight
    total = jnp.sum(per_example_loss)
    if global_batch_size is None:
        if in_cross_replica_context():
            raise ReplicaContextError(
                "compute_average_loss was called in cross-replica context (inside scope(), "
                "outside strategy.run) without global_batch_size. Call it inside the function "
                "given to strategy.run, or pass global_batch_size."
            )
        ctx = get_replica_context()
        replicas = (
            ctx.num_replicas_in_sync if ctx is not None else get_strategy().num_replicas_in_sync
        )
        global_batch_size = per_example_loss.shape[0] * replicas
    else:
        _check_global_batch_size(global_batch_size)
    denom = jnp.asarray(global_batch_size, dtype=dtype)
    return jnp.where(denom == 0, jnp.zeros((), dtype), total / denom)


def scale_regularization_loss(regularization_loss: Any) -> jax.Array:
    """Scales a regularization loss by the replicas in sync (``tf.nn.scale_regularization_loss``).

    Returns ``sum(regularization_loss) / num_replicas_in_sync``. Add it to the
    ``compute_average_loss`` of each replica: the gradients, summed over the
    replicas, then carry the penalty once, as on one device (``fit`` does the same).

    Args:
      regularization_loss: a scalar, an array, or a list of them (e.g. a
        model's ``losses``); everything is summed.

    Returns:
      A float scalar: this replica's share of the penalty.

    Raises:
      ReplicaContextError: called inside ``scope()`` outside ``run`` (TensorFlow
        raises too: the replica count it divides by belongs to ``run``).
      TypeError: something that is not numbers.

    Examples:
      >>> float(scale_regularization_loss([0.5, 1.5]))  # outside any strategy: 1 replica
      2.0
    """
    if in_cross_replica_context():
        raise ReplicaContextError(
            "scale_regularization_loss was called in cross-replica context (inside scope(), "
            "outside strategy.run); it divides by the replicas of run. Call it inside the "
            "function given to strategy.run, next to compute_average_loss."
        )
    terms = regularization_loss
    if not isinstance(terms, list | tuple):
        terms = [terms]
    try:
        total = sum((jnp.sum(jnp.asarray(t)) for t in terms), jnp.zeros((), jnp.float32))
    except TypeError:
        raise DistributeArgumentError(
            "scale_regularization_loss takes a scalar, an array or a list of them (e.g. "
            f"model.losses); got {type(regularization_loss).__name__} {regularization_loss!r}."
        ) from None
    ctx = get_replica_context()
    replicas = ctx.num_replicas_in_sync if ctx is not None else get_strategy().num_replicas_in_sync
    return total / replicas
