"""Keras 3's activation functions (``keras.activations.relu``, ``gelu``, ``softmax`` ...) on JAX.

Each function has Keras 3's name, signature and defaults, and computes what Keras's
JAX backend computes (the same ``jax.nn`` function, so values and gradients are
Keras's to the bit): ``gelu`` is exact by default (``approximate=False``),
``leaky_relu``'s slope is 0.2, ``relu`` takes ``negative_slope``, ``max_value``
and ``threshold`` with Keras's piecewise rules, ``softmax``/``log_softmax``
take an int or a tuple ``axis``. Inputs may be arrays, numpy arrays or lists;
the output has the input's shape (``glu`` halves ``axis``).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp

from ..errors import ActivationError

Axis = int | tuple[int, ...] | None


def relu(
    x: Any, negative_slope: float = 0.0, max_value: float | None = None, threshold: float = 0.0
) -> jax.Array:
    """Keras's rectified linear unit: ``max(x, 0)``, with Keras's optional slope, cap and threshold.

    For ``x > threshold`` the output is ``x`` (capped at ``max_value``); below,
    ``negative_slope * (x - threshold)``. As Keras: ``negative_slope`` alone is
    ``leaky_relu``; with a ``threshold``, values up to it give 0 before the slope
    part; ``max_value`` clips to ``[0, max_value]`` before the slope part is subtracted.

    Args:
      x: the input.
      negative_slope: the slope below ``threshold``.
      max_value: the largest output (None: no cap).
      threshold: where the function starts passing ``x``.

    Returns:
      An array of ``x``'s shape and dtype.

    Examples:
      >>> relu([-10.0, -5.0, 0.0, 5.0, 10.0], negative_slope=0.5).tolist()
      [-5.0, -2.5, 0.0, 5.0, 10.0]
      >>> relu([-10.0, -5.0, 0.0, 5.0, 10.0], max_value=5.0).tolist()
      [0.0, 0.0, 0.0, 5.0, 5.0]
    """
    x = jnp.asarray(x)
    if negative_slope != 0.0:
        if max_value is None and threshold == 0:
            return jax.nn.leaky_relu(x, negative_slope=negative_slope)
        negative_part = jax.nn.relu(-x + threshold) if threshold != 0 else jax.nn.relu(-x)
    clip_max = max_value is not None
    if threshold != 0:
        out = jnp.where(x > jnp.asarray(threshold, x.dtype), x, 0)
    elif max_value == 6:
        out, clip_max = jax.nn.relu6(x), False
    else:
        out = jax.nn.relu(x)
    if clip_max:
        out = jnp.clip(out, jnp.asarray(0.0, out.dtype), jnp.asarray(max_value, out.dtype))
    if negative_slope != 0.0:
        out = out - negative_slope * negative_part
    return out


def leaky_relu(x: Any, negative_slope: float = 0.2) -> jax.Array:
    """Keras's leaky ReLU: ``x`` for ``x >= 0``, ``negative_slope * x`` below.

    Args:
      x: the input.
      negative_slope: the slope for negative inputs.
    """
    return jax.nn.leaky_relu(jnp.asarray(x), negative_slope=negative_slope)


def relu6(x: Any) -> jax.Array:
    """Keras's ``relu6``: ``min(max(x, 0), 6)``.

    Args:
      x: the input.
    """
    return jax.nn.relu6(jnp.asarray(x))


def _warn_size_one(x: jax.Array, axis: Axis) -> None:
    if isinstance(axis, int) and -x.ndim <= axis < x.ndim and x.shape[axis] == 1:
        warnings.warn(  # Keras's words
            f"You are using a softmax over axis {axis} of a tensor of shape {x.shape}. This "
            "axis has size 1. The softmax operation will always return the value 1, which is "
            "likely not what you intended. Did you mean to use a sigmoid instead?",
            stacklevel=3,
        )


def _over_axes(fn: Any, x: jax.Array, axis: tuple[int, ...]) -> jax.Array:
    """``fn`` over the axes ``axis`` as one, as Keras's ``ops.softmax``: those axes moved
    last and flattened, ``fn`` on the last axis, then back (the same rounding as Keras)."""
    axis = tuple(a % x.ndim for a in axis)
    keep = [a for a in range(x.ndim) if a not in axis]
    moved = jnp.transpose(x, (*keep, *axis))
    out = fn(moved.reshape(*[x.shape[a] for a in keep], -1), axis=-1).reshape(moved.shape)
    order = [*keep, *axis]
    return jnp.transpose(out, sorted(range(len(order)), key=order.__getitem__))


def softmax(x: Any, axis: Axis = -1) -> jax.Array:
    """Keras's softmax over ``axis`` (an int, a tuple of ints, or None for all axes).

    Warns, as Keras, when ``axis`` has size 1 (the output is then all ones).

    Args:
      x: the logits.
      axis: the axis, or axes, that sum to 1.

    Examples:
      >>> softmax([[0.0, 0.0]]).tolist()
      [[0.5, 0.5]]
    """
    x = jnp.asarray(x)
    _warn_size_one(x, axis)
    if isinstance(axis, tuple):
        return _over_axes(jax.nn.softmax, x, axis)
    return jax.nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: Axis = -1) -> jax.Array:
    """Keras's log-softmax over ``axis`` (an int, a tuple of ints, or None).

    Args:
      x: the logits.
      axis: the axis, or axes, normalized.
    """
    x = jnp.asarray(x)
    if isinstance(axis, tuple):
        return _over_axes(jax.nn.log_softmax, x, axis)
    return jax.nn.log_softmax(x, axis=axis)


def elu(x: Any, alpha: float = 1.0) -> jax.Array:
    """Keras's exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below.

    Args:
      x: the input.
      alpha: the value the negative part tends to is ``-alpha``.
    """
    return jax.nn.elu(jnp.asarray(x), alpha=alpha)


def selu(x: Any) -> jax.Array:
    """Keras's scaled ELU (``scale=1.0507...``, ``alpha=1.6732...``).

    Args:
      x: the input.
    """
    return jax.nn.selu(jnp.asarray(x))


def celu(x: Any, alpha: float = 1.0) -> jax.Array:
    """Keras's continuously differentiable ELU: ``alpha * (exp(x / alpha) - 1)`` for ``x < 0``.

    Args:
      x: the input.
      alpha: the scale of the negative part.
    """
    return jax.nn.celu(jnp.asarray(x), alpha=alpha)


def softplus(x: Any) -> jax.Array:
    """Keras's softplus: ``log(exp(x) + 1)``.

    Args:
      x: the input.
    """
    return jax.nn.softplus(jnp.asarray(x))


def softsign(x: Any) -> jax.Array:
    """Keras's softsign: ``x / (abs(x) + 1)``.

    Args:
      x: the input.
    """
    return jax.nn.soft_sign(jnp.asarray(x))


def soft_shrink(x: Any, threshold: float = 0.5) -> jax.Array:
    """Keras's soft shrink: ``x - threshold`` above it, ``x + threshold`` below ``-threshold``, else 0.

    Args:
      x: the input.
      threshold: the half-width of the band mapped to 0.
    """
    x = jnp.asarray(x)
    return jnp.where(x > threshold, x - threshold, jnp.where(x < -threshold, x + threshold, 0.0))


def hard_shrink(x: Any, threshold: float = 0.5) -> jax.Array:
    """Keras's hard shrink: ``x`` where ``abs(x) > threshold``, else 0.

    Args:
      x: the input.
      threshold: the half-width of the band mapped to 0.
    """
    x = jnp.asarray(x)
    return jnp.where(jnp.abs(x) > threshold, x, 0.0)


def threshold(x: Any, threshold: float, default_value: float) -> jax.Array:
    """Keras's threshold: ``x`` where ``x > threshold``, else ``default_value``.

    Args:
      x: the input.
      threshold: the value ``x`` must exceed to be kept.
      default_value: the output where it does not.
    """
    x = jnp.asarray(x)
    return jnp.where(x > threshold, x, default_value)


def sparse_plus(x: Any) -> jax.Array:
    """Keras's sparse plus: 0 for ``x <= -1``, ``(x + 1)**2 / 4`` in between, ``x`` for ``x >= 1``.

    Args:
      x: the input.
    """
    return jax.nn.sparse_plus(jnp.asarray(x))


def silu(x: Any) -> jax.Array:
    """Keras's SiLU (swish): ``x * sigmoid(x)``.

    Args:
      x: the input.
    """
    return jax.nn.silu(jnp.asarray(x))


def squareplus(x: Any, b: float = 4) -> jax.Array:
    """Keras's squareplus: ``(x + sqrt(x**2 + b)) / 2``.

    Args:
      x: the input.
      b: the smoothness.
    """
    return jax.nn.squareplus(jnp.asarray(x), b=b)


def gelu(x: Any, approximate: bool = False) -> jax.Array:
    """Keras's Gaussian error linear unit, exact (erf) unless ``approximate`` (tanh).

    Args:
      x: the input.
      approximate: use the tanh approximation.
    """
    return jax.nn.gelu(jnp.asarray(x), approximate)


def glu(x: Any, axis: int = -1) -> jax.Array:
    """Keras's gated linear unit: ``a * sigmoid(b)`` of the two halves of ``x`` along ``axis``.

    Args:
      x: the input; ``axis`` has an even size.
      axis: the axis split in two.

    Returns:
      An array with ``axis`` halved.

    Raises:
      ActivationError: ``axis`` has an odd size.
    """
    x = jnp.asarray(x)
    if x.shape[axis] % 2:
        raise ActivationError(
            f"glu splits axis {axis} in two halves, but it has the odd size {x.shape[axis]} "
            f"(input shape {x.shape}); give an input whose axis {axis} has an even size."
        )
    return jax.nn.glu(x, axis=axis)


def tanh(x: Any) -> jax.Array:
    """Keras's hyperbolic tangent.

    Args:
      x: the input.
    """
    return jax.nn.tanh(jnp.asarray(x))


def tanh_shrink(x: Any) -> jax.Array:
    """Keras's tanh shrink: ``x - tanh(x)``.

    Args:
      x: the input.
    """
    x = jnp.asarray(x)
    return x - jnp.tanh(x)


def hard_tanh(x: Any) -> jax.Array:
    """Keras's hard tanh: ``x`` clipped to ``[-1, 1]``.

    Args:
      x: the input.
    """
    return jax.nn.hard_tanh(jnp.asarray(x))


def sigmoid(x: Any) -> jax.Array:
    """Keras's sigmoid: ``1 / (1 + exp(-x))``.

    Args:
      x: the logits.
    """
    return jax.nn.sigmoid(jnp.asarray(x))


def sparse_sigmoid(x: Any) -> jax.Array:
    """Keras's sparse sigmoid: 0 for ``x <= -1``, ``(x + 1) / 2`` in between, 1 for ``x >= 1``.

    Args:
      x: the input.
    """
    return jax.nn.sparse_sigmoid(jnp.asarray(x))


def exponential(x: Any) -> jax.Array:
    """Keras's exponential activation: ``exp(x)``.

    Args:
      x: the input.
    """
    return jnp.exp(jnp.asarray(x))


def hard_sigmoid(x: Any) -> jax.Array:
    """Keras 3's hard sigmoid: ``relu6(x + 3) / 6``.

    Args:
      x: the input.
    """
    return jax.nn.hard_sigmoid(jnp.asarray(x))


def log_sigmoid(x: Any) -> jax.Array:
    """Keras's log-sigmoid: ``-softplus(-x)``.

    Args:
      x: the input.
    """
    return jax.nn.log_sigmoid(jnp.asarray(x))


def hard_silu(x: Any) -> jax.Array:
    """Keras's hard SiLU (hard swish): ``x * relu6(x + 3) / 6``.

    Args:
      x: the input.
    """
    return jax.nn.hard_silu(jnp.asarray(x))


def linear(x: Any) -> Any:
    """Keras's linear activation: returns ``x`` unchanged.

    Args:
      x: the input.
    """
    return x


def mish(x: Any) -> jax.Array:
    """Keras's mish: ``x * tanh(softplus(x))``.

    Args:
      x: the input.
    """
    x = jnp.asarray(x)
    return x * jax.nn.tanh(jax.nn.softplus(x))


def sparsemax(x: Any, axis: int = -1) -> jax.Array:
    """Keras's sparsemax: the projection of ``x`` onto the simplex along ``axis`` (sparse softmax).

    Args:
      x: the logits.
      axis: the axis that sums to 1.
    """
    logits = jnp.asarray(x)  # Keras's JAX backend, step by step
    logits_sorted = -1.0 * jnp.sort(logits * -1.0, axis=axis)
    logits_cumsum = jnp.cumsum(logits_sorted, axis=axis)
    r_shape = [1] * logits.ndim
    r_shape[axis] = -1
    r = jnp.arange(1, logits.shape[axis] + 1).reshape(r_shape)
    support = logits_sorted - (logits_cumsum - 1) / r > 0
    k = jnp.sum(support, axis=axis, keepdims=True)
    logits_cumsum_safe = jnp.where(support, logits_cumsum, 0.0)
    tau = (jnp.sum(logits_cumsum_safe, axis=axis, keepdims=True) - 1) / k
    return jnp.maximum(logits - tau, 0.0)


# Keras's aliases: the same function objects under a second name.
swish = silu
hard_swish = hard_silu
