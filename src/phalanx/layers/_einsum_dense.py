"""Keras's ``EinsumDense``: ``activation(einsum(equation, x, kernel) + bias)`` on flax.nnx.

As Keras 3 (``keras/src/layers/core/einsum_dense.py``): the equation is
``[X],[Y]->[Z]``, ``...[X],[Y]->...[Z]`` or ``[X]...,[Y]->[Z]...`` (the first
operand the input, with its batch axis); ``output_shape`` gives the output's
sizes without the batch axis (None: the input's size of that letter); the
kernel's shape comes from the letters (an output letter's size from
``output_shape``, an input letter's from the input); ``bias_axes`` names the
output letters the bias spans, from the first of them to the end of the
output, 1 elsewhere. A variance-scaling initializer (``glorot_uniform``, the
default) counts its fans over the kernel's input and output letters, as Keras.

Keras's ``lora_rank`` and quantization are not supported (refused).
"""

from __future__ import annotations

import re
from typing import Any

import jax.numpy as jnp
from flax import nnx
from jax.nn import initializers as jinit

from ..errors import LayerArgumentError
from ..initializers import VarianceScaling
from . import _args as _layer_args
from . import _initializers
from ._layer import Layer, Shape

#: Keras's variance-scaling initializers by name: (scale, mode, distribution).
_VARIANCE_SCALING = {
    "glorot_uniform": (1.0, "fan_avg", "uniform"),
    "glorot_normal": (1.0, "fan_avg", "truncated_normal"),
    "he_uniform": (2.0, "fan_in", "uniform"),
    "he_normal": (2.0, "fan_in", "truncated_normal"),
    "lecun_uniform": (1.0, "fan_in", "uniform"),
    "lecun_normal": (1.0, "fan_in", "truncated_normal"),
}


