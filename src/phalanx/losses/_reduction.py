"""How a loss reduces its values and in which dtype it computes them, as Keras 3's ``Loss``.

Calling a loss (``loss(y_true, y_pred, sample_weight)``) reduces as
``keras/src/losses/loss.py`` does (``reduce_weighted_values``): a mask that the
loss itself produces (``SparseCategoricalCrossentropy(ignore_class=...)``)
merges into the sample weights, ``"sum_over_batch_size"``/``"mean"`` divide the
weighted sum by the number of valid entries, ``"mean_with_sample_weight"`` by
the sum of the (masked) weights, ``"sum"`` not at all, ``"none"``/None return
the weighted values. ``fit`` and ``evaluate`` reduce the same way over the
*global* batch: ``batch_terms`` gives one replica's share of the numerator
and divisor, which the step adds over replicas (``phalanx.train._step``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..errors import LossArgumentError, ModelStructureError

#: Keras 3's reductions, then tf.keras's ``"auto"`` (the batch's mean).
REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)
_ACCEPTED = (*REDUCTIONS, "auto")
_MEANS = ("sum_over_batch_size", "mean", "auto")
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def validate_reduction(key: Any) -> Any:
    """Returns ``key`` when it names a reduction; raises ``LossArgumentError`` otherwise."""
    if isinstance(key, str | type(None)) and key in _ACCEPTED:
        return key
    raise LossArgumentError(
        f"reduction must be one of {_ACCEPTED} (Keras 3's, and tf.keras's 'auto'), got {key!r}. "
        "'sum_over_batch_size' (the default) gives the batch's mean; 'mean_with_sample_weight' "
        "divides by the sum of the sample weights; 'sum' the sum; 'none' (or None) one loss "
        "per example, for phalanx.compute_average_loss in a custom loop."
    )


def compute_dtype(loss_name: str, dtype: Any) -> str:
    """The dtype a loss computes in (Keras 3: the policy's ``compute_dtype``; None is float32).

    Takes a float dtype's name or object, ``"mixed_float16"``/``"mixed_bfloat16"``
    or a dtype policy (phalanx's or Keras's: its ``compute_dtype``).

    Raises:
      LossArgumentError: not a float dtype (Keras 3 takes ``"int32"`` and casts the
        predictions to it: 0.3 becomes 0), or float64 while JAX's x64 mode is off
        (JAX would compute in float32).
    """
    if dtype is None:
        return "float32"
    name = getattr(dtype, "compute_dtype", dtype)  # a DTypePolicy
    if isinstance(name, str) and name in ("mixed_float16", "mixed_bfloat16"):
        name = name[len("mixed_") :]
    try:
        name = jnp.dtype(name).name
    except TypeError:
        name = None
    if name not in _FLOATS:
        raise LossArgumentError(
            f"{loss_name}(dtype={dtype!r}): a loss computes in a float dtype: one of "
            f"{_FLOATS}, 'mixed_float16', 'mixed_bfloat16' or a DTypePolicy (None: float32). "
            "Keras 3 casts the targets and predictions to an integer dtype too (0.3 becomes "
            "0); phalanx refuses it."
        )
    if name == "float64" and not jax.config.jax_enable_x64:
        raise LossArgumentError(
            f"{loss_name}(dtype={dtype!r}): float64 needs JAX's 64-bit mode, which is off (JAX "
            "would compute in float32, as Keras 3 then does silently). Enable it at the start "
            "of the program (jax.config.update('jax_enable_x64', True)) or use float32."
        )
    return name


def _expand_to(weight: jax.Array, values: jax.Array) -> jax.Array:
    """``weight`` ([batch], or the values' shape) broadcastable against ``values``."""
    if weight.ndim == values.ndim + 1 and weight.shape[-1] == 1:
        weight = weight[..., 0]
    if weight.ndim < values.ndim:
        weight = weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim))
    return weight


def _divide_no_nan(x: jax.Array, y: jax.Array) -> jax.Array:
    safe = jnp.where(y == 0, jnp.ones_like(y), y)
    return jnp.where(y == 0, jnp.zeros_like(x), x / safe)


def reduce_weighted_values(
    values: jax.Array, sample_weight: Any, mask: Any, reduction: Any, dtype: str
) -> jax.Array:
    """Keras 3's ``reduce_weighted_values``, in ``dtype``.

    The mask merges into the sample weights (for the means as ``total / valid``
    on valid entries, so the weighted sum divided by the entries' count is
    divided by the valid count instead), then the weighted values are reduced.
    One difference: ``sample_weight`` of shape ``[batch]`` against values
    ``[batch, ...]`` is expanded on the right (Keras 3 broadcasts it against the
    last axis, an error unless that axis has the batch's size).
    """
    values = jnp.asarray(values, dtype)
    if sample_weight is not None:
        sample_weight = jnp.asarray(sample_weight, dtype)
    if mask is not None:
        mask = jnp.asarray(mask, bool)
        if reduction in _MEANS:
            total = jnp.asarray(mask.size, dtype)
            valid = jnp.sum(mask.astype(dtype))
            float_mask = jnp.where(mask, _divide_no_nan(total, valid), jnp.zeros((), dtype))
        else:
            float_mask = mask.astype(dtype)
        if sample_weight is not None:
            sample_weight = _expand_to(sample_weight, float_mask) * float_mask
        else:
            sample_weight = float_mask
    if sample_weight is not None:
        values = values * _expand_to(sample_weight, values)
    if reduction in (None, "none") or values.ndim == 0 or values.shape == (0,):
        return values
    loss = jnp.sum(values)
    if reduction == "sum":
        return loss
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = jnp.sum(jnp.broadcast_to(_expand_to(sample_weight, values), values.shape))
    else:
        divisor = jnp.asarray(values.size, dtype)
    return _divide_no_nan(loss, divisor.astype(dtype))


