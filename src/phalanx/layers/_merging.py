"""Keras's merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``,
``Minimum``, ``Concatenate``. Each takes a list of batches (``Add()([a, b])``).

Element-wise layers need inputs of one shape, or shapes that broadcast (Keras
allows that too); ``Concatenate(axis=-1)`` joins along an axis whose other
sizes agree. They have no weights.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from ._layer import Layer, Shape, format_shape, normalize_shape, shapes_match


class _Merge(Layer):
    """Shared logic of the layers that take a list of inputs."""

    _min_inputs = 2

    def __init__(self, *, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def _normalize_input_shape(self, input_shape: Any) -> list[Shape]:
        if not isinstance(input_shape, list | tuple) or not all(
            isinstance(s, list | tuple) for s in input_shape
        ):
            raise self._error(
                f"takes a list of inputs (layers.{type(self).__name__}()([a, b])), got "
                f"one input of shape {input_shape}."
            )
        return [normalize_shape(s) for s in input_shape]

    def _input_shape_of(self, x: Any) -> Any:
        if not isinstance(x, list | tuple):
            raise self._error(
                f"takes a list of inputs (layers.{type(self).__name__}()([a, b])), got a "
                f"single {type(x).__name__}."
            )
        return [tuple(a.shape[1:]) for a in x]

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        if len(input_shape) < self._min_inputs:
            raise self._error(f"needs at least {self._min_inputs} inputs, got {len(input_shape)}.")

    def check_input(self, x: Any) -> None:
        shapes = self._input_shape_of(x)
        if len(shapes) != len(self.built_input_shape) or not all(
            shapes_match(e, r) for e, r in zip(self.built_input_shape, shapes, strict=True)
        ):
            raise self._error(
                f"was built for inputs of shapes {self.built_input_shape}, received {shapes}."
            )

    def call(self, x, *, training, rngs):
        return self._merge([self._cast(a) for a in x])


class _ElementWise(_Merge):
    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        super()._check_input_shape(input_shape)
        self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        rank = max(len(s) for s in input_shape)
        out = []
        for axis in range(rank):
            sizes = {s[axis - rank + len(s)] for s in input_shape if axis - rank + len(s) >= 0}
            known = {d for d in sizes if d not in (None, 1)}
            if len(known) > 1:
                raise self._error(
                    "cannot combine inputs of shapes "
                    f"{[format_shape(s) for s in input_shape]}: they must have one shape "
                    "(or shapes that broadcast)."
                )
            out.append(known.pop() if known else (None if None in sizes else 1))
        return tuple(out)

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return functools.reduce(self._op, xs)


class Add(_ElementWise):
    """Adds a list of inputs element-wise: ``Add()([a, b]) == a + b``.

    Examples:
      >>> import jax.numpy as jnp
      >>> Add()([jnp.ones((1, 2)), jnp.ones((1, 2))]).tolist()
      [[2.0, 2.0]]
    """

    _op = staticmethod(jnp.add)


class Multiply(_ElementWise):
    """Multiplies a list of inputs element-wise.

    Examples:
      >>> import jax.numpy as jnp
      >>> Multiply()([jnp.full((1, 2), 2.0), jnp.full((1, 2), 3.0)]).tolist()
      [[6.0, 6.0]]
    """

    _op = staticmethod(jnp.multiply)


class Maximum(_ElementWise):
    """The element-wise maximum of a list of inputs."""

    _op = staticmethod(jnp.maximum)


class Minimum(_ElementWise):
    """The element-wise minimum of a list of inputs."""

    _op = staticmethod(jnp.minimum)


class Subtract(_ElementWise):
    """Subtracts the second of two inputs from the first: ``Subtract()([a, b]) == a - b``."""

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        if len(input_shape) != 2:
            raise self._error(f"takes exactly 2 inputs, got {len(input_shape)}.")
        super()._check_input_shape(input_shape)

    _op = staticmethod(jnp.subtract)


class Average(_ElementWise):
    """The element-wise mean of a list of inputs."""

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return functools.reduce(jnp.add, xs) / len(xs)


class Concatenate(_Merge):
    """Joins a list of inputs along ``axis`` (default the last), as Keras.

    Args:
      axis: the axis to join along, counting the batch axis (``-1``: features).
      name: the layer's name.

    Examples:
      >>> import jax.numpy as jnp
      >>> Concatenate()([jnp.ones((1, 2)), jnp.zeros((1, 3))]).shape
      (1, 5)
    """

    def __init__(self, axis: int = -1, *, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.axis = int(axis)

    def _example_axis(self, rank: int) -> int:
        """``axis`` counted in a per-example shape of ``rank`` axes (no batch axis)."""
        axis = self.axis if self.axis < 0 else self.axis - 1
        if not -rank <= axis < rank or self.axis == 0:
            raise self._error(
                f"cannot join along axis {self.axis}: inputs have {rank + 1} axes (batch "
                "included), and the batch axis 0 cannot be joined."
            )
        return axis % rank

    def compute_output_shape(self, input_shape: list[Shape]) -> Shape:
        ranks = {len(s) for s in input_shape}
        if len(ranks) != 1:
            raise self._error(f"needs inputs of one rank, got shapes {input_shape}.")
        rank = ranks.pop()
        axis = self._example_axis(rank)
        out = list(input_shape[0])
        for s in input_shape[1:]:
            for i in range(rank):
                if i == axis:
                    continue
                if None not in (out[i], s[i]) and out[i] != s[i]:
                    raise self._error(
                        f"needs inputs whose sizes agree except on axis {self.axis}, got "
                        f"shapes {[format_shape(t) for t in input_shape]}."
                    )
                out[i] = out[i] if out[i] is not None else s[i]
        sizes = [s[axis] for s in input_shape]
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def _check_input_shape(self, input_shape: list[Shape]) -> None:
        super()._check_input_shape(input_shape)
        self.compute_output_shape(input_shape)

    def _merge(self, xs: list[jax.Array]) -> jax.Array:
        return jnp.concatenate(xs, axis=self.axis)
