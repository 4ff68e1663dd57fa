"""Keras's ``ZeroPadding2D`` and ``ZeroPadding1D``, channels last (``GlobalMaxPooling2D`` is
in ``_conv_layers`` beside ``GlobalAveragePooling2D``).

``ZeroPadding2D(padding)`` takes Keras's three forms: an int (all sides), a
pair ``(rows, cols)`` (symmetric), or ``((top, bottom), (left, right))``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._layer import Layer, Shape
from ._pooling import _IMAGE, _data_format


def _pads(padding: Any, axes: int) -> tuple[tuple[int, int], ...]:
    """Keras's padding argument as ``((before, after),) * axes``."""
    error = ValueError(
        f"padding must be an int, a tuple of {axes} ints, or a tuple of {axes} pairs "
        f"(before, after); got {padding!r}."
    )
    if isinstance(padding, int):
        return ((padding, padding),) * axes
    try:
        items = tuple(padding)
    except TypeError:
        raise error from None
    if axes == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
        return ((int(items[0]), int(items[1])),)
    if len(items) != axes:
        raise error
    out = []
    for item in items:
        if isinstance(item, int):
            out.append((item, item))
        elif len(tuple(item)) == 2:
            out.append(tuple(int(v) for v in item))
        else:
            raise error
    if any(v < 0 for pair in out for v in pair):
        raise error
    return tuple(out)


class _ZeroPadding(Layer):
    _axes = 2
    _layout = _IMAGE

    def __init__(
        self,
        padding: Any = 1,
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        _data_format(data_format)
        self.padding = _pads(padding, self._axes)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = tuple(
            None if d is None else d + a + b
            for d, (a, b) in zip(input_shape[: self._axes], self.padding, strict=True)
        )
        return (*spatial, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self._axes + 1, self._layout)

    def call(self, x, *, training, rngs):
        return jnp.pad(x, ((0, 0), *self.padding, (0, 0)))


class ZeroPadding2D(_ZeroPadding):
    """Pads NHWC images with zero rows and columns.

    Args:
      padding: an int, ``(rows, cols)``, or ``((top, bottom), (left, right))``;
        default 1.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Example:
      >>> ZeroPadding2D(((1, 2), (3, 4))).compute_output_shape((5, 5, 3))
      (8, 12, 3)
    """

    def __init__(
        self,
        padding: Any = (1, 1),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(padding, data_format, name=name, input_shape=input_shape)


class ZeroPadding1D(_ZeroPadding):
    """Pads ``(batch, steps, channels)`` sequences with zero steps.

    Args:
      padding: an int, or ``(before, after)``; default 1.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Example:
      >>> ZeroPadding1D((2, 1)).compute_output_shape((5, 3))
      (8, 3)
    """

    _axes = 1
    _layout = "(batch, steps, channels)"

    def __init__(self, padding: Any = 1, *, name: str | None = None, input_shape: Any = None):
        super().__init__(padding, None, name=name, input_shape=input_shape)