def batch_terms(
    values: jax.Array, valid: Any, weight: jax.Array, mask: jax.Array, reduction: Any
) -> tuple[jax.Array, jax.Array | None]:
    """One replica's ``(numerator, divisor)`` of the loss of the global batch, float32.

    The step's loss is ``psum(numerator) / psum(divisor)`` (0 when the divisor is
    0, as Keras's ``divide_no_nan``); a divisor of None is 1 (``"sum"``).

    Args:
      values: the loss's unreduced values, ``[batch, ...]`` (any float dtype).
      valid: the loss's own mask of the values (``ignore_class``), or None.
      weight: each example's sample weight, ``[batch]`` (0 for padding).
      mask: 1 for real examples, 0 for padding, ``[batch]`` (or, with a model output's
        mask merged in by ``apply_output_mask``, that mask's shape).
      reduction: the loss's; ``"none"`` reduces as ``"sum_over_batch_size"`` (a
        function's name, which Keras 3 wraps with that default).
    """
    values = jnp.asarray(values, jnp.float32)
    if 0 < values.ndim < jnp.ndim(mask):  # an output mask (apply_output_mask) of more axes
        raise LossArgumentError(
            f"The model's output carries a Keras mask of shape {jnp.shape(mask)}, but the loss "
            f"gives values of shape {values.shape}: it reduces the masked axes, so the mask "
            "cannot weigh them (Keras 3 fails on it too). Use a loss that keeps one value per "
            "masked entry (a built-in loss reduces only the last axis), or drop the mask."
        )
    if values.ndim == 0:  # a loss of the whole piece (Dice(axis=None)): each example's share
        values = jnp.broadcast_to(values, mask.shape)
    real = jnp.broadcast_to(_expand_to(mask, values) > 0, values.shape)
    if valid is not None:
        real = real & jnp.asarray(valid, bool).reshape(values.shape)
    weight = jnp.broadcast_to(_expand_to(jnp.asarray(weight, jnp.float32), values), values.shape)
    # where, not a product: a padded row's loss may be anything, even NaN. A real row counts
    # whatever its weight, as Keras: a NaN sample_weight makes the loss NaN.
    numerator = jnp.sum(jnp.where(real, values * weight, 0.0))
    if reduction == "sum":
        return numerator, None
    if reduction == "mean_with_sample_weight":
        return numerator, jnp.sum(jnp.where(real, weight, 0.0))
    return numerator, jnp.sum(real.astype(jnp.float32))


def apply_output_mask(weight: Any, mask: Any, output_mask: Any) -> tuple[Any, Any]:
    """``(weight, mask)`` for ``batch_terms`` with a model output's Keras mask merged in.

    Keras 3's ``apply_mask`` merges ``y_pred``'s mask into the sample weights,
    scaled for the means so that they divide by the valid entries' count:
    ``sum(loss * sample_weight * output_mask) / sum(output_mask)`` for
    ``"sum_over_batch_size"``, that sum alone for ``"sum"``. ``batch_terms``
    counts the entries whose ``mask`` is above 0, so the products here give the
    same figures (over the global batch: the counts add over replicas).

    Args:
      weight: each example's sample weight, ``[batch]`` (or the values' shape).
      mask: 1 for real examples, 0 for padding, ``[batch]``.
      output_mask: the output's mask, ``[batch, ...]`` (True where an entry
        counts), or None; a tuple (a model of several outputs) of None only.

    Returns:
      ``(weight, mask)`` unchanged for None (nothing is traced); else both times
      the output mask, of its shape.

    Raises:
      ModelStructureError: a model of several outputs carries a mask on one of them.
    """
    if output_mask is None:
        return weight, mask
    if isinstance(output_mask, tuple):
        raise ModelStructureError(
            "An output of a model with several outputs carries a Keras mask "
            "(Embedding(mask_zero=True), Masking, ...); phalanx weighs the compiled loss and "
            "metrics by an output mask only for a model of one output (predict runs). Give the "
            "padded entries sample_weight 0, or end the masked output's branch with a layer "
            "that drops the mask."
        )
    keep = jnp.asarray(output_mask, jnp.float32)
    weight = jnp.asarray(weight, jnp.float32)
    return _expand_to(weight, keep) * keep, _expand_to(jnp.asarray(mask), keep) * keep
