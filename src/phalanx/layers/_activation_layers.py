"""Keras 3's activation layers (``keras.layers.ReLU``, ``LeakyReLU``, ``ELU``, ``Softmax``, ``PReLU``) and
the two small reshaping layers ``RepeatVector`` and ``Permute``.

Arguments, defaults and numerics are Keras 3's: ``ReLU(max_value, negative_slope,
threshold)`` computes ``activations.relu``'s piecewise function; ``LeakyReLU``'s
slope defaults to 0.3 (the ``leaky_relu`` activation's to 0.2); ``Softmax``
takes a ``mask`` (masked positions get a large negative logit and output 0).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .. import activations, regularizers
from ..errors import LayerArgumentError
from . import _args, _initializers
from ._layer import Layer, Shape


def _finite(layer: str, what: str, value: Any, *, minimum: float | None = 0.0) -> float:
    number = _args._number(value)
    if number is None or not math.isfinite(number) or (minimum is not None and number < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise LayerArgumentError(
            f"{layer} {what} must be a finite number{bound}, got {value!r} "
            f"({type(value).__name__}); e.g. {layer}({what}=0.1)."
        )
    return number


class ReLU(Layer):
    """Keras's ``ReLU`` layer: ``max_value`` above it, ``x`` from ``threshold``, a slope below.

    Args:
      max_value: the largest output (None: unbounded); >= 0.
      negative_slope: the slope below ``threshold``; >= 0.
      threshold: where the function starts passing ``x``.

    Examples:
      >>> import jax.numpy as jnp
      >>> ReLU(max_value=2.0)(jnp.array([[-1.0, 1.0, 3.0]])).tolist()
      [[0.0, 1.0, 2.0]]
    """

    supports_masking = True

    def __init__(
        self,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        threshold: float = 0.0,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        self.max_value = None if max_value is None else _finite("ReLU", "max_value", max_value)
        self.negative_slope = _finite("ReLU", "negative_slope", negative_slope)
        self.threshold = _finite("ReLU", "threshold", threshold, minimum=None)

    def call(self, x, *, training, rngs):
        return activations.relu(
            self._cast(x),
            negative_slope=self.negative_slope,
            max_value=self.max_value,
            threshold=self.threshold,
        )


class LeakyReLU(Layer):
    """Keras's ``LeakyReLU``: ``x`` for ``x >= 0``, ``negative_slope * x`` below (default 0.3).

    Examples:
      >>> import jax.numpy as jnp
      >>> LeakyReLU(0.5)(jnp.array([[-2.0, 2.0]])).tolist()
      [[-1.0, 2.0]]
    """

    supports_masking = True

    def __init__(
        self,
        negative_slope: float = 0.3,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        self.negative_slope = _finite("LeakyReLU", "negative_slope", negative_slope)

    def call(self, x, *, training, rngs):
        return jax.nn.leaky_relu(self._cast(x), negative_slope=self.negative_slope)


class ELU(Layer):
    """Keras's ``ELU``: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below.

    Examples:
      >>> import jax.numpy as jnp
      >>> ELU()(jnp.array([[0.0, 1.0]])).tolist()
      [[0.0, 1.0]]
    """

    supports_masking = True

    def __init__(
        self,
        alpha: float = 1.0,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        self.alpha = _finite("ELU", "alpha", alpha, minimum=None)

    def call(self, x, *, training, rngs):
        return jax.nn.elu(self._cast(x), alpha=self.alpha)


class Softmax(Layer):
    """Keras's ``Softmax`` over ``axis`` (an int or a tuple), with an optional ``mask``.

    Call: ``layer(x, mask=None)``; where ``mask`` is False the logit is replaced
    by a large negative number and the output is 0, as Keras 3.

    Examples:
      >>> import jax.numpy as jnp
      >>> Softmax()(jnp.zeros((1, 2))).tolist()
      [[0.5, 0.5]]
    """

    supports_masking = True

    def __init__(
        self,
        axis: int | tuple[int, ...] = -1,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        axes = tuple(axis) if isinstance(axis, list | tuple) else axis
        if not all(isinstance(a, int) for a in (axes if isinstance(axes, tuple) else (axes,))):
            raise LayerArgumentError(
                f"Softmax axis must be an int or a tuple of ints, got {axis!r}."
            )
        self.axis = axes

    def call(self, x, *, training, rngs, mask=None):
        x = self._cast(x)
        if mask is not None:
            mask = jnp.asarray(mask)
            if mask.dtype != jnp.bool_:
                mask = mask > 0.5
            x = jnp.where(mask, x, _large_negative(x.dtype))
        out = jax.nn.softmax(x, axis=self.axis)
        return out if mask is None else jnp.where(mask, out, 0.0)


def _large_negative(dtype: Any) -> float:
    """Keras's ``_large_negative_number``: -1e9, or -3e4 for float16."""
    return -3e4 if jnp.dtype(dtype) == jnp.float16 else -1e9


