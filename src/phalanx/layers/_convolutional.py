"""Keras's convolution layers: ``Conv1D`` and ``Conv2D``, on ``nnx.Conv``, and ``Conv``, their base.

Keras's ``BaseConv``: the arguments (``filters``, ``kernel_size``, ``strides``,
``padding``, ``dilation_rate``, ``groups``, initializers, regularizers) are
checked and stored once in ``Conv``; the output size of each spatial axis, the
kernel (``(*kernel_size, in_channels // groups, filters)``, Keras's layout) and
``"causal"`` padding (1-D only) too. Inputs are channels last (NHWC, Keras's
default): ``(batch, steps, channels)`` for ``Conv1D``, ``(batch, height, width,
channels)`` for ``Conv2D``. The pooling layers use ``spatial_tuple``,
``output_sizes`` and ``check_data_format`` as well.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx
from jax import lax

from .._cpu_conv import conv_general_dilated as _cpu_convolution
from ..errors import LayerArgumentError
from . import _args as _layer_args
from . import _initializers
from ._args import is_positive_int, positive_int
from ._layer import Layer, Shape


def _convolution() -> Any:
    """The convolution the layers run: on CPU, one whose gradients XLA:CPU keeps fast in loops.

    ``fit`` runs its steps inside ``lax.scan``, where XLA:CPU leaves the gradient
    convolutions of a channels-last conv on its naive emitter (17x slower for the TPU
    guide's conv net; ``phalanx._cpu_conv``, docs/performance.md). Other platforms
    canonicalize convolutions themselves: ``lax.conv_general_dilated`` as is.
    """
    return _cpu_convolution if jax.default_backend() == "cpu" else lax.conv_general_dilated


def spatial_tuple(layer: str, value: Any, what: str, rank: int) -> tuple[int, ...]:
    """``value`` (an int, or ``rank`` ints) as ``rank`` positive ints; else a ``LayerArgumentError``.

    Examples:
      >>> spatial_tuple("Conv2D", 3, "kernel_size", 2)
      (3, 3)
    """
    values = (value,) * rank if is_positive_int(value) else value
    if not (
        isinstance(values, tuple | list)
        and len(values) == rank
        and all(is_positive_int(v) for v in values)
    ):
        several = "a tuple of " + ("one", "two", "three")[rank - 1]
        example = ", ".join(["3"] * rank) + ("," if rank == 1 else "")
        raise LayerArgumentError(
            f"{layer} {what} must be a positive int or {several}, got {value!r} "
            f"({type(value).__name__}); e.g. {layer}({what}=3) or {what}=({example})."
        )
    return tuple(int(v) for v in values)


def check_data_format(data_format: Any, hint: str) -> None:
    """Only ``channels_last`` (or None) is supported; ``hint`` says how to transpose."""
    if data_format not in (None, "channels_last"):
        raise LayerArgumentError(f"data_format={data_format!r} is not supported: {hint}")


def check_padding(layer: str, padding: Any, accepted: tuple[str, ...]) -> str:
    """``padding`` in lower case when it is one of ``accepted``; else a ``LayerArgumentError``."""
    if not isinstance(padding, str) or padding.lower() not in accepted:
        names = ", ".join(f"'{p}'" for p in accepted[:-1]) + f" or '{accepted[-1]}'"
        raise LayerArgumentError(f"{layer} padding must be {names}, got {padding!r}.")
    return padding.lower()


def output_sizes(layer: Layer, sizes, window, strides, padding: str, dilation=None) -> tuple:
    """The output size of each spatial axis (None where the input's is unknown).

    ``"same"`` and ``"causal"`` give ``ceil(size / stride)``; ``"valid"`` the
    positions where the (dilated) window fits. An empty output raises the
    layer's ``LayerShapeError``.
    """
    dilation = dilation or (1,) * len(window)
    out = []
    for size, w, s, d in zip(sizes, window, strides, dilation, strict=True):
        if size is None:
            out.append(None)
        elif padding in ("same", "causal"):
            out.append(-(-size // s))
        else:
            out.append((size - d * (w - 1) - 1) // s + 1)
    if any(o is not None and o <= 0 for o in out):
        raise layer._error(
            f"with window {tuple(window)}, strides {tuple(strides)} and padding '{padding}' "
            f"cannot take inputs of spatial size {tuple(sizes)}: the output would be "
            f"empty. Use padding='same' or a smaller window."
        )
    return tuple(out)


class Conv(Layer):
    """A convolution over ``(batch, *spatial, channels)``, ``activation(conv(x, kernel) + bias)``.

    Subclasses set ``rank`` (the spatial axes), ``_paddings``, ``_layout`` and
    the hints. The arguments every rank takes:

    Args:
      filters: the number of output channels.
      kernel_size: an int, or ``rank`` ints.
      strides: an int, or ``rank`` ints; default 1.
      padding: ``"valid"`` (default) or ``"same"`` (``Conv1D``: or ``"causal"``).
      data_format: ``"channels_last"`` or None (the only layout supported).
      dilation_rate: an int, or ``rank`` ints; default 1.
      groups: the number of feature groups (``filters`` and the input channels
        must divide by it).
      activation: an activation name or function; None is linear.
      use_bias: whether to add a bias.
      kernel_initializer: default ``glorot_uniform``.
      bias_initializer: default ``zeros``.
      kernel_regularizer: a penalty on the kernel (``"l2"``, ``L2(0.01)``, ...).
      bias_regularizer: a penalty on the bias.
      activity_regularizer: a penalty on the layer's output, divided by the batch size.
      kernel_constraint: a projection of the kernel after each optimizer update
        (``phalanx.constraints.MaxNorm(2, axis=[0, 1, 2])``, ...), as Keras.
      bias_constraint: a projection of the bias after each update.
      name: the layer's name.
      input_shape: the per-example input shape ``(*spatial, channels)``.
      dtype: the computation dtype; parameters are float32.

    Raises:
      LayerArgumentError: an argument of the wrong type or value (``filters=0``,
        ``kernel_size=(3,)`` for ``Conv2D``, an unknown ``padding``), or ``strides``
        above 1 with ``dilation_rate`` above 1, on any axes (as Keras 3 refuses them).
    """

    rank: int = 0
    _paddings: tuple[str, ...] = ("valid", "same")
    _layout = ""  # e.g. "(batch, steps, channels)"
    _rank_hint = ""  # said when the input's rank is wrong
    _data_format_hint = ""  # how to transpose channels_first inputs
    _has_activation = True
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("conv", "kernel")),
        ("bias_regularizer", ("conv", "bias")),
    )
    _weight_constraint_paths = (
        ("kernel_constraint", ("conv", "kernel")),
        ("bias_constraint", ("conv", "bias")),
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
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        layer = type(self).__name__
        _layer_args.keep_constraints(
            self, kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        check_data_format(data_format, self._data_format_hint)
        self.filters = positive_int(layer, "filters", filters, f"{layer}(32, 3)")
        self.kernel_size = self._store(spatial_tuple(layer, kernel_size, "kernel_size", self.rank))
        self.strides = self._store(spatial_tuple(layer, strides, "strides", self.rank))
        self.padding = check_padding(layer, padding, self._paddings)
        self.dilation_rate = self._store(
            spatial_tuple(layer, dilation_rate, "dilation_rate", self.rank)
        )
        if max(self._tuple(self.strides)) > 1 and max(self._tuple(self.dilation_rate)) > 1:
            # Keras 3's BaseConv refuses the pair at construction (its words first)
            raise LayerArgumentError(
                f"{layer}: `strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                f"Received: strides={self._tuple(self.strides)} and dilation_rate="
                f"{self._tuple(self.dilation_rate)}. Use strides=1 with the dilation (and "
                "downsample after it, e.g. with a pooling layer), or dilation_rate=1."
            )
        self.groups = positive_int(layer, "groups", groups, f"{layer}(32, 3, groups=2)")
        if self.filters % self.groups:  # Keras's BaseConv refuses it here, not at build
            raise LayerArgumentError(
                f"{layer} filters ({self.filters}) must divide by groups ({self.groups}); "
                f"e.g. {layer}({self.groups * max(1, self.filters // self.groups)}, "
                f"3, groups={self.groups})."
            )
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
        self.conv = nnx.data(None)

    def _store(self, values: tuple[int, ...]) -> Any:
        """How the layer keeps a spatial argument: a tuple (``Conv1D``: its one int)."""
        return values[0] if self.rank == 1 else values

    @staticmethod
    def _tuple(value: Any) -> tuple[int, ...]:
        return value if isinstance(value, tuple) else (value,)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = output_sizes(
            self,
            input_shape[: self.rank],
            self._tuple(self.kernel_size),
            self._tuple(self.strides),
            self.padding,
            self._tuple(self.dilation_rate),
        )
        return (*spatial, self.filters)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self.rank + 1, self._layout, self._rank_hint)
        self._require_known(input_shape, [-1], "channel axis")
        channels = input_shape[-1]
        if channels % self.groups:
            raise self._error(
                f"has groups={self.groups}, which must divide the input channels ({channels})."
            )
        self.compute_output_shape(input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        padding = "VALID" if self.padding == "causal" else self.padding.upper()
        self.conv = nnx.Conv(
            input_shape[-1],
            self.filters,
            kernel_size=self._tuple(self.kernel_size),
            strides=self._tuple(self.strides),
            padding=padding,
            kernel_dilation=self._tuple(self.dilation_rate),
            feature_group_count=self.groups,
            use_bias=self.use_bias,
            kernel_init=_initializers.get(self.kernel_initializer),
            bias_init=_initializers.get(self.bias_initializer),
            dtype=self.dtype,
            conv_general_dilated=_convolution(),
            rngs=rngs,
        )

    def pre_activation(self, x, *, training, rngs):
        x = self._cast(x)
        if self.padding == "causal":  # left padding by the dilated window, as Keras (1-D)
            (kernel,), (dilation,) = self._tuple(self.kernel_size), self._tuple(self.dilation_rate)
            x = jnp.pad(x, ((0, 0), (dilation * (kernel - 1), 0), (0, 0)))
        return self.conv(x)


_IMAGE = "(batch, height, width, channels)"


_NHWC_HINT = (
    "phalanx layers use 'channels_last' (NHWC). Transpose inputs with "
    "jnp.transpose(x, (0, 2, 3, 1))."
)


_RESHAPE_HINT = (
    "Images must be (height, width, channels) per example: reshape flat inputs "
    "first, e.g. layers.Reshape((28, 28, 1))."
)


def _data_format(data_format: str | None) -> None:
    check_data_format(data_format, _NHWC_HINT)


class Conv2D(Conv):
    """A 2-D convolution over NHWC images, ``activation(conv(x, kernel) + bias)``, on ``nnx.Conv``.

    Takes Keras's ``Conv2D`` arguments (listed on ``Conv``): ``kernel_size``,
    ``strides`` and ``dilation_rate`` are ints or pairs ``(height, width)``,
    kept as pairs; ``input_shape`` is ``(height, width, channels)``.

    Examples:
      >>> layer = Conv2D(32, 3, activation="relu")
      >>> layer.build((28, 28, 1))
      (26, 26, 32)
      >>> layer.count_params()
      320
    """

    rank = 2
    _layout = _IMAGE
    _rank_hint = _RESHAPE_HINT
    _data_format_hint = _NHWC_HINT


_SEQUENCE = "(batch, steps, channels)"


_CHANNELS_LAST_HINT = (
    "phalanx's 1-D layers use 'channels_last' (batch, steps, channels). Transpose with "
    "jnp.swapaxes(x, 1, 2)."
)


class Conv1D(Conv):
    """A 1-D convolution over ``(batch, steps, channels)``, on ``nnx.Conv``.

    Takes Keras's ``Conv1D`` arguments (listed on ``Conv``): ``kernel_size``,
    ``strides`` and ``dilation_rate`` are ints (or tuples of one), kept as ints;
    ``padding`` may also be ``"causal"`` (left padding by ``dilation_rate *
    (kernel_size - 1)``); ``input_shape`` is ``(steps, channels)``.

    Examples:
      >>> layer = Conv1D(8, 3, activation="relu")
      >>> layer.build((10, 4))
      (8, 8)
      >>> layer.count_params()
      104
    """

    rank = 1
    _paddings = ("valid", "same", "causal")
    _layout = _SEQUENCE
    _data_format_hint = _CHANNELS_LAST_HINT


_VOLUME = "(batch, depth, height, width, channels)"


_NDHWC_HINT = (
    "phalanx's 3-D layers use 'channels_last' (NDHWC). Transpose inputs with "
    "jnp.transpose(x, (0, 2, 3, 4, 1))."
)


class Conv3D(Conv):
    """A 3-D convolution over NDHWC volumes, ``activation(conv(x, kernel) + bias)``, on ``nnx.Conv``.

    Takes Keras's ``Conv3D`` arguments (listed on ``Conv``): ``kernel_size``,
    ``strides`` and ``dilation_rate`` are ints or triples ``(depth, height,
    width)``, kept as triples; ``input_shape`` is ``(depth, height, width, channels)``.

    Examples:
      >>> layer = Conv3D(8, 3, activation="relu")
      >>> layer.build((6, 6, 6, 2))
      (4, 4, 4, 8)
      >>> layer.count_params()
      440
    """

    rank = 3
    _layout = _VOLUME
    _data_format_hint = _NDHWC_HINT
