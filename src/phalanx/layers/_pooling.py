"""Keras's pooling layers on flax.nnx: max and average pooling over 1, 2 or 3 spatial axes,
and the global poolings, each family one mechanism parametrized by its rank.

Inputs are channels last (Keras's default): ``(batch, steps, channels)`` for the
1-D layers, ``(batch, height, width, channels)`` for the 2-D ones, ``(batch,
depth, height, width, channels)`` for the 3-D ones; ``padding`` is ``"valid"``
(default) or ``"same"``. Average pooling with ``"same"`` padding averages only
the values inside the input, as Keras. ``GlobalAveragePooling1D`` takes Keras's
``mask=`` (the mean of the unmasked steps).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import nnx

from ._convolutional import (
    _CHANNELS_LAST_HINT,
    _IMAGE,
    _NHWC_HINT,
    _RESHAPE_HINT,
    _SEQUENCE,
    check_data_format,
    check_padding,
    output_sizes,
    spatial_tuple,
)
from ._layer import Layer, Shape

_VOLUME = "(batch, depth, height, width, channels)"
_NDHWC_HINT = (
    "phalanx's 3-D layers use 'channels_last' (NDHWC). Transpose with "
    "jnp.transpose(x, (0, 2, 3, 4, 1))."
)
#: Per rank: the layout named in rank errors, the hint for a wrong rank, the data_format hint.
_LAYOUTS = {
    1: (_SEQUENCE, "", _CHANNELS_LAST_HINT),
    2: (_IMAGE, _RESHAPE_HINT, _NHWC_HINT),
    3: (_VOLUME, "", _NDHWC_HINT),
}


class _Pooling(Layer):
    """A window pooling over ``rank`` spatial axes (subclasses set ``rank`` and ``_pool``)."""

    rank = 0
    _default_pool: Any = 2

    def __init__(
        self,
        pool_size: Any = None,
        strides: Any = None,
        padding: str = "valid",
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        check_data_format(data_format, _LAYOUTS[self.rank][2])
        layer = type(self).__name__
        pool_size = self._default_pool if pool_size is None else pool_size
        self.pool_size = spatial_tuple(layer, pool_size, "pool_size", self.rank)
        self.strides = (
            self.pool_size
            if strides is None
            else spatial_tuple(layer, strides, "strides", self.rank)
        )
        self.padding = check_padding(layer, padding, ("valid", "same"))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = output_sizes(
            self, input_shape[: self.rank], self.pool_size, self.strides, self.padding
        )
        return (*spatial, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        layout, hint, _ = _LAYOUTS[self.rank]
        self._require_rank(input_shape, self.rank + 1, layout, hint)
        self.compute_output_shape(input_shape)


class _MaxPooling(_Pooling):
    def call(self, x, *, training, rngs):
        return nnx.max_pool(x, self.pool_size, self.strides, self.padding.upper())


class _AveragePooling(_Pooling):
    def call(self, x, *, training, rngs):
        x = self._cast(x)
        return nnx.avg_pool(
            x, self.pool_size, self.strides, self.padding.upper(), count_include_pad=False
        )


class MaxPooling1D(_MaxPooling):
    """Max pooling over the steps of ``(batch, steps, channels)`` (``nnx.max_pool``).

    Args:
      pool_size: an int (or a tuple of one); default 2.
      strides: an int; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Examples:
      >>> MaxPooling1D().compute_output_shape((10, 4))
      (5, 4)
    """

    rank = 1


class AveragePooling1D(_AveragePooling):
    """Average pooling over the steps of ``(batch, steps, channels)`` (padding not counted).

    Args:
      pool_size: an int (or a tuple of one); default 2.
      strides: an int; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Examples:
      >>> AveragePooling1D(3, strides=1, padding="same").compute_output_shape((10, 4))
      (10, 4)
    """

    rank = 1


class MaxPooling2D(_MaxPooling):
    """Max pooling over NHWC images (``nnx.max_pool``).

    Args:
      pool_size: an int or a pair; default ``(2, 2)``.
      strides: an int or a pair; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> MaxPooling2D().compute_output_shape((26, 26, 32))
      (13, 13, 32)
    """

    rank = 2


class AveragePooling2D(_AveragePooling):
    """Average pooling over NHWC images (``nnx.avg_pool``, padded values not counted).

    Args:
      pool_size: an int or a pair; default ``(2, 2)``.
      strides: an int or a pair; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> AveragePooling2D(3, strides=1, padding="same").compute_output_shape((5, 5, 2))
      (5, 5, 2)
    """

    rank = 2


class MaxPooling3D(_MaxPooling):
    """Max pooling over NDHWC volumes.

    Args:
      pool_size: an int or three; default ``(2, 2, 2)``.
      strides: an int or three; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(depth, height, width, channels)``.

    Examples:
      >>> MaxPooling3D().compute_output_shape((4, 4, 4, 2))
      (2, 2, 2, 2)
    """

    rank = 3


class AveragePooling3D(_AveragePooling):
    """Average pooling over NDHWC volumes (padded values not counted).

    Args:
      pool_size: an int or three; default ``(2, 2, 2)``.
      strides: an int or three; default ``pool_size``.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(depth, height, width, channels)``.

    Examples:
      >>> AveragePooling3D().compute_output_shape((4, 4, 4, 2))
      (2, 2, 2, 2)
    """

    rank = 3


class _GlobalPooling(Layer):
    """Reduces ``(batch, *spatial, channels)`` over its ``rank`` spatial axes with ``_reduce``
    to ``(batch, channels)``; ``keepdims`` keeps the spatial axes with size 1, as Keras."""

    rank = 0
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
        check_data_format(data_format, _LAYOUTS[self.rank][2])
        self.keepdims = bool(keepdims)

    def _check_input_shape(self, input_shape: Shape) -> None:
        layout, hint, _ = _LAYOUTS[self.rank]
        self._require_rank(input_shape, self.rank + 1, layout, hint)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*(1,) * self.rank, input_shape[-1]) if self.keepdims else (input_shape[-1],)

    def _axes(self) -> tuple[int, ...]:
        return tuple(range(1, self.rank + 1))

    def call(self, x, *, training, rngs):
        return type(self)._reduce(self._cast(x), axis=self._axes(), keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling):
    """Averages over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    With ``mask=`` (``(batch, steps)``, from ``Embedding(mask_zero=True)`` or
    ``Masking``), the mean of the unmasked steps, as Keras; the mask stops here.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Examples:
      >>> GlobalAveragePooling1D().compute_output_shape((10, 16))
      (16,)
    """

    rank = 1
    supports_masking = True
    _reduce = staticmethod(jnp.mean)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """None: the steps are gone."""
        return None

    def call(self, x, *, training, rngs, mask=None):
        x = self._cast(x)
        if mask is None:
            return jnp.mean(x, axis=1, keepdims=self.keepdims)
        weights = jnp.asarray(mask, x.dtype)[..., None]
        total = jnp.sum(x * weights, axis=1, keepdims=self.keepdims)
        return total / jnp.sum(weights, axis=1, keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Examples:
      >>> GlobalMaxPooling1D(keepdims=True).compute_output_shape((10, 16))
      (1, 16)
    """

    rank = 1
    _reduce = staticmethod(jnp.max)


