"""Keras's core layers on flax.nnx: Input, Dense, Activation, Dropout, Flatten, Reshape, Embedding.

Defaults are Keras's: ``glorot_uniform`` kernels, zero biases, embeddings
drawn from ``uniform(-0.05, 0.05)``. ``Dropout`` draws its mask from the key
given to ``__call__(..., rngs=key)`` (see :mod:`phalanx.models._network` for how
a training step supplies one per replica and step).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from ..errors import LayerArgumentError
from ..regularizers import _regularizers
from . import _activations, _initializers
from . import _args as _layer_args
from ._args import positive_int
from ._layer import Layer, Shape, format_shape, normalize_shape


class InputLayer(Layer):
    """Declares the per-example input shape (and dtype) of a network.

    Use it (or :func:`Input`) as the first element of a ``Sequential``. It has
    no weights; inputs of another dtype are cast to ``dtype`` when given.

    Args:
      shape: the shape of one example, without the batch axis: ``(784,)``.
      batch_size: accepted for Keras compatibility; phalanx batches are set by
        the data pipeline.
      dtype: the dtype inputs are cast to, or None to keep theirs.
      name: the layer's name.

    Example:
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
        super().__init__(name=name, input_shape=shape, dtype=dtype)
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
):
    """Keras's ``Input``: a symbolic batch that starts a functional model (or a ``Sequential``).

    Args:
      shape: the shape of one example, without the batch axis: ``(784,)``.
      batch_size: accepted for Keras compatibility (batches come from the data).
      dtype: the dtype inputs are cast to (e.g. ``"int32"`` for token ids), or
        None to keep theirs.
      name: the input's name (the key of a dict of inputs).
      batch_shape: Keras's alternative to ``shape``: the shape with the batch axis first.

    Returns:
      A symbolic tensor (``KerasTensor``): call layers on it, then
      ``phalanx.Model(inputs, outputs)``; or put it first in a ``Sequential``.

    Example:
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
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.
      dtype: the computation dtype; parameters are float32.

    Example:
      >>> import jax.numpy as jnp
      >>> layer = Dense(128, activation="relu")
      >>> layer.build((784,))
      (128,)
      >>> layer.count_params()
      100480
    """

    _has_activation = True
    _weight_regularizer_paths = (
        ("kernel_regularizer", ("linear", "kernel")),
        ("bias_regularizer", ("linear", "bias")),
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
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
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

    Example:
      >>> import jax.numpy as jnp
      >>> Activation("relu")(jnp.array([[-1.0, 1.0]])).tolist()
      [[0.0, 1.0]]
    """

    _has_activation = True

    def __init__(self, activation: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        _activations.get(activation)
        self.activation = activation

    def pre_activation(self, x, *, training, rngs):
        return self._cast(x)


class Dropout(Layer):
    """Sets a fraction ``rate`` of inputs to 0 in training and scales the rest by ``1/(1-rate)``.

    Built on ``nnx.Dropout``; holds no random state. In training it needs a key:
    ``layer(x, training=True, rngs=key)`` with ``key`` a ``jax.random`` key or
    an ``nnx.Rngs`` (its ``dropout`` stream). A network derives each layer's
    key from the one given to it; the training step gives a fresh key per step
    and replica.

    Args:
      rate: the fraction of inputs to drop, in [0, 1).
      noise_shape: a shape broadcastable to the input (batch axis included)
        whose 1-sized axes share the mask, as Keras.
      seed: an int folded into the key given at call time (so two dropouts fed
        the same key differ).
      name: the layer's name.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> Dropout(0.5)(jnp.ones((1, 4))).tolist()  # inference: identity
      [[1.0, 1.0, 1.0, 1.0]]
    """

    def __init__(
        self,
        rate: float,
        noise_shape: Any = None,
        seed: int | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.rate = _layer_args.rate(type(self).__name__, "rate", rate, one=True)
        self.noise_shape = (
            None if noise_shape is None else normalize_shape(noise_shape, "noise_shape")
        )
        self.seed = seed
        self.dropout = nnx.data(None)

    @property
    def uses_rng(self) -> bool:
        """True when the layer draws random numbers in training (``rate > 0``)."""
        return self.rate > 0.0

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        broadcast = ()
        if self.noise_shape is not None:
            if len(self.noise_shape) != len(input_shape) + 1:
                raise self._error(
                    f"noise_shape {self.noise_shape} must have the input's rank "
                    f"{len(input_shape) + 1} (batch included); input shape "
                    f"{format_shape(input_shape)}."
                )
            broadcast = tuple(i for i, d in enumerate(self.noise_shape) if d == 1)
        self.dropout = nnx.Dropout(self.rate, broadcast_dims=broadcast, rngs=None)

    def call(self, x, *, training, rngs):
        if not training or self.rate == 0.0:
            return x
        if rngs is None:
            raise ValueError(
                f"Layer '{self.name}' (Dropout) needs a random key in training: call "
                "model(x, training=True, rngs=jax.random.key(seed)) with a fresh key "
                "per step (Model.fit does this for you)."
            )
        if isinstance(rngs, nnx.Rngs):
            rngs = rngs.dropout()
        if self.seed is not None:
            rngs = jax.random.fold_in(rngs, self.seed)
        return self.dropout(x, deterministic=False, rngs=rngs)


class Flatten(Layer):
    """Flattens each example to one axis: ``(batch, 7, 7, 64)`` -> ``(batch, 3136)``.

    Example:
      >>> Flatten().compute_output_shape((28, 28))
      (784,)
    """

    def __init__(self, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        if any(d is None for d in input_shape):
            return (None,)
        return (math.prod(input_shape),)

    def call(self, x, *, training, rngs):
        return x.reshape(x.shape[0], -1)


class Reshape(Layer):
    """Reshapes each example to ``target_shape`` (one entry may be -1).

    Args:
      target_shape: the per-example output shape, e.g. ``(28, 28, 1)``.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Example:
      >>> Reshape((28, 28, 1)).compute_output_shape((784,))
      (28, 28, 1)
    """

    def __init__(self, target_shape: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        target = normalize_shape(target_shape, "target_shape")
        if sum(d == -1 for d in target) > 1 or any(d is None or d < -1 for d in target):
            raise LayerArgumentError(
                f"Reshape target_shape holds sizes >= 0 and at most one -1 (inferred), got "
                f"{target}; e.g. Reshape((28, 28, 1)) or Reshape((-1, 1))."
            )
        self.target_shape = target

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        if any(d is None for d in input_shape):
            return tuple(None if d == -1 else d for d in self.target_shape)
        size = math.prod(input_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if known == 0 or size % known:
                raise self._error(self._mismatch(input_shape))
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if known != size:
            raise self._error(self._mismatch(input_shape))
        return self.target_shape

    def _mismatch(self, input_shape: Shape) -> str:
        return (
            f"cannot reshape inputs of shape {format_shape(input_shape)} "
            f"({math.prod(input_shape)} values per example) into target_shape "
            f"{self.target_shape}."
        )

    def _check_input_shape(self, input_shape: Shape) -> None:
        self.compute_output_shape(input_shape)

    def call(self, x, *, training, rngs):
        return x.reshape((x.shape[0], *self.target_shape))


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

    Example:
      >>> layer = Embedding(1000, 64)
      >>> layer.build((10,))
      (10, 64)
      >>> layer.count_params()
      64000
    """

    _weight_regularizer_paths = (("embeddings_regularizer", ("embed", "embedding")),)

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        embeddings_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        activity_regularizer: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        input_length: int | None = None,
    ):
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
        self.embeddings_regularizer = _regularizers.get(embeddings_regularizer)
        self.activity_regularizer = _regularizers.get(activity_regularizer)
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

    def call(self, x, *, training, rngs):
        if not jnp.issubdtype(x.dtype, jnp.integer):
            x = x.astype(jnp.int32)
        return self.embed(x)
