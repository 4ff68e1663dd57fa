"""Keras's 1-D layers on flax.nnx: ``Conv1D``, ``GlobalAveragePooling1D``, ``GlobalMaxPooling1D``.

Inputs are ``(batch, steps, channels)`` (``channels_last``, Keras's default).
``Conv1D``'s kernel is ``(kernel_size, in_channels, filters)`` as Keras's, so
weights move between the two with ``set_weights``; ``padding`` is
``"valid"``, ``"same"`` or ``"causal"`` (left padding by ``dilation_rate *
(kernel_size - 1)``, as Keras).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import nnx

from . import _activations, _initializers, _regularizers
from ._layer import Layer, Shape

_SEQUENCE = "(batch, steps, channels)"


def _one(value: Any, what: str) -> int:
    if isinstance(value, int):
        return value
    values = tuple(int(v) for v in value)
    if len(values) != 1:
        raise ValueError(f"{what} must be an int or a tuple of one int, got {value!r}.")
    return values[0]


def _data_format(data_format: str | None) -> None:
    if data_format not in (None, "channels_last"):
        raise ValueError(
            f"data_format={data_format!r} is not supported: phalanx's 1-D layers use "
            "'channels_last' (batch, steps, channels). Transpose with jnp.swapaxes(x, 1, 2)."
        )


class Conv1D(Layer):
    """A 1-D convolution over ``(batch, steps, channels)``, on ``nnx.Conv``.

    Args:
      filters: the number of output channels.
      kernel_size: an int (or a tuple of one).
      strides: an int; default 1.
      padding: ``"valid"`` (default), ``"same"`` or ``"causal"``.
      data_format: ``"channels_last"`` or None (the only layout supported).
      dilation_rate: an int; default 1.
      groups: the number of feature groups.
      activation: an activation name or function; None is linear.
      use_bias: whether to add a bias.
      kernel_initializer: default ``glorot_uniform``.
      bias_initializer: default ``zeros``.
      kernel_regularizer: a penalty on the kernel (``"l2"``, ``L2(0.01)``, ...).
      bias_regularizer: a penalty on the bias.
      activity_regularizer: a penalty on the layer's output, divided by the batch size.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.
      dtype: the computation dtype; parameters are float32.

    Example:
      >>> layer = Conv1D(8, 3, activation="relu")
      >>> layer.build((10, 4))
      (8, 8)
      >>> layer.count_params()
      104
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
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
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
        if not isinstance(padding, str) or padding.lower() not in ("valid", "same", "causal"):
            raise ValueError(f"padding must be 'valid', 'same' or 'causal', got {padding!r}.")
        self.filters = int(filters)
        self.kernel_size = _one(kernel_size, "kernel_size")
        self.strides = _one(strides, "strides")
        self.padding = padding.lower()
        self.dilation_rate = _one(dilation_rate, "dilation_rate")
        self.groups = int(groups)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer
        self.kernel_regularizer = _regularizers.get(kernel_regularizer)
        self.bias_regularizer = _regularizers.get(bias_regularizer)
        self.activity_regularizer = _regularizers.get(activity_regularizer)
        self.conv = nnx.data(None)

    def _span(self) -> int:
        return self.dilation_rate * (self.kernel_size - 1) + 1

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        steps = input_shape[0]
        if steps is not None:
            if self.padding in ("same", "causal"):
                steps = -(-steps // self.strides)
            else:
                steps = (steps - self._span()) // self.strides + 1
        return (steps, self.filters)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 2, _SEQUENCE)
        self._require_known(input_shape, [-1], "channel axis")
        if input_shape[-1] % self.groups or self.filters % self.groups:
            raise self._error(
                f"has groups={self.groups}, which must divide both the input channels "
                f"({input_shape[-1]}) and filters ({self.filters})."
            )
        steps = self.compute_output_shape(input_shape)[0]
        if steps is not None and steps <= 0:
            raise self._error(
                f"with kernel_size {self.kernel_size} and padding '{self.padding}' cannot "
                f"take sequences of {input_shape[0]} steps. Use padding='same'."
            )

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        self.conv = nnx.Conv(
            input_shape[-1],
            self.filters,
            kernel_size=(self.kernel_size,),
            strides=(self.strides,),
            padding=padding,
            kernel_dilation=(self.dilation_rate,),
            feature_group_count=self.groups,
            use_bias=self.use_bias,
            kernel_init=_initializers.get(self.kernel_initializer),
            bias_init=_initializers.get(self.bias_initializer),
            dtype=self.dtype,
            rngs=rngs,
        )

    def pre_activation(self, x, *, training, rngs):
        x = self._cast(x)
        if self.padding == "causal":
            x = jnp.pad(x, ((0, 0), (self._span() - 1, 0), (0, 0)))
        return self.conv(x)


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
        _data_format(data_format)
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