class EinsumDense(Layer):
    """A dense layer of any rank written as an einsum, as ``keras.layers.EinsumDense``.

    Args:
      equation: the einsum of the input and the kernel, e.g. ``"ab,bc->ac"`` (Dense),
        ``"abc,cde->abde"`` (heads) or ``"...b,bc->...c"``.
      output_shape: the output's shape without the batch axis (an int for one axis);
        None entries take the input's size.
      activation: an activation name or function; None is linear.
      bias_axes: the output letters with a bias (e.g. ``"de"``); None: no bias.
      kernel_initializer: default ``glorot_uniform`` (fans over the kernel's input and
        output letters, as Keras).
      bias_initializer: default ``zeros``.
      kernel_regularizer: a penalty on the kernel.
      bias_regularizer: a penalty on the bias.
      activity_regularizer: a penalty on the output, divided by the batch size.
      kernel_constraint: a projection of the kernel after each optimizer update.
      bias_constraint: a projection of the bias after each update.
      lora_rank: Keras's LoRA: only None (refused otherwise).
      lora_alpha: only None, as ``lora_rank``.
      quantization_config: Keras's quantization: only None (refused otherwise).
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.
      dtype: the computation dtype; parameters are float32.

    Raises:
      LayerArgumentError: an equation of none of Keras's forms, or an unsupported
        argument.

    Examples:
      >>> import jax.numpy as jnp
      >>> layer = EinsumDense("abc,cde->abde", output_shape=(None, 2, 5), bias_axes="de")
      >>> layer(jnp.ones((3, 7, 4))).shape
      (3, 7, 2, 5)
      >>> [w.shape for w in layer.weights]
      [(4, 2, 5), (2, 5)]
    """

    _has_activation = True
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("kernel",)),
        ("bias_regularizer", ("bias",)),
    )
    _weight_constraint_paths = (
        ("kernel_constraint", ("kernel",)),
        ("bias_constraint", ("bias",)),
    )

    def __init__(
        self,
        equation: str,
        output_shape: Any,
        activation: Any = None,
        bias_axes: str | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        lora_rank: Any = None,
        lora_alpha: Any = None,
        quantization_config: Any = None,
        *,
        activity_regularizer: Any = None,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        for what, value in (
            ("lora_rank", lora_rank),
            ("lora_alpha", lora_alpha),
            ("quantization_config", quantization_config),
        ):
            if value is not None:
                raise LayerArgumentError(
                    f"EinsumDense: {what}={value!r} is not supported by phalanx (Keras 3 has "
                    f"it); leave {what}=None."
                )
        if not isinstance(equation, str):
            raise LayerArgumentError(
                f"EinsumDense equation must be a string such as 'ab,bc->ac', got "
                f"{equation!r} ({type(equation).__name__})."
            )
        _split(equation)  # Keras's "Invalid einsum equation" now, not at build
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise LayerArgumentError(
                f"EinsumDense bias_axes must be a string of output letters or None, got "
                f"{bias_axes!r} ({type(bias_axes).__name__}); e.g. bias_axes='c'."
            )
        self.equation = equation
        shape = (output_shape,) if isinstance(output_shape, int) else tuple(output_shape)
        self.partial_output_shape = shape
        self.bias_axes = bias_axes
        _layer_args.keep_kernel_arguments(
            self,
            activation,
            bias_axes is not None,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
        )
        del self.use_bias  # not a Keras argument of EinsumDense
        _layer_args.keep_constraints(
            self, kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        self.kernel = nnx.data(None)
        self.bias = nnx.data(None)

    def get_config(self) -> dict:
        """Keras's config: ``equation``, ``output_shape``, ``activation``, ``bias_axes``, the
        initializers, regularizers and constraints, ``quantization_config`` (None)."""
        config = super().get_config()
        for key in ("kernel", "bias", "partial_output_shape"):
            config.pop(key, None)
        config["output_shape"] = list(self.partial_output_shape)
        config["quantization_config"] = None
        for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            config.setdefault(key, None)
        for key in ("kernel_constraint", "bias_constraint"):
            config.setdefault(key, None)
        return config

    def _analysis(self, input_shape: Shape):
        try:
            return _analyze(
                self.equation, self.bias_axes, (None, *input_shape), self.partial_output_shape
            )
        except ValueError as error:
            raise self._error(
                f"cannot take inputs of shape {(None, *input_shape)}: {error}"
            ) from None

    def _check_input_shape(self, input_shape: Shape) -> None:
        kernel_shape, _, _, _, _ = self._analysis(input_shape)
        if any(d is None for d in kernel_shape):
            raise self._error(
                f"needs known sizes for its kernel {tuple(kernel_shape)}, received inputs of "
                f"shape {(None, *input_shape)}."
            )

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return tuple(self._analysis(input_shape)[2][1:])

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        kernel_shape, bias_shape, _, in_axes, out_axes = self._analysis(input_shape)
        init = _kernel_initializer(self.kernel_initializer, in_axes, out_axes)
        self.kernel = nnx.Param(init(rngs.params(), tuple(kernel_shape), jnp.float32))
        if bias_shape is not None:
            bias_init = _initializers.get(self.bias_initializer)
            self.bias = nnx.Param(bias_init(rngs.params(), tuple(bias_shape), jnp.float32))

    def check_input(self, x: Any) -> None:
        if x.ndim != len(self.built_input_shape) + 1:
            raise self._error(
                f"was built for inputs of rank {len(self.built_input_shape) + 1}, received "
                f"shape {tuple(x.shape)}."
            )
        super().check_input(x)

    def pre_activation(self, x, *, training, rngs):
        x = self._cast(x)
        y = jnp.einsum(self.equation, x, self.kernel[...].astype(x.dtype))
        if self.bias is not None:
            y = y + self.bias[...].astype(y.dtype)
        return y


def _kernel_initializer(identifier: Any, in_axes: list[int], out_axes: list[int]):
    """The kernel's initializer; a variance-scaling name counts fans over Keras's axes."""
    if isinstance(identifier, dict) or (
        isinstance(identifier, str) and identifier not in _VARIANCE_SCALING
    ):
        resolved = _initializers.get(identifier)  # "HeNormal", a config dict
        identifier = resolved if isinstance(resolved, VarianceScaling) else identifier
    if isinstance(identifier, VarianceScaling):  # GlorotUniform(seed=1), VarianceScaling(...)
        scale, mode, distribution = identifier.scale, identifier.mode, identifier.distribution
    elif isinstance(identifier, str) and identifier in _VARIANCE_SCALING:
        scale, mode, distribution = _VARIANCE_SCALING[identifier]
    else:
        return _initializers.get(identifier)
    if distribution == "untruncated_normal":
        distribution = "normal"
    return jinit.variance_scaling(
        scale, mode, distribution, in_axis=tuple(in_axes), out_axis=tuple(out_axes)
    )


def _split(equation: str) -> tuple[re.Match, bool]:
    """The equation's (input, kernel, output) letters and whether ``...`` leads, as Keras."""
    dots = re.sub(r"\.\.\.", "0", equation)
    for pattern, left in (
        ("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)", False),
        ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)", True),
        ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0", False),
    ):
        match = re.match(pattern, dots)
        if match:
            return match, left
    raise LayerArgumentError(
        f"Invalid einsum equation '{equation}'. Equations must be in the form "
        "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]...."
    )


def _analyze(equation, bias_axes, input_shape, output_shape):
    """Keras's ``_analyze_split_string``: kernel shape, bias shape, full output shape (batch
    axis first) and the kernel's input and output axes."""
    match, left_elided = _split(equation)
    input_spec, weight_spec, output_spec = match.group(1), match.group(2), match.group(3)
    elided = len(input_shape) - len(input_spec)
    output_shape = [input_shape[0], *output_shape]
    if elided > 0 and left_elided:
        for i in range(1, elided):
            output_shape.insert(1, input_shape[i])
    elif elided > 0:
        output_shape.extend(input_shape[len(input_shape) - elided :])
    if left_elided:
        input_dims = {d: i + elided - len(input_shape) for i, d in enumerate(input_spec)}
        output_dims = {d: i + elided for i, d in enumerate(output_spec)}
    else:
        input_dims = {d: i for i, d in enumerate(input_spec)}
        output_dims = {d: i for i, d in enumerate(output_spec)}
    for d, i in output_dims.items():  # a size None (or left out) is the input's, as Keras's call
        if output_shape[i] is None and d in input_dims and i > 0:
            output_shape[i] = input_shape[input_dims[d]]
    _check_letters(
        input_spec, weight_spec, output_spec, input_shape, output_shape, input_dims, output_dims
    )
    weight_shape, in_axes, out_axes = [], [], []
    for i, d in enumerate(weight_spec):
        if d in output_dims:
            weight_shape.append(output_shape[output_dims[d]])
            out_axes.append(i)
        else:
            weight_shape.append(input_shape[input_dims[d]])
            in_axes.append(i)
    bias_shape = None
    if bias_axes is not None:
        bias_shape = _bias_shape(bias_axes, output_spec, output_shape, elided, left_elided)
    return weight_shape, bias_shape, output_shape, in_axes, out_axes


def _check_letters(
    input_spec, weight_spec, output_spec, input_shape, output_shape, input_dims, output_dims
):
    """Keras's checks: shared letters agree in size; every letter has a source."""
    for d in input_spec:
        size = input_shape[input_dims[d]]
        if d in output_dims:
            out = output_shape[output_dims[d]]
            if out is not None and out != size:
                raise ValueError(
                    f"Input shape and output shape do not match at shared dimension '{d}'. "
                    f"Input shape is {size}, and output shape is {out}."
                )
    for d in output_spec:
        if d not in input_spec and d not in weight_spec:
            raise ValueError(
                f"Dimension '{d}' was specified in the output '{output_spec}' but has no "
                f"corresponding dim in the input spec '{input_spec}' or weight spec "
                f"'{weight_spec}'"
            )
    for d in weight_spec:
        if d not in output_dims and d not in input_dims:
            raise ValueError(
                f"Weight dimension '{d}' did not have a match in either the input spec "
                f"'{input_spec}' or the output spec '{output_spec}'. For this layer, the "
                "weight must be fully specified."
            )


def _bias_shape(bias_axes, output_spec, output_shape, elided, left_elided):
    left = elided if left_elided else 0
    sizes = {c: output_shape[i + left] for i, c in enumerate(output_spec)}
    for c in bias_axes:
        if c not in output_spec:
            raise ValueError(
                f"Bias dimension '{c}' was requested, but is not part of the output spec "
                f"'{output_spec}'"
            )
    first = min(output_spec.find(c) for c in bias_axes)
    shape = [sizes[c] if c in bias_axes else 1 for c in output_spec[first:]]
    if not left_elided:
        shape.extend([1] * max(elided, 0))
    return shape
