"""``Sequential``: Keras layers stacked into one ``nnx.Module``.

A ``Sequential`` is a single flax.nnx graph node holding its layers in an
``nnx.List``, so ``nnx.split``/``nnx.merge``/``nnx.state`` work on it at the
jit boundary once it is built. Protocols a training step relies on:

**Building.** ``net.build(input_shape, seed=0)`` (or ``rngs=nnx.Rngs(...)``)
creates every weight eagerly from the per-example input shape (no batch axis);
it is idempotent, and ``Input(shape=...)`` or the first layer's
``input_shape=`` lets ``build()`` run without arguments. Calling an unbuilt
network eagerly builds it from the batch (seed 0); calling it on traced values
raises `phalanx.errors.NotBuiltError`.

**Calling.** ``net(x, *, training=False, rngs=None, return_logits=False)``.
``training`` switches dropout on and batch normalization to batch statistics
(and updates the moving statistics in place, see below). With
``return_logits=True`` it returns ``(y_pred, logits)`` where ``logits`` is a
`phalanx.train.Logits` when the last layer ends in softmax/sigmoid,
else None (the logits protocol, in `phalanx.losses._logits`).

**Random keys (dropout).** The network holds no random state. A training
call needs ``rngs``: a ``jax.random`` key (each random layer uses
``fold_in(key, layer_index)``) or an ``nnx.Rngs`` (its ``dropout`` stream).
The step must give a fresh key per step and a different one per replica, e.g.
``jax.random.fold_in(jax.random.fold_in(base_key, step), replica_id)`` inside
``strategy.run``; ``net.needs_rng`` says whether any layer uses it.

**Non-trainable state (batch normalization).** Moving statistics are
``nnx.BatchStat`` variables (``phalanx.train.NON_TRAINABLE``), trainable
weights ``nnx.Param`` (``phalanx.train.TRAINABLE``). A training call updates
the ``BatchStat`` leaves in place: after
``net = nnx.merge(graphdef, params, stats)`` and ``net(x, training=True)``,
``nnx.state(net, NON_TRAINABLE)`` is this replica's new statistics; average
it over replicas (``lax.pmean``) to keep every replica's copy identical.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from .. import regularizers
from .._random import model_seed
from ..activations import LOGIT_ACTIVATIONS
from ..errors import LayerShapeError, ModelArgumentError, NotBuiltError
from ..layers import (
    Dense,
    Flatten,
    GlobalAveragePooling2D,
    InputLayer,
    Layer,
    Shape,
    format_shape,
    is_symbolic,
    is_traced,
    normalize_shape,
    output_mask,
    record_output_mask,
    shapes_match,
    snake_case,
    takes_mask,
)
from ..losses import _losses
from ..losses._logits import Logits
from ._summary import format_summary


def _check_dtype(name: str, x: Any) -> None:
    dtype = jnp.dtype(x.dtype)
    if not (jnp.issubdtype(dtype, jnp.number) or dtype == jnp.bool_):
        raise LayerShapeError(
            f"Sequential '{name}' received inputs of dtype {dtype}; it takes numbers "
            "(float or int arrays). Convert the data first (e.g. np.asarray(x, np.float32))."
        )
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise LayerShapeError(
            f"Sequential '{name}' received complex inputs ({dtype}); its layers take real "
            "numbers. Split real and imaginary parts into features."
        )


class Sequential(nnx.Module):
    """A linear stack of layers, as ``keras.Sequential``, that is one ``nnx.Module``.

    Args:
      layers: the layers, in order; an ``Input(shape=...)`` first declares the
        input shape.
      name: the network's name; default ``"sequential"``.

    Examples:
      >>> from phalanx import layers
      >>> net = Sequential([layers.Input(shape=(784,)), layers.Dense(128, activation="relu"),
      ...                   layers.Dense(10, activation="softmax")])
      >>> net.build()
      (10,)
      >>> [layer.name for layer in net.layers], net.count_params()
      (['dense', 'dense_1'], 101770)
    """

    def __init__(self, layers: Iterable[Layer] | None = None, *, name: str | None = None):
        self.name = name or "sequential"
        self.layers = nnx.List([])
        self.input_shape: Shape | None = None
        self.input_dtype = None
        self.keras_input_dtype = "float32"
        self.built = False
        self.output_shape: Shape | None = None
        for layer in layers or ():
            self.add(layer)

    # -- structure -------------------------------------------------------------------
    def add(self, layer: Layer) -> None:
        """Appends a layer (or sets the input shape, for an ``Input``).

        Raises:
          TypeError: ``layer`` is not a phalanx layer.
          ValueError: a second ``Input``, or a name already taken.
        """
        if is_symbolic(layer) and isinstance(layer.node.layer, InputLayer):
            layer = layer.node.layer  # Input(shape=...): a symbolic tensor, as in Keras
        if isinstance(layer, InputLayer):
            if len(self.layers) or self.input_shape is not None:
                raise ValueError(
                    f"Input(shape={layer.declared_input_shape}) must be the first element "
                    f"of Sequential '{self.name}'; it already has an input or layers."
                )
            self.input_shape = layer.declared_input_shape
            self.input_dtype = layer.dtype
            # What Keras's config says: "string" inputs (kept as they are), or the dtype.
            self.keras_input_dtype = "string" if layer.strings else str(layer.dtype or "float32")
            return
        if not isinstance(layer, Layer):
            raise ModelArgumentError(
                f"Sequential.add takes phalanx layers (phalanx.layers.Dense, ...), got "
                f"{layer!r:.60} ({type(layer).__name__}). Wrap a custom nnx.Module as its own "
                "model instead."
            )
        if not len(self.layers) and self.input_shape is None:
            self.input_shape = layer.declared_input_shape
        layer.name = self._unique_name(layer)
        self.layers.append(layer)
        self.built = False

    def pop(self) -> Layer:
        """Removes and returns the last layer."""
        if not len(self.layers):
            raise IndexError(f"Sequential '{self.name}' has no layers to pop.")
        layer = self.layers.pop()
        self.built = False
        return layer

    def _unique_name(self, layer: Layer) -> str:
        taken = {existing.name for existing in self.layers}
        if layer.name is not None:
            if layer.name in taken:
                raise ValueError(
                    f"Sequential '{self.name}' already has a layer named '{layer.name}'; "
                    "layer names must be unique."
                )
            return layer.name
        base = snake_case(type(layer).__name__)
        name, i = base, 0
        while name in taken:
            i += 1
            name = f"{base}_{i}"
        return name

    # -- building --------------------------------------------------------------------
    def build(
        self,
        input_shape: Any = None,
        *,
        seed: int | None = None,
        rngs: nnx.Rngs | None = None,
    ) -> Shape:
        """Creates every layer's weights for a per-example ``input_shape``.

        Layers already built for the same shape keep their weights.

        Args:
          input_shape: the shape of one example (no batch axis); None uses the
            shape from ``Input`` or the first layer's ``input_shape=``.
          seed: the initialization seed when ``rngs`` is None: default 0, or drawn
            from ``phalanx.utils.set_random_seed``'s stream once it was called.
          rngs: an ``nnx.Rngs`` whose ``params`` stream initializes the weights.

        Returns:
          The per-example output shape.

        Raises:
          ValueError: no input shape is known.
          LayerShapeError: a layer cannot take the shape it receives (the
            message names the layer).
        """
        shape = normalize_shape(input_shape)
        if shape is None:
            shape = self.input_shape
        if shape is None:
            raise ValueError(
                f"Sequential '{self.name}' does not know its input shape: call "
                "build(input_shape) with the shape of one example (e.g. (784,)), or start "
                "the model with layers.Input(shape=...)."
            )
        if self.input_shape is not None and not shapes_match(self.input_shape, shape):
            raise LayerShapeError(
                f"Sequential '{self.name}' declares inputs of shape "
                f"{format_shape(self.input_shape)}, but build() was given "
                f"{format_shape(shape)}."
            )
        rngs = rngs if rngs is not None else nnx.Rngs(model_seed() if seed is None else seed)
        self.input_shape = shape
        for layer in self.layers:
            if layer.built and shapes_match(layer.built_input_shape, shape):
                shape = layer.output_shape
            else:
                shape = layer._build_example(shape, rngs)
        self.output_shape = shape
        self.built = True
        return shape

    def compute_output_shape(self, input_shape: Any) -> Shape:
        """Returns the per-example output shape for a per-example input shape, without building."""
        shape = normalize_shape(input_shape)
        for layer in self.layers:
            layer._check_input_shape(shape)
            shape = normalize_shape(layer.compute_output_shape(shape))
        return shape

    # -- calling ---------------------------------------------------------------------
    @property
    def needs_rng(self) -> bool:
        """True when a training call draws random numbers (a Dropout with rate > 0)."""
        return any(getattr(layer, "uses_rng", False) for layer in self.layers)

    @property
    def output_activation(self) -> str | None:
        """``"softmax"``/``"sigmoid"`` when the last layer ends in one (logits exist), else None."""
        if not len(self.layers):
            return None
        name = self.layers[-1].activation_name
        return name if name in LOGIT_ACTIVATIONS else None

    def check_input_spec(self, shape: Any, dtype: Any = jnp.float32) -> None:
        """Raises `LayerShapeError` when a batch of ``shape``/``dtype`` does not fit.

        ``shape`` includes the batch axis. Call it before compiling a step.
        """
        shape = tuple(shape)
        _check_dtype(self.name, jax.ShapeDtypeStruct(shape, dtype))
        if self.built and not shapes_match(self.input_shape, shape[1:]):
            raise LayerShapeError(self._input_mismatch(shape))

    def _input_mismatch(self, shape: tuple) -> str:
        first = self.layers[0] if len(self.layers) else None
        where = f" (its first layer '{first.name}' ({type(first).__name__}))" if first else ""
        msg = (
            f"Sequential '{self.name}'{where} was built for inputs of shape "
            f"{format_shape(self.input_shape)}, received {format_shape(shape[1:], shape[0])}."
        )
        expected, received = self.input_shape, shape[1:]
        if len(expected) == 1 and len(received) > 1 and expected[0] == _prod(received):
            msg += " Flatten the examples first (x.reshape(len(x), -1)) or add layers.Flatten()."
        elif len(received) == 1 and len(expected) > 1 and received[0] == _prod(expected):
            msg += f" Reshape the examples to {tuple(expected)} (layers.Reshape)."
        else:
            msg += (
                f" Give x examples of shape {tuple(expected)}, or build the model for the data"
                f" (layers.Input(shape={tuple(received)}))."
            )
        return msg

    def _random_key(self, rngs: Any, index: int) -> Any:
        if rngs is None or isinstance(rngs, nnx.Rngs):
            return rngs
        return jax.random.fold_in(rngs, index)

    def __call__(
        self,
        x: Any,
        *,
        training: bool = False,
        rngs: Any = None,
        return_logits: bool = False,
        mask: Any = None,
    ):
        """Applies the layers to a batch ``x`` (leading batch axis).

        Args:
          x: the batch, shape ``[batch, *input_shape]``.
          training: True in a training step.
          rngs: a ``jax.random`` key or ``nnx.Rngs`` for dropout in training.
          return_logits: return ``(y_pred, logits)`` instead of ``y_pred``.
          mask: Keras's mask of the input (a nested model's), or None.

        Returns:
          ``y_pred``, or ``(y_pred, logits)`` with ``logits`` a ``Logits`` or None.

        Raises:
          NotBuiltError: the network is unbuilt and ``x`` is traced.
          LayerShapeError: ``x`` does not have the shape or dtype the network takes.
        """
        if not self.built:
            if is_traced(x):
                raise NotBuiltError(
                    f"Sequential '{self.name}' is not built and was called inside a jitted "
                    "function. Call build(input_shape) before jit."
                )
            x = jnp.asarray(x)
            self.build(x.shape[1:])
        _check_dtype(self.name, x)
        if not shapes_match(self.input_shape, tuple(x.shape[1:])):
            raise LayerShapeError(self._input_mismatch(tuple(x.shape)))
        if self.input_dtype is not None:
            x = x.astype(self.input_dtype)
        activation = self.output_activation if return_logits else None
        count = len(self.layers)
        # Keras's masks: the one given (a nested model's input), Embedding(mask_zero=True),
        # Masking, ... to the layers after
        for i, layer in enumerate(self.layers):
            key = self._random_key(rngs, i) if getattr(layer, "uses_rng", False) else None
            if i == count - 1 and activation is not None:
                layer.check_input(x)
                logits = layer.pre_activation(x, training=training, rngs=key)
                y_pred = layer._record_activity(layer.activation_fn(logits))
                record_output_mask(self, output_mask(layer, x, mask))
                return y_pred, Logits(logits, activation)
            given = {"mask": mask} if mask is not None and takes_mask(layer) else {}
            x, mask = layer(x, training=training, rngs=key, **given), output_mask(layer, x, mask)
        record_output_mask(
            self, mask
        )  # Keras's mask of the output (the compiled loss weighs by it)
        return (x, None) if return_logits else x

    # -- inspection ------------------------------------------------------------------
    @property
    def losses(self) -> list[jax.Array]:
        """Keras's ``losses``: the layers' activity penalties of the last call, then their
        weight penalties (float32 scalars; see `phalanx.regularizers`)."""
        return regularizers.losses(self)

    def count_params(self) -> int:
        """Returns the number of weights (trainable plus non-trainable), as Keras."""
        return sum(layer.count_params() for layer in self.layers)

    def summary(self, *, line_length: int | None = None, print_fn: Any = None) -> None:
        """Prints a Keras-style table: layer (type), output shape, parameter count, totals.

        Args:
          line_length: the table's width; default fits the content.
          print_fn: called with the text (default ``print``).

        Raises:
          NotBuiltError: the network is not built (shapes unknown).
        """
        if not self.built:
            raise NotBuiltError(
                f"Sequential '{self.name}' is not built, so its shapes are unknown: call "
                "build(input_shape) (or start it with layers.Input(shape=...)) first."
            )
        (print_fn or print)(format_summary(self, line_length=line_length))

    def check_target_shape(self, y_true_shape: Any, loss: Any = None) -> None:
        """Raises `LayerShapeError` when targets of ``y_true_shape`` cannot meet the output.

        Args:
          y_true_shape: the per-example target shape (no batch axis).
          loss: the loss (object or name); its rule decides which shapes fit.

        Raises:
          LayerShapeError: the shapes do not fit; the message names the last
            layer and, for a Dense applied to images, suggests ``Flatten``.
        """
        if not self.built or not len(self.layers):
            return
        problem = _losses.get(loss).check_shapes(tuple(y_true_shape), self.output_shape)
        if problem is None:
            return
        last = self.layers[-1]
        msg = (
            f"The output of Sequential '{self.name}' (last layer '{last.name}' "
            f"({type(last).__name__}), shape {format_shape(self.output_shape)}) does not fit "
            f"targets of shape {format_shape(tuple(y_true_shape))}: {problem}"
        )
        hint = self._flatten_hint()
        raise LayerShapeError(msg + (f" {hint}" if hint else ""))

    def _flatten_hint(self) -> str:
        for layer in self.layers:
            if isinstance(layer, Flatten | GlobalAveragePooling2D):
                return ""
            if isinstance(layer, Dense) and len(layer.built_input_shape or ()) >= 2:
                return (
                    f"Layer '{layer.name}' (Dense) receives inputs of shape "
                    f"{format_shape(layer.built_input_shape)} and acts on their last axis "
                    "only: add layers.Flatten() or layers.GlobalAveragePooling2D() before it."
                )
        return ""


def _prod(shape) -> int | None:
    total = 1
    for d in shape:
        if d is None:
            return None
        total *= d
    return total
