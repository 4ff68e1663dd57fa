"""Keras's pooling layers on flax.nnx: ``MaxPooling2D``, ``AveragePooling2D`` and the global poolings (1-D, 2-D).

Inputs are channels last (Keras's default): ``(batch, height, width, channels)``,
``(batch, steps, channels)`` for the 1-D global poolings; ``padding`` is ``"valid"``
(default) or ``"same"``. Average pooling with ``"same"`` padding averages only the
values inside the input, as Keras.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import nnx

from ._convolutional import (
    _CHANNELS_LAST_HINT,
    _IMAGE,
    _RESHAPE_HINT,
    _SEQUENCE,
    _data_format,
    check_data_format,
    check_padding,
    output_sizes,
    spatial_tuple,
)
from ._layer import Layer, Shape


class _Pooling2D(Layer):
    def __init__(
        self,
        pool_size: Any = (2, 2),
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        _data_format(data_format)
        layer = type(self).__name__
        self.pool_size = spatial_tuple(layer, pool_size, "pool_size", 2)
        self.strides = (
            self.pool_size if strides is None else spatial_tuple(layer, strides, "strides", 2)
        )
        self.padding = check_padding(layer, padding, ("valid", "same"))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        h, w = output_sizes(self, input_shape[:2], self.pool_size, self.strides, self.padding)
        return (h, w, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE, _RESHAPE_HINT)
        self.compute_output_shape(input_shape)


class MaxPooling2D(_Pooling2D):
    """Max pooling over NHWC images (``nnx.max_pool``).

    Args:
      pool_size: an int or a pair; default ``(2, 2)``.
      strides: an int or a pair; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Example:
      >>> MaxPooling2D().compute_output_shape((26, 26, 32))
      (13, 13, 32)
    """

    def call(self, x, *, training, rngs):
        return nnx.max_pool(x, self.pool_size, self.strides, self.padding.upper())


class AveragePooling2D(_Pooling2D):
    """Average pooling over NHWC images (``nnx.avg_pool``, padded values not counted).

    Args:
      pool_size: an int or a pair; default ``(2, 2)``.
      strides: an int or a pair; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Example:
      >>> AveragePooling2D(3, strides=1, padding="same").compute_output_shape((5, 5, 2))
      (5, 5, 2)
    """

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        return nnx.avg_pool(
            x, self.pool_size, self.strides, self.padding.upper(), count_include_pad=False
        )


class _GlobalPooling2D(Layer):
    """Reduces NHWC images over height and width with ``_reduce``: ``(batch, h, w, c)`` ->
    ``(batch, c)``; ``keepdims`` keeps the spatial axes with size 1, as Keras."""

    _reduce: Any = None  # jnp.mean or jnp.max

    def __init__(
        self,
        data_format: str | None = None,
        keepdims: bool = False,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        _data_format(data_format)
        self.keepdims = bool(keepdims)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE, _RESHAPE_HINT)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (1, 1, input_shape[-1]) if self.keepdims else (input_shape[-1],)

    def call(self, x, *, training, rngs):
        return type(self)._reduce(self._cast(x), axis=(1, 2), keepdims=self.keepdims)


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Averages NHWC images over height and width: ``(batch, h, w, c)`` -> ``(batch, c)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Example:
      >>> GlobalAveragePooling2D().compute_output_shape((7, 7, 64))
      (64,)
    """

    _reduce = jnp.mean


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over height and width: ``(batch, h, w, c)`` -> ``(batch, c)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Example:
      >>> GlobalMaxPooling2D().compute_output_shape((7, 7, 64))
      (64,)
    """

    _reduce = jnp.max


class _GlobalPooling1D(Layer):
    def __init__(
        self,
        data_format: str | None = None,
        keepdims: bool = False,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        check_data_format(data_format, _CHANNELS_LAST_HINT)
        self.keepdims = bool(keepdims)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (1, input_shape[-1]) if self.keepdims else (input_shape[-1],)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 2, _SEQUENCE)

    def call(self, x, *, training, rngs):
        return self._reduce(self._cast(x), axis=1, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Averages over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Example:
      >>> GlobalAveragePooling1D().compute_output_shape((10, 16))
      (16,)
    """

    _reduce = staticmethod(jnp.mean)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Example:
      >>> GlobalMaxPooling1D(keepdims=True).compute_output_shape((10, 16))
      (1, 16)
    """

    _reduce = staticmethod(jnp.max)
