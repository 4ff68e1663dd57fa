"""Keras's 2-D convolution and pooling layers on flax.nnx, in Keras's NHWC layout.

Inputs are ``(batch, height, width, channels)`` (``channels_last``, Keras's
default); ``padding`` is ``"valid"`` (default) or ``"same"``. Average pooling
with ``"same"`` padding averages only the values inside the input, as Keras.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import nnx

from . import _activations, _initializers, _regularizers
from ._layer import Layer, Shape

_IMAGE = "(batch, height, width, channels)"
_RESHAPE_HINT = (
    "Images must be (height, width, channels) per example: reshape flat inputs "
    "first, e.g. layers.Reshape((28, 28, 1))."
)


def _pair(value: Any, what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}.")
    return pair


def _padding(padding: str) -> str:
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}.")
    return padding.lower()


def _data_format(data_format: str | None) -> None:
    if data_format not in (None, "channels_last"):
        raise ValueError(
            f"data_format={data_format!r} is not supported: phalanx layers use "
            "'channels_last' (NHWC). Transpose inputs with jnp.transpose(x, (0, 2, 3, 1))."
        )


def _output_size(size: int | None, window: int, stride: int, padding: str, dilation=1):
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    return (size - dilation * (window - 1) - 1) // stride + 1


class _Spatial2D(Layer):
    """Shared shape logic of the 2-D layers: rank check and output sizes."""

    def _spatial_output(self, input_shape: Shape, window, strides, padding, dilation=(1, 1)):
        out = tuple(
            _output_size(input_shape[i], window[i], strides[i], padding, dilation[i])
            for i in range(2)
        )
        if any(o is not None and o <= 0 for o in out):
            raise self._error(
                f"with window {window}, strides {strides} and padding '{padding}' "
                f"cannot take inputs of spatial size {input_shape[:2]}: the output would be "
                f"empty. Use padding='same' or a smaller window."
            )
        return out

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE, _RESHAPE_HINT)


class Conv2D(_Spatial2D):
    """A 2-D convolution over NHWC images, ``activation(conv(x, kernel) + bias)``, on ``nnx.Conv``.

    Args:
      filters: the number of output channels.
      kernel_size: an int or a pair ``(height, width)``.
      strides: an int or a pair; default 1.
      padding: ``"valid"`` (default) or ``"same"``.
      data_format: ``"channels_last"`` or None (the only layout supported).
      dilation_rate: an int or a pair; default 1.
      groups: the number of feature groups (``filters`` and input channels must
        divide by it).
      activation: an activation name or function; None is linear.
      use_bias: whether to add a bias.
      kernel_initializer: default ``glorot_uniform``.
      bias_initializer: default ``zeros``.
      kernel_regularizer: a penalty on the kernel (``"l2"``, ``L2(0.01)``, ...).
      bias_regularizer: a penalty on the bias.
      activity_regularizer: a penalty on the layer's output, divided by the batch size.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.
      dtype: the computation dtype; parameters are float32.

    Example:
      >>> layer = Conv2D(32, 3, activation="relu")
      >>> layer.build((28, 28, 1))
      (26, 26, 32)
      >>> layer.count_params()
      320
    """

    _has_activation = True
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("conv", "kernel")),
        ("bias_regularizer", ("conv", "bias")),
    )

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        groups: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        _data_format(data_format)
        _activations.get(activation)
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.padding = _padding(padding)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        self.groups = int(groups)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = _regularizers.get(kernel_regularizer)
        self.bias_regularizer = _regularizers.get(bias_regularizer)
        self.activity_regularizer = _regularizers.get(activity_regularizer)
        self.conv = nnx.data(None)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        h, w = self._spatial_output(
            input_shape, self.kernel_size, self.strides, self.padding, self.dilation_rate
        )
        return (h, w, self.filters)

    def _check_input_shape(self, input_shape: Shape) -> None:
        super()._check_input_shape(input_shape)
        self._require_known(input_shape, [-1], "channel axis")
        channels = input_shape[-1]
        if channels % self.groups or self.filters % self.groups:
            raise self._error(
                f"has groups={self.groups}, which must divide both the input channels "
                f"({channels}) and filters ({self.filters})."
            )
        self.compute_output_shape(input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        self.conv = nnx.Conv(
            input_shape[-1],
            self.filters,
            kernel_size=self.kernel_size,
            strides=self.strides,
            padding=self.padding.upper(),
            kernel_dilation=self.dilation_rate,
            feature_group_count=self.groups,
            use_bias=self.use_bias,
            kernel_init=_initializers.get(self.kernel_initializer),
            bias_init=_initializers.get(self.bias_initializer),
            dtype=self.dtype,
            rngs=rngs,
        )

    def pre_activation(self, x, *, training, rngs):
        return self.conv(self._cast(x))


class _Pooling2D(_Spatial2D):
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
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = self.pool_size if strides is None else _pair(strides, "strides")
        self.padding = _padding(padding)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        h, w = self._spatial_output(input_shape, self.pool_size, self.strides, self.padding)
        return (h, w, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        super()._check_input_shape(input_shape)
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
