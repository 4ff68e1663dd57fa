"""Keras 3's convolutional LSTMs: ``ConvLSTM1D``, ``ConvLSTM2D``, ``ConvLSTM3D``.

An ``LSTM`` whose input and recurrent transformations are convolutions
(``keras/src/layers/rnn/conv_lstm.py``): each step takes ``(batch, *spatial,
channels)`` and carries ``[h, c]`` of shape ``(batch, *out_spatial, filters)``.
The input convolution has the layer's ``strides``, ``padding`` and
``dilation_rate``; the recurrent one strides 1 and ``"same"`` padding. The loop
is `RNN`'s (one ``lax.scan``), so masks, ``go_backwards``, ``stateful``,
initial states and ``Bidirectional`` work as for `LSTM`. Weights are Keras's
(``conv_lstm_cell/kernel`` ``(*kernel_size, channels, 4 * filters)``,
``recurrent_kernel`` ``(*kernel_size, filters, 4 * filters)``, ``bias``; gates
``i, f, c, o``), and dropout masks are drawn once per call, one per gate, as
Keras's ``dropout_mask_count = 4``. Inputs are channels last (Keras's default).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .. import activations
from ..errors import LayerArgumentError
from . import _initializers
from ._args import positive_int
from ._convolutional import _convolution, check_data_format, check_padding, output_sizes
from ._convolutional import spatial_tuple as _spatial_tuple
from ._layer import Shape
from ._recurrent import _CellLayer, _split_args
from ._recurrent_cells import LSTMCell

_LAYOUTS = {
    1: "(batch, timesteps, steps, channels)",
    2: "(batch, timesteps, rows, cols, channels)",
    3: "(batch, timesteps, depth, rows, cols, channels)",
}
_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


class ConvLSTMCell(LSTMCell):
    """Keras's ``ConvLSTMCell``: one step of a convolutional LSTM (gates ``i, f, c, o``).

    Keras 3 does not export it (``ConvLSTM2D`` makes it); phalanx neither: the
    layers are the API. ``rank`` is the number of spatial axes; the other
    arguments are the layers'.
    """

    def __init__(
        self,
        rank: int,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        unit_forget_bias: bool = True,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        if rank not in (1, 2, 3):
            raise LayerArgumentError(f"ConvLSTM rank must be 1, 2 or 3, got {rank!r}.")
        owner = f"ConvLSTM{rank}D"
        check_data_format(
            data_format,
            f"{owner} takes channels-last sequences {_LAYOUTS[rank]}; transpose "
            "channels-first ones with jnp.moveaxis(x, 2, -1).",
        )
        filters = positive_int(owner, "filters", filters, f"{owner}(32, 3)")
        super().__init__(
            filters,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            name=name,
            dtype=dtype,
        )
        self.rank = rank
        self.filters = filters
        self.kernel_size = _spatial_tuple(owner, kernel_size, "kernel_size", rank)
        self.strides = _spatial_tuple(owner, strides, "strides", rank)
        self.padding = check_padding(owner, padding, ("valid", "same"))
        self.data_format = "channels_last"
        self.dilation_rate = _spatial_tuple(owner, dilation_rate, "dilation_rate", rank)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise LayerArgumentError(
                f"{owner}: `strides > 1` is not compatible with `dilation_rate > 1` (as Keras). "
                f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}; "
                "use strides=1 or dilation_rate=1."
            )

    # -- shapes -----------------------------------------------------------------------
    @property
    def step_rank(self) -> int:
        """The rank of one step's input per example: ``(*spatial, channels)``."""
        return self.rank + 1

    @property
    def _mask_count(self) -> int:
        return 4  # Keras's ConvLSTMCell.dropout_mask_count, whatever the rates

    def step_shapes(self, step_shape: Shape) -> tuple[Shape, list[Shape]]:
        """``(output, [h, c])`` shapes per example for a step input ``(*spatial, channels)``."""
        spatial = output_sizes(
            self,
            step_shape[: self.rank],
            self.kernel_size,
            self.strides,
            self.padding,
            self.dilation_rate,
        )
        out = (*spatial, self.filters)
        return out, [out, out]

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return self.step_shapes(input_shape)[0]

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self.rank + 1, _LAYOUTS[self.rank])
        # Keras: "ConvLSTM layers only support static input shapes for the spatial dimension"
        self._require_known(input_shape, list(range(self.rank + 1)), "spatial and channel axes")
        self.step_shapes(input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        width = 4 * self.filters
        init = _initializers.get(self.kernel_initializer)
        recurrent = _initializers.get(self.recurrent_initializer)
        kernel_shape = (*self.kernel_size, input_shape[-1], width)
        self.kernel = nnx.Param(init(rngs.params(), kernel_shape, jnp.float32))
        self.recurrent_kernel = nnx.Param(
            recurrent(rngs.params(), (*self.kernel_size, self.filters, width), jnp.float32)
        )
        if self.use_bias:
            self.bias = nnx.Param(self._bias_init(rngs.params(), (width,)))

    def get_initial_state(self, batch_size: int) -> list[jax.Array]:
        """Zero ``[h, c]`` for ``batch_size`` sequences (the cell must be built)."""
        shape = self.step_shapes(self.built_input_shape)[0]
        dtype = self.dtype or jnp.float32
        return [jnp.zeros((batch_size, *shape), dtype) for _ in range(2)]

    # -- the step ---------------------------------------------------------------------
    def _conv(self, x, kernel, strides, padding, dilation):
        spatial = _SPATIAL[self.rank]
        numbers = (f"N{spatial}C", f"{spatial}IO", f"N{spatial}C")
        return _convolution()(
            x,
            kernel,
            window_strides=strides,
            padding=padding.upper(),
            rhs_dilation=dilation,
            dimension_numbers=numbers,
        )

    def _gate_inputs(self, x, kernel, bias, masks):
        """The four gates' input convolutions (plus bias), Keras's ``input_conv``."""
        conv = lambda v, k: self._conv(v, k, self.strides, self.padding, self.dilation_rate)  # noqa: E731
        if masks is None:  # one convolution of the fused kernel: the same numbers
            z = jnp.split(conv(x, kernel), 4, axis=-1)
        else:
            z = [conv(x * m, k) for m, k in zip(masks, jnp.split(kernel, 4, axis=-1), strict=True)]
        if bias is not None:
            z = [g + b for g, b in zip(z, jnp.split(bias, 4), strict=True)]
        return z

    def _gate_recurrent(self, h, kernel, masks):
        """The four gates' recurrent convolutions (stride 1, ``same``), Keras's ``recurrent_conv``."""
        ones = (1,) * self.rank
        conv = lambda v, k: self._conv(v, k, ones, "same", ones)  # noqa: E731
        if masks is None:
            return jnp.split(conv(h, kernel), 4, axis=-1)
        return [conv(h * m, k) for m, k in zip(masks, jnp.split(kernel, 4, axis=-1), strict=True)]

    def step(self, x, states, dp, rec):
        kernel, recurrent, bias = self._values()
        h_prev, c_prev = states[0], states[1]
        gate = activations.get(self.recurrent_activation)
        x_i, x_f, x_c, x_o = self._gate_inputs(x, kernel, bias, dp)
        h_i, h_f, h_c, h_o = self._gate_recurrent(h_prev, recurrent, rec)
        i = gate(x_i + h_i)
        f = gate(x_f + h_f)
        c = f * c_prev + i * self.activation_fn(x_c + h_c)
        o = gate(x_o + h_o)
        h = o * self.activation_fn(c)
        return h, [h, c]

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("units", None)
        return config


_CONV_CELL_KEYS = (
    "rank",
    "filters",
    "kernel_size",
    "strides",
    "padding",
    "data_format",
    "dilation_rate",
    "activation",
    "recurrent_activation",
    "use_bias",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "unit_forget_bias",
    "kernel_regularizer",
    "recurrent_regularizer",
    "bias_regularizer",
    "kernel_constraint",
    "recurrent_constraint",
    "bias_constraint",
    "dropout",
    "recurrent_dropout",
    "seed",
)


class ConvLSTM(_CellLayer):
    """What the three ranks share: an ``RNN`` around a ``ConvLSTMCell``."""

    _cell_class = ConvLSTMCell
    rank = 0
    _rank_hint = ""

    def __init__(self, local: dict):
        local = {**local, "rank": self.rank}
        super().__init__(*_split_args(local, _CONV_CELL_KEYS))

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("rank", None)
        return config


_ARGS_DOC = """
    Args:
      filters: the number of output channels (of ``h`` and ``c``).
      kernel_size: an int, or one int per spatial axis.
      strides: the input convolution's strides (an int, or one per axis); not
        above 1 together with ``dilation_rate`` above 1, as Keras.
      padding: ``"valid"`` (default) or ``"same"``, of the input convolution (the
        recurrent one is always ``"same"``).
      data_format: ``"channels_last"`` or None (the only layout supported).
      dilation_rate: the input convolution's dilation (an int, or one per axis).
      activation: default ``tanh``.
      recurrent_activation: the gates' activation, default ``sigmoid``.
      use_bias: whether to add a bias.
      kernel_initializer: default ``glorot_uniform``.
      recurrent_initializer: default ``orthogonal``.
      bias_initializer: default ``zeros``.
      unit_forget_bias: start the forget gate's bias at 1 (default True).
      kernel_regularizer: a penalty on ``kernel``.
      recurrent_regularizer: a penalty on ``recurrent_kernel``.
      bias_regularizer: a penalty on ``bias``.
      activity_regularizer: a penalty on the layer's output.
      kernel_constraint: a projection of ``kernel`` after each optimizer update.
      recurrent_constraint: a projection of ``recurrent_kernel`` after each update.
      bias_constraint: a projection of ``bias`` after each update.
      dropout: the fraction of the inputs dropped in training (a mask per gate,
        drawn once per call).
      recurrent_dropout: the fraction of the previous ``h`` dropped in training.
      seed: an int folded into the dropout key.
      return_sequences: return every step's output, not the last one.
      return_state: also return the final states: ``[output, h, c]``.
      go_backwards: run the sequence from its end.
      stateful: keep the final states as the next call's initial ones.
      unroll: unroll the loop (Keras takes it through ``RNN``'s keyword arguments).
      name: the layer's name.
      input_shape: the per-example input shape.
      dtype: the computation dtype; parameters are float32.
"""


def _init(
    self,
    filters: int,
    kernel_size: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
    activation: Any = "tanh",
    recurrent_activation: Any = "sigmoid",
    use_bias: bool = True,
    kernel_initializer: Any = "glorot_uniform",
    recurrent_initializer: Any = "orthogonal",
    bias_initializer: Any = "zeros",
    unit_forget_bias: bool = True,
    kernel_regularizer: Any = None,
    recurrent_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    recurrent_constraint: Any = None,
    bias_constraint: Any = None,
    dropout: float = 0.0,
    recurrent_dropout: float = 0.0,
    seed: int | None = None,
    return_sequences: bool = False,
    return_state: bool = False,
    go_backwards: bool = False,
    stateful: bool = False,
    *,
    unroll: bool = False,
    name: str | None = None,
    input_shape: Any = None,
    dtype: Any = None,
) -> None:
    local = dict(locals())
    del local["self"]
    ConvLSTM.__init__(self, local)


class ConvLSTM1D(ConvLSTM):
    __doc__ = (
        """Keras's ``ConvLSTM1D``: an LSTM over ``(batch, timesteps, steps, channels)``
    whose transformations are 1-D convolutions.
"""
        + _ARGS_DOC
        + """
    Examples:
      >>> import jax.numpy as jnp
      >>> ConvLSTM1D(4, 3, return_sequences=True)(jnp.ones((2, 5, 8, 3))).shape
      (2, 5, 6, 4)
    """
    )
    rank = 1
    _layout = _LAYOUTS[1]
    __init__ = _init


class ConvLSTM2D(ConvLSTM):
    __doc__ = (
        """Keras's ``ConvLSTM2D``: an LSTM over ``(batch, timesteps, rows, cols, channels)``
    whose transformations are 2-D convolutions.
"""
        + _ARGS_DOC
        + """
    Examples:
      >>> import jax.numpy as jnp
      >>> ConvLSTM2D(4, 3, padding="same")(jnp.ones((2, 5, 6, 6, 3))).shape
      (2, 6, 6, 4)
    """
    )
    rank = 2
    _layout = _LAYOUTS[2]
    __init__ = _init


class ConvLSTM3D(ConvLSTM):
    __doc__ = (
        """Keras's ``ConvLSTM3D``: an LSTM over ``(batch, timesteps, depth, rows, cols,
    channels)`` whose transformations are 3-D convolutions.
"""
        + _ARGS_DOC
        + """
    Examples:
      >>> import jax.numpy as jnp
      >>> ConvLSTM3D(2, 3)(jnp.ones((1, 2, 4, 4, 4, 1))).shape
      (1, 2, 2, 2, 2)
    """
    )
    rank = 3
    _layout = _LAYOUTS[3]
    __init__ = _init
