"""Keras's depthwise and separable convolutions: ``DepthwiseConv1D/2D``, ``SeparableConv1D/2D``.

Keras 3's arithmetic on JAX: a depthwise kernel ``(*kernel_size, in_channels,
depth_multiplier)`` run as a convolution with one feature group per input
channel (reshaped to ``(*kernel_size, 1, in_channels * depth_multiplier)``); a
separable convolution is that depthwise step (with the strides and dilation)
followed by a 1x1 pointwise kernel ``(1, ..., in * depth_multiplier, filters)``
and the bias. Channels last; ``padding`` ``"valid"`` or ``"same"``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from .. import activations, regularizers
from ..errors import LayerArgumentError
from . import _initializers
from ._args import keep_constraints, positive_int
from ._convolutional import (
    _CHANNELS_LAST_HINT,
    _IMAGE,
    _NHWC_HINT,
    _SEQUENCE,
    check_data_format,
    check_padding,
    output_sizes,
    spatial_tuple,
)
from ._layer import Layer, Shape


def _numbers(rank: int) -> tuple[str, str, str]:
    spatial = "DHW"[3 - rank :]
    return (f"N{spatial}C", f"{spatial}IO", f"N{spatial}C")


def depthwise(x, kernel, strides, padding: str, dilation) -> Any:
    """Keras's ``depthwise_conv``: one group per input channel."""
    channels = x.shape[-1]
    kernel = jnp.reshape(kernel, (*kernel.shape[:-2], 1, channels * kernel.shape[-1]))
    return lax.conv_general_dilated(
        x,
        kernel.astype(x.dtype),
        strides,
        padding.upper(),
        rhs_dilation=dilation,
        dimension_numbers=_numbers(x.ndim - 2),
        feature_group_count=channels,
    )


class _DepthwiseBase(Layer):
    """The arguments both depthwise and separable layers take, checked once."""

    rank = 0
    _layout = ""
    _hint = ""
    _has_activation = True

    def _keep_spatial(self, kernel_size, strides, padding, data_format, dilation_rate, multiplier):
        layer = type(self).__name__
        check_data_format(data_format, self._hint)
        self.kernel_size = spatial_tuple(layer, kernel_size, "kernel_size", self.rank)
        self.strides = spatial_tuple(layer, strides, "strides", self.rank)
        self.padding = check_padding(layer, padding, ("valid", "same"))
        self.dilation_rate = spatial_tuple(layer, dilation_rate, "dilation_rate", self.rank)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise LayerArgumentError(
                f"{layer}: `strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}."
            )
        self.depth_multiplier = positive_int(
            layer, "depth_multiplier", multiplier, f"{layer}(3, depth_multiplier=2)"
        )

    def _keep(self, what: str, initializer: Any, regularizer: Any) -> None:
        _initializers.get(initializer)
        setattr(self, f"{what}_initializer", initializer)
        setattr(self, f"{what}_regularizer", regularizers.get(regularizer))

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self.rank + 1, self._layout)
        self._require_known(input_shape, [-1], "channel axis")
        self.compute_output_shape(input_shape)

    def _spatial(self, input_shape: Shape) -> tuple:
        return output_sizes(
            self,
            input_shape[: self.rank],
            self.kernel_size,
            self.strides,
            self.padding,
            self.dilation_rate,
        )

    def _depthwise_weight(self, channels: int) -> None:
        self.depthwise_kernel = self.add_weight(
            shape=(*self.kernel_size, channels, self.depth_multiplier),
            initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint,
            name="depthwise_kernel",
        )

    def _bias_weight(self, size: int) -> None:
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(size,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                name="bias",
            )

    def _depthwise(self, x):
        return depthwise(x, self.depthwise_kernel, self.strides, self.padding, self.dilation_rate)


