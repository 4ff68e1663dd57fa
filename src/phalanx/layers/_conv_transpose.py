"""Keras's transposed convolutions: ``Conv1DTranspose`` and ``Conv2DTranspose``.

Keras 3's arithmetic on JAX: ``lax.conv_transpose`` with ``transpose_kernel=True``,
the kernel in Keras's layout ``(*kernel_size, filters, in_channels)``, and Keras's
padding rule (``compute_conv_transpose_padding_args_for_jax``): ``"valid"`` gives
``(size - 1) * stride + max(kernel, stride)`` (plus ``output_padding`` when
given), ``"same"`` gives ``size * stride``. Channels last.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from ..errors import LayerArgumentError
from . import _args as _layer_args
from ._args import keep_constraints, positive_int
from ._convolutional import (
    _CHANNELS_LAST_HINT,
    _IMAGE,
    _NDHWC_HINT,
    _NHWC_HINT,
    _SEQUENCE,
    _VOLUME,
    check_data_format,
    check_padding,
    spatial_tuple,
)
from ._layer import Layer, Shape


def transpose_pads(kernel: int, stride: int, dilation: int, padding: str, output_padding):
    """Keras's ``(left, right)`` padding of ``lax.conv_transpose`` for one spatial axis."""
    kernel = (kernel - 1) * dilation + 1
    if padding == "valid":
        extra = max(kernel, stride) - kernel if output_padding is None else output_padding
        return kernel - 1, kernel - 1 + extra
    if output_padding is None:
        total = stride + kernel - 2
    else:
        total = kernel + kernel % 2 - 2 + output_padding
    left = min(total // 2 + total % 2, kernel - 1)
    return left, total - left


class ConvTranspose(Layer):
    """A transposed convolution over ``(batch, *spatial, channels)`` (``rank`` spatial axes).

    Args:
      filters: the output channels.
      kernel_size: an int or ``rank`` ints.
      strides: an int or ``rank`` ints; default 1.
      padding: ``"valid"`` (default) or ``"same"``.
      output_padding: None, an int or ``rank`` ints (each < its stride).
      data_format: ``"channels_last"`` or None.
      dilation_rate: an int or ``rank`` ints; default 1.
      activation, use_bias, kernel_initializer, bias_initializer,
      kernel_regularizer, bias_regularizer, activity_regularizer: as ``Conv2D``.
      kernel_constraint, bias_constraint: projections of the weights after each
        optimizer update (``phalanx.constraints``), as Keras.
    """

    rank = 0
    _layout = ""
    _hint = ""
    _has_activation = True

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        layer = type(self).__name__
        keep_constraints(self, kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        check_data_format(data_format, self._hint)
        self.filters = positive_int(layer, "filters", filters, f"{layer}(16, 3)")
        self.kernel_size = spatial_tuple(layer, kernel_size, "kernel_size", self.rank)
        self.strides = spatial_tuple(layer, strides, "strides", self.rank)
        self.padding = check_padding(layer, padding, ("valid", "same"))
        self.dilation_rate = spatial_tuple(layer, dilation_rate, "dilation_rate", self.rank)
        if output_padding is None:
            self.output_padding = None
        else:
            pads = (
                (output_padding,) * self.rank if isinstance(output_padding, int) else output_padding
            )
            pads = tuple(pads)
            if len(pads) != self.rank or any(
                not isinstance(p, int) or p < 0 or p >= s
                for p, s in zip(pads, self.strides, strict=False)
            ):
                raise LayerArgumentError(
                    f"{layer} output_padding must be {self.rank} ints >= 0, each smaller than "
                    f"its stride {self.strides}; got {output_padding!r}."
                )
            self.output_padding = pads
        _layer_args.keep_kernel_arguments(
            self,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
        )

    def _pads(self) -> list[tuple[int, int]]:
        extra = self.output_padding or (None,) * self.rank
        return [
            transpose_pads(k, s, d, self.padding, e)
            for k, s, d, e in zip(
                self.kernel_size, self.strides, self.dilation_rate, extra, strict=True
            )
        ]

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        out = []
        for size, k, s, d, (left, right) in zip(
            input_shape[: self.rank],
            self.kernel_size,
            self.strides,
            self.dilation_rate,
            self._pads(),
            strict=True,
        ):
            dilated = (k - 1) * d + 1
            out.append(None if size is None else (size - 1) * s + 2 - dilated + left + right)
        return (*out, self.filters)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self.rank + 1, self._layout)
        self._require_known(input_shape, [-1], "channel axis")

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(*self.kernel_size, self.filters, input_shape[-1]),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
            name="kernel",
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.filters,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                name="bias",
            )

    def pre_activation(self, x, *, training, rngs):
        x = self._cast(x)
        spatial = "DHW"[3 - self.rank :]
        numbers = (f"N{spatial}C", f"{spatial}IO", f"N{spatial}C")
        y = lax.conv_transpose(
            x,
            jnp.asarray(self.kernel, x.dtype),
            self.strides,
            padding=self._pads(),
            rhs_dilation=self.dilation_rate,
            dimension_numbers=numbers,
            transpose_kernel=True,
        )
        if self.use_bias:
            y = y + jnp.asarray(self.bias, y.dtype)
        return y


class Conv1DTranspose(ConvTranspose):
    """A transposed 1-D convolution over ``(batch, steps, channels)`` (arguments on
    ``ConvTranspose``), Keras 3's output sizes and kernel layout ``(k, filters, in)``.

    Examples:
      >>> Conv1DTranspose(4, 3, strides=2).build((None, 5, 2))
      (11, 4)
    """

    rank = 1
    _layout = _SEQUENCE
    _hint = _CHANNELS_LAST_HINT


class Conv2DTranspose(ConvTranspose):
    """A transposed 2-D convolution over NHWC images (arguments on ``ConvTranspose``),
    Keras 3's output sizes and kernel layout ``(kh, kw, filters, in)``.

    Examples:
      >>> Conv2DTranspose(8, 3, strides=2, padding="same").build((None, 7, 7, 4))
      (14, 14, 8)
    """

    rank = 2
    _layout = _IMAGE
    _hint = _NHWC_HINT


class Conv3DTranspose(ConvTranspose):
    """A transposed 3-D convolution over NDHWC volumes (arguments on ``ConvTranspose``),
    Keras 3's output sizes and kernel layout ``(kd, kh, kw, filters, in)``.

    Examples:
      >>> Conv3DTranspose(4, 3, strides=2, padding="same").build((None, 3, 4, 5, 2))
      (6, 8, 10, 4)
    """

    rank = 3
    _layout = _VOLUME
    _hint = _NDHWC_HINT