class RepeatVector(Layer):
    """Keras's ``RepeatVector``: ``(batch, features)`` -> ``(batch, n, features)``.

    Examples:
      >>> RepeatVector(3).compute_output_shape((4,))
      (3, 4)
    """

    def __init__(self, n: int, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        self.n = _args.positive_int("RepeatVector", "n", n, "RepeatVector(3)")

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 1, "(batch, features)")

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (self.n, *input_shape)

    def call(self, x, *, training, rngs):
        return jnp.repeat(x[:, None, :], self.n, axis=1)


class Permute(Layer):
    """Keras's ``Permute``: reorders the non-batch axes; ``dims`` counts them from 1.

    Examples:
      >>> Permute((2, 1)).compute_output_shape((10, 64))
      (64, 10)
    """

    def __init__(self, dims: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise LayerArgumentError(
                f"Permute dims must be a permutation of 1..{len(dims)} (the non-batch axes, "
                f"counted from 1), got {dims}; e.g. Permute((2, 1))."
            )
        self.dims = dims

    def _check_input_shape(self, input_shape: Shape) -> None:
        if len(input_shape) != len(self.dims):
            raise self._error(
                f"permutes {len(self.dims)} axes (dims={self.dims}), received inputs with "
                f"{len(input_shape)} non-batch axes."
            )

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return tuple(input_shape[d - 1] for d in self.dims)

    def call(self, x, *, training, rngs):
        return jnp.transpose(x, (0, *self.dims))


class PReLU(Layer):
    """Keras's ``PReLU``: ``max(x, 0) - alpha * max(-x, 0)`` with a learned ``alpha``.

    ``alpha`` has the shape of one example, with size 1 on ``shared_axes``
    (axes counted with the batch axis as 0, as Keras).

    Args:
      alpha_initializer: default ``"zeros"``.
      alpha_regularizer: a penalty on ``alpha``.
      alpha_constraint: a projection of ``alpha`` after each optimizer update.
      shared_axes: an int or a list of the axes sharing one ``alpha`` (e.g. ``[1, 2]``
        for one per channel of an image).

    Examples:
      >>> import jax.numpy as jnp
      >>> PReLU()(jnp.array([[-1.0, 2.0]])).tolist()
      [[0.0, 2.0]]
    """

    supports_masking = True

    def __init__(
        self,
        alpha_initializer: Any = "zeros",
        alpha_regularizer: Any = None,
        alpha_constraint: Any = None,
        shared_axes: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        _args.keep_constraints(self, alpha_constraint=alpha_constraint)
        _initializers.get(alpha_initializer)
        self.alpha_initializer = alpha_initializer
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = tuple(shared_axes) if isinstance(shared_axes, list | tuple) else (shared_axes,)
            if not all(isinstance(a, int) and not isinstance(a, bool) and a >= 1 for a in axes):
                raise LayerArgumentError(
                    f"PReLU shared_axes must be ints >= 1 (axis 0 is the batch), got "
                    f"{shared_axes!r}; e.g. shared_axes=[1, 2]."
                )
            self.shared_axes = axes

    def _check_input_shape(self, input_shape) -> None:
        for axis in self.shared_axes or ():
            if axis > len(input_shape):
                raise self._error(
                    f"has shared_axes={list(self.shared_axes)}, but its inputs have rank "
                    f"{len(input_shape) + 1}."
                )

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            shape[axis - 1] = 1
        self._require_known(tuple(shape), range(len(shape)), "shape (alpha has one per entry)")
        self.alpha = self.add_weight(
            shape=tuple(shape),
            initializer=self.alpha_initializer,
            regularizer=self.alpha_regularizer,
            constraint=self.alpha_constraint,
            name="alpha",
        )

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        alpha = jnp.asarray(self.alpha, x.dtype)
        return jax.nn.relu(x) - alpha * jax.nn.relu(-x)
