"""Keras's core layers on flax.nnx: Input, Dense, Activation, Embedding, Identity.

Defaults are Keras's: ``glorot_uniform`` kernels, zero biases, embeddings
drawn from ``uniform(-0.05, 0.05)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
from flax import nnx

from .. import activations, regularizers
from . import _args as _layer_args
from . import _initializers
from ._args import positive_int
from ._layer import Layer, Shape, format_shape, normalize_shape, shapes_match

if TYPE_CHECKING:
    from ._symbolic import KerasTensor


class InputLayer(Layer):
    """Declares the per-example input shape (and dtype) of a network.

    Use it (or `Input`) as the first element of a ``Sequential``. It has
    no weights; inputs of another dtype are cast to ``dtype`` when given.

    Args:
      shape: the shape of one example, without the batch axis: ``(784,)``.
      batch_size: accepted for Keras compatibility; phalanx batches are set by
        the data pipeline.
      dtype: the dtype inputs are cast to, or None to keep theirs; ``"string"``:
        string inputs (for ``TextVectorization``, ``StringLookup``), kept as they are.
      name: the layer's name.

    Examples:
      >>> InputLayer(shape=(784,)).declared_input_shape
      (784,)
    """

    def __init__(
        self,
        shape: Any = None,
        *,
        batch_size: int | None = None,
        dtype: Any = None,
        name: str | None = None,
        input_shape: Any = None,
    ):
        shape = input_shape if shape is None else shape
        if shape is None:
            raise ValueError("InputLayer needs shape=, the shape of one example (e.g. (784,)).")
        #: Keras's ``dtype="string"``: strings, for the layers that run on the host.
        self.strings = dtype in ("string", str)
        super().__init__(name=name, input_shape=shape, dtype=None if self.strings else dtype)
        self.batch_size = batch_size

    def call(self, x, *, training, rngs):
        return x if self.dtype is None else x.astype(self.dtype)


def Input(
    shape: Any = None,
    batch_size: int | None = None,
    dtype: Any = None,
    name: str | None = None,
    *,
    batch_shape: Any = None,
) -> KerasTensor:
    """Keras's ``Input``: a symbolic batch that starts a functional model (or a ``Sequential``).

    Args:
      shape: the shape of one example, without the batch axis: ``(784,)``.
      batch_size: accepted for Keras compatibility (batches come from the data).
      dtype: the dtype inputs are cast to (e.g. ``"int32"`` for token ids), or
        None to keep theirs; ``"string"``: string inputs (for ``TextVectorization``).
      name: the input's name (the key of a dict of inputs).
      batch_shape: Keras's alternative to ``shape``: the shape with the batch axis first.

    Returns:
      A symbolic tensor (a ``KerasTensor``): call layers on it, then
        ``phalanx.Model(inputs, outputs)``; or put it first in a ``Sequential``.

    Examples:
      >>> Input(shape=(28, 28, 1)).shape
      (None, 28, 28, 1)
    """
    from ._symbolic import make_input

    if shape is None and batch_shape is not None:
        shape = tuple(batch_shape)[1:]
    if shape is None:
        raise ValueError("Input needs shape=, the shape of one example (e.g. (784,)).")
    layer = InputLayer(shape, batch_size=batch_size, dtype=dtype, name=name)
    return make_input(layer, layer.declared_input_shape, dtype, name)


class Dense(Layer):
    """A fully connected layer, ``activation(x @ kernel + bias)``, on ``nnx.Linear``.

    Applies to the last axis of inputs of any rank >= 2 (batch included), as Keras.

    Args:
      units: the output size.
      activation: an activation name or function; None is linear.
      use_bias: whether to add a bias.
      kernel_initializer: Keras name or jax initializer; default ``glorot_uniform``.
      bias_initializer: Keras name or jax initializer; default ``zeros``.
      kernel_regularizer: a penalty on the kernel (``phalanx.regularizers.L2(0.01)``,
        ``"l2"``, ...); its value is in ``losses`` and ``fit`` adds it to the loss.
      bias_regularizer: a penalty on the bias.
      activity_regularizer: a penalty on the layer's output, divided by the batch size.
      kernel_constraint: a projection of the kernel after each optimizer update
        (``phalanx.constraints.MaxNorm(3)``, ``"non_neg"``, ...), as Keras.
      bias_constraint: a projection of the bias after each update.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.
      dtype: the computation dtype; parameters are float32.

    Examples:
      >>> import jax.numpy as jnp
      >>> layer = Dense(128, activation="relu")
      >>> layer.build((784,))
      (128,)
      >>> layer.count_params()
      100480
    """

    supports_masking = True

    _has_activation = True
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("linear", "kernel")),
        ("bias_regularizer", ("linear", "bias")),
    )
    _weight_constraint_paths = (
        ("kernel_constraint", ("linear", "kernel")),
        ("bias_constraint", ("linear", "bias")),
    )

    def __init__(
        self,
        units: int,
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
        _layer_args.keep_constraints(
            self, kernel_constraint=kernel_constraint, bias_constraint=bias_constraint
        )
        self.units = positive_int("Dense", "units", units, "Dense(128)")
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
        self.linear = nnx.data(None)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape[:-1], self.units)

    def _check_input_shape(self, input_shape: Shape) -> None:
        if len(input_shape) < 1:
            raise self._error(
                "expects inputs of rank >= 2 (batch, ..., features), received shape "
                f"{format_shape(input_shape)}. Give each example a feature axis, "
                "e.g. x[:, None] or layers.Reshape((1,))."
            )
        self._require_known(input_shape, [-1], "last (feature) axis")

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        self.linear = nnx.Linear(
            input_shape[-1],
            self.units,
            use_bias=self.use_bias,
            kernel_init=_initializers.get(self.kernel_initializer),
            bias_init=_initializers.get(self.bias_initializer),
            dtype=self.dtype,
            rngs=rngs,
        )

    def pre_activation(self, x, *, training, rngs):
        return self.linear(self._cast(x))


class Activation(Layer):
    """Applies an activation function by Keras name (``"relu"``, ``"softmax"``, ...) or callable.

    Args:
      activation: the activation.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Examples:
      >>> import jax.numpy as jnp
      >>> Activation("relu")(jnp.array([[-1.0, 1.0]])).tolist()
      [[0.0, 1.0]]
    """

    supports_masking = True

    _has_activation = True

    def __init__(self, activation: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        activations.get(activation)
        self.activation = activation

    def pre_activation(self, x, *, training, rngs):
        return self._cast(x)


class Identity(Layer):
    """Keras's ``Identity``: returns its inputs as they are (a placeholder layer).

    It takes one batch or a list of batches (returned as the same list), has no
    weights, and passes a mask on unchanged, as Keras.

    Args:
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.
      dtype: accepted as Keras's (the inputs are returned in their own dtype).

    Examples:
      >>> import jax.numpy as jnp
      >>> Identity()(jnp.array([[1.0, 2.0]])).tolist()
      [[1.0, 2.0]]
    """

    supports_masking = True

    def __init__(self, *, name: str | None = None, input_shape: Any = None, dtype: Any = None):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)

    def _normalize_input_shape(self, input_shape: Any) -> Any:
        if _is_shape_list(input_shape):
            return [normalize_shape(s) for s in input_shape]
        return normalize_shape(input_shape)

    def _input_shape_of(self, x: Any) -> Any:
        if isinstance(x, list | tuple):
            return [tuple(a.shape[1:]) for a in x]
        return tuple(x.shape[1:])

    def check_input(self, x: Any) -> None:
        received = self._input_shape_of(x)
        expected = self.built_input_shape
        several = isinstance(expected, list)
        pairs = list(zip(expected, received, strict=False)) if several else [(expected, received)]
        same = not several or (isinstance(received, list) and len(received) == len(expected))
        if not same or not all(shapes_match(e, r) for e, r in pairs):
            raise self._error(f"was built for inputs of shape {expected}, received {received}.")

    def compute_output_shape(self, input_shape: Any) -> Any:
        if isinstance(input_shape, list):
            return [tuple(s) for s in input_shape]
        return tuple(input_shape)

    def call(self, x, *, training, rngs):
        return list(x) if isinstance(x, tuple) else x


def _is_shape_list(shape: Any) -> bool:
    """True for a list of shapes (the inputs of a layer called on a list)."""
    return (
        isinstance(shape, list | tuple)
        and len(shape) > 0
        and all(isinstance(s, list | tuple) for s in shape)
    )


class Embedding(Layer):
    """Maps integer indices in ``[0, input_dim)`` to dense vectors, on ``nnx.Embed``.

    Float inputs are cast to int32, as Keras.

    Args:
      input_dim: the vocabulary size.
      output_dim: the embedding size.
      embeddings_initializer: Keras name or jax initializer; default ``uniform``
        (``U(-0.05, 0.05)``).
      embeddings_regularizer: a penalty on the embedding matrix (``"l2"``, ...).
      activity_regularizer: a penalty on the layer's output, divided by the batch size.
      name: the layer's name.
      input_shape: the per-example input shape (e.g. ``(sequence_length,)``).
      input_length: Keras 2's name for a one-axis ``input_shape``.
      mask_zero: index 0 is padding: the layer's mask (``compute_mask``) is False
        there, and a ``Sequential`` or functional model gives it to the layers
        after it that take ``mask=`` (recurrent layers, ``MultiHeadAttention``...).

    Examples:
      >>> layer = Embedding(1000, 64)
      >>> layer.build((10,))
      (10, 64)
      >>> layer.count_params()
      64000
    """

    supports_masking = True

    _weight_regularizer_paths = (("embeddings_regularizer", ("embed", "embedding")),)
    _weight_constraint_paths = (("embeddings_constraint", ("embed", "embedding")),)

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        activity_regularizer: Any = None,
        embeddings_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        input_length: int | None = None,
        mask_zero: bool = False,
    ):
        _layer_args.keep_constraints(self, embeddings_constraint=embeddings_constraint)
        if input_shape is None and input_length is not None:
            input_shape = (
                positive_int(
                    "Embedding",
                    "input_length",
                    input_length,
                    "Embedding(1000, 64, input_length=10)",
                ),
            )
        super().__init__(name=name, input_shape=input_shape)
        self.input_dim = positive_int("Embedding", "input_dim", input_dim, "Embedding(1000, 64)")
        self.output_dim = positive_int("Embedding", "output_dim", output_dim, "Embedding(1000, 64)")
        _initializers.get(embeddings_initializer)  # fail now on an unknown name
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.mask_zero = bool(mask_zero)
        self.embed = nnx.data(None)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape, self.output_dim)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        self.embed = nnx.Embed(
            self.input_dim,
            self.output_dim,
            embedding_init=_initializers.get(self.embeddings_initializer),
            rngs=rngs,
        )

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """With ``mask_zero=True``, True where the index is not 0 (padding), as Keras; else None."""
        if not self.mask_zero:
            return None
        return jnp.asarray(inputs) != 0

    def call(self, x, *, training, rngs):
        if not jnp.issubdtype(x.dtype, jnp.integer):
            x = x.astype(jnp.int32)
        return self.embed(x)


class Masking(Layer):
    """Keras's ``Masking``: zeroes the steps whose features all equal ``mask_value``.

    Its mask (``compute_mask``) is True where a step has a feature other than
    ``mask_value``; give it to a recurrent layer's ``mask=``.

    Args:
      mask_value: the padding value, default 0.0.

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.array([[[1.0], [0.0]]])
      >>> Masking().compute_mask(x).tolist()
      [[True, False]]
    """

    supports_masking = True

    def __init__(
        self, mask_value: float = 0.0, *, name: str | None = None, input_shape: Any = None
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.mask_value = mask_value

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """True for the steps that hold a value other than ``mask_value``."""
        return jnp.any(jnp.asarray(inputs) != self.mask_value, axis=-1)

    def call(self, x, *, training, rngs):
        keep = self.compute_mask(x)[..., None]
        return x * keep.astype(x.dtype)


class Lambda(Layer):
    """Keras's ``Lambda``: wraps a function of the inputs as a layer (in-process only).

    ``function(inputs, **arguments)``, also given ``mask=`` and ``training=`` when
    it declares them. Its config holds the function object itself: a model with
    a ``Lambda`` is not written to a file (Keras serializes bytecode; phalanx
    refuses rather than load code from a file).

    Args:
      function: the function.
      output_shape: the per-example output shape (no batch axis), a function of
        Keras's input shape, or None to trace ``function`` (``jax.eval_shape``).
      mask: a mask or ``fn(inputs, mask)`` giving the output mask (None: no mask).
      arguments: keyword arguments given to ``function``.

    Examples:
      >>> import jax.numpy as jnp
      >>> Lambda(lambda x: x * 2)(jnp.array([[1.0, 2.0]])).tolist()
      [[2.0, 4.0]]
    """

    def __init__(
        self,
        function: Any,
        output_shape: Any = None,
        mask: Any = None,
        arguments: dict | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        import inspect

        super().__init__(name=name, input_shape=input_shape)
        if not callable(function):
            raise TypeError(
                f"Lambda needs a function, got {type(function).__name__} {function!r}; "
                "e.g. Lambda(lambda x: x * 2)."
            )
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None
        self.lambda_output_shape = output_shape
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._takes = tuple(n for n in ("mask", "training") if n in params)

    def compute_output_shape(self, input_shape: Shape) -> Any:
        import jax

        given = self.lambda_output_shape
        if callable(given):
            out = given((None, *input_shape))
            return tuple(out)[1:]
        if given is not None:
            return tuple(given)
        spec = jax.ShapeDtypeStruct((1, *(1 if d is None else d for d in input_shape)), "float32")
        out = jax.eval_shape(lambda x: self.function(x, **self._options(None, False)), spec)
        shapes = [tuple(o.shape[1:]) for o in jax.tree.leaves(out)]
        return shapes if isinstance(out, list | tuple) else shapes[0]

    def _options(self, mask: Any, training: bool) -> dict:
        options = dict(self.arguments)
        if "mask" in self._takes:
            options["mask"] = mask
        if "training" in self._takes:
            options["training"] = training
        return options

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The ``mask`` argument: called with ``(inputs, mask)`` when it is a function."""
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("lambda_output_shape", None)
        config.pop("supports_masking", None)
        config.update(
            function=self.function,
            output_shape=self.lambda_output_shape,
            mask=self.mask,
            arguments=dict(self.arguments),
        )
        return config

    def call(self, x, *, training, rngs, mask=None):
        return self.function(x, **self._options(mask, training))