class GlobalAveragePooling2D(_GlobalPooling):
    """Averages NHWC images over height and width: ``(batch, h, w, c)`` -> ``(batch, c)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> GlobalAveragePooling2D().compute_output_shape((7, 7, 64))
      (64,)
    """

    rank = 2
    _reduce = staticmethod(jnp.mean)


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over height and width: ``(batch, h, w, c)`` -> ``(batch, c)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> GlobalMaxPooling2D().compute_output_shape((7, 7, 64))
      (64,)
    """

    rank = 2
    _reduce = staticmethod(jnp.max)


class GlobalAveragePooling3D(_GlobalPooling):
    """Averages NDHWC volumes over their three spatial axes: -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.

    Examples:
      >>> GlobalAveragePooling3D().compute_output_shape((4, 4, 4, 8))
      (8,)
    """

    rank = 3
    _reduce = staticmethod(jnp.mean)


class GlobalMaxPooling3D(_GlobalPooling):
    """The maximum over the three spatial axes of NDHWC volumes: -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the spatial axes with size 1, as Keras.
      name: the layer's name.

    Examples:
      >>> GlobalMaxPooling3D(keepdims=True).compute_output_shape((4, 4, 4, 8))
      (1, 1, 1, 8)
    """

    rank = 3
    _reduce = staticmethod(jnp.max)