class DepthwiseConv(_DepthwiseBase):
    """A depthwise convolution: each input channel convolved with its own
    ``depth_multiplier`` filters (``rank`` spatial axes; Keras 3's arguments).

    Args:
      kernel_size: an int or ``rank`` ints.
      strides: default 1.
      padding: ``"valid"`` (default) or ``"same"``.
      depth_multiplier: the filters per input channel; default 1.
      data_format: ``"channels_last"`` or None.
      dilation_rate: default 1.
      activation: an activation; default None.
      use_bias: default True.
      depthwise_initializer: default ``glorot_uniform``.
      bias_initializer: default ``zeros``.
      depthwise_regularizer, bias_regularizer, activity_regularizer: penalties.
      depthwise_constraint, bias_constraint: projections of the weights after each
        optimizer update (``phalanx.constraints``), as Keras.
    """

    def __init__(
        self,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        depth_multiplier: int = 1,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        bias_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        keep_constraints(
            self,
            depthwise_constraint=depthwise_constraint,
            bias_constraint=bias_constraint,
        )
        self._keep_spatial(
            kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier
        )
        activations.get(activation)
        self.activation, self.use_bias = activation, bool(use_bias)
        self._keep("depthwise", depthwise_initializer, depthwise_regularizer)
        self._keep("bias", bias_initializer, bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        channels = input_shape[-1]
        return (*self._spatial(input_shape), channels * self.depth_multiplier)

    def build(self, input_shape):
        self._depthwise_weight(input_shape[-1])
        self._bias_weight(input_shape[-1] * self.depth_multiplier)

    def pre_activation(self, x, *, training, rngs):
        y = self._depthwise(self._cast(x))
        return y + jnp.asarray(self.bias, y.dtype) if self.use_bias else y


class SeparableConv(_DepthwiseBase):
    """A depthwise convolution followed by a 1x1 pointwise one (Keras 3's arguments).

    Args:
      filters: the output channels.
      kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier:
        as ``DepthwiseConv``.
      activation, use_bias: as ``Conv2D``.
      depthwise_initializer, pointwise_initializer: default ``glorot_uniform``.
      bias_initializer: default ``zeros``.
      depthwise_regularizer, pointwise_regularizer, bias_regularizer,
      activity_regularizer: penalties.
      depthwise_constraint, pointwise_constraint, bias_constraint: projections of the
        weights after each optimizer update (``phalanx.constraints``), as Keras.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        depth_multiplier: int = 1,
        activation: Any = None,
        use_bias: bool = True,
        depthwise_initializer: Any = "glorot_uniform",
        pointwise_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        depthwise_regularizer: Any = None,
        pointwise_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        depthwise_constraint: Any = None,
        pointwise_constraint: Any = None,
        bias_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        layer = type(self).__name__
        keep_constraints(
            self,
            depthwise_constraint=depthwise_constraint,
            pointwise_constraint=pointwise_constraint,
            bias_constraint=bias_constraint,
        )
        self.filters = positive_int(layer, "filters", filters, f"{layer}(16, 3)")
        self._keep_spatial(
            kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier
        )
        activations.get(activation)
        self.activation, self.use_bias = activation, bool(use_bias)
        self._keep("depthwise", depthwise_initializer, depthwise_regularizer)
        self._keep("pointwise", pointwise_initializer, pointwise_regularizer)
        self._keep("bias", bias_initializer, bias_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*self._spatial(input_shape), self.filters)

    def build(self, input_shape):
        channels = input_shape[-1]
        self._depthwise_weight(channels)
        self.pointwise_kernel = self.add_weight(
            shape=(*(1,) * self.rank, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint,
            name="pointwise_kernel",
        )
        self._bias_weight(self.filters)

    def pre_activation(self, x, *, training, rngs):
        y = self._depthwise(self._cast(x))
        y = lax.conv_general_dilated(
            y,
            jnp.asarray(self.pointwise_kernel, y.dtype),
            (1,) * self.rank,
            "VALID",
            rhs_dilation=self.dilation_rate,
            dimension_numbers=_numbers(self.rank),
        )
        return y + jnp.asarray(self.bias, y.dtype) if self.use_bias else y


class DepthwiseConv1D(DepthwiseConv):
    """A depthwise 1-D convolution over ``(batch, steps, channels)`` (arguments on ``DepthwiseConv``).

    Examples:
      >>> DepthwiseConv1D(3, depth_multiplier=2).build((None, 10, 4))
      (8, 8)
    """

    rank = 1
    _layout = _SEQUENCE
    _hint = _CHANNELS_LAST_HINT


class DepthwiseConv2D(DepthwiseConv):
    """A depthwise 2-D convolution over NHWC images (arguments on ``DepthwiseConv``).

    Examples:
      >>> DepthwiseConv2D(3, padding="same").build((None, 8, 8, 4))
      (8, 8, 4)
    """

    rank = 2
    _layout = _IMAGE
    _hint = _NHWC_HINT


class SeparableConv1D(SeparableConv):
    """A separable 1-D convolution over ``(batch, steps, channels)`` (arguments on ``SeparableConv``).

    Examples:
      >>> SeparableConv1D(6, 3).build((None, 10, 4))
      (8, 6)
    """

    rank = 1
    _layout = _SEQUENCE
    _hint = _CHANNELS_LAST_HINT


class SeparableConv2D(SeparableConv):
    """A separable 2-D convolution over NHWC images (arguments on ``SeparableConv``).

    Examples:
      >>> SeparableConv2D(16, 3, strides=2, padding="same").build((None, 8, 8, 4))
      (4, 4, 16)
    """

    rank = 2
    _layout = _IMAGE
    _hint = _NHWC_HINT
