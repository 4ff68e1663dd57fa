"""Keras's ``TimeDistributed``: one layer applied to every step of a sequence.

As ``keras/src/layers/rnn/time_distributed.py``: inputs are ``(batch, time, ...)``;
the wrapped layer is built for one step's shape ``(batch, ...)`` and applied to
every step with the same weights. phalanx folds the batch and time axes into one
(``(batch * time, ...)``), calls the layer once and unfolds its output; Keras
calls it step by step (a Python loop over a known time axis). The two agree for
every layer that treats the examples of a batch independently (``Dense``,
``Conv2D``, ``LSTM``, ...); a layer using the batch's statistics in training
(``BatchNormalization``) sees all ``batch * time`` examples at once here (one
batch per step in Keras, which also updates its moving statistics once per step).

The weights are the wrapped layer's (``get_weights`` in its order, as Keras's),
trained by ``fit`` unless either layer is frozen. ``training`` is passed on; a
mask ``(batch, time, ...)`` is passed, folded as the inputs, to a wrapped layer
whose ``call`` takes one, and the output's mask is the input's, as Keras.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from ..errors import LayerArgumentError
from ._layer import Layer, Shape, format_shape, snake_case, takes_mask
from ._recurrent import RNN, Bidirectional


class TimeDistributed(Layer):
    """Keras's ``TimeDistributed(layer)``: applies ``layer`` to every timestep (axis 1).

    Args:
      layer: the layer to apply to each step (unbuilt, or built for one step's shape).
      name: the layer's name.
      input_shape: the per-example input shape ``(time, ...)``, on a network's first layer.

    Raises:
      LayerArgumentError: ``layer`` is not a layer.

    Examples:
      >>> import jax.numpy as jnp
      >>> from phalanx.layers import Conv2D, Dense
      >>> TimeDistributed(Dense(3))(jnp.ones((2, 5, 4))).shape
      (2, 5, 3)
      >>> TimeDistributed(Conv2D(4, 3))(jnp.ones((2, 10, 8, 8, 3))).shape
      (2, 10, 6, 6, 4)
    """

    supports_masking = True

    def __init__(self, layer: Layer, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        if not isinstance(layer, Layer):
            raise LayerArgumentError(
                "Please initialize `TimeDistributed` layer with a layer instance (e.g. "
                f"TimeDistributed(layers.Dense(8))). Received: {layer!r} "
                f"({type(layer).__name__})."
            )
        if layer.name is None:  # Keras names a layer when it is made
            layer.name = snake_case(type(layer).__name__)
        self.layer = layer

    @property
    def uses_rng(self) -> bool:
        """True when the wrapped layer draws random numbers in training (``Dropout``)."""
        return self.layer.uses_rng

    def _step_shape(self, input_shape: Shape) -> Shape:
        """One step's per-example shape (``input_shape`` without its time axis)."""
        if len(input_shape) < 2:
            raise self._error(
                "should be passed inputs with at least 3 dimensions (batch, time, ...), "
                f"received shape {format_shape(input_shape)}. Give it sequences: "
                "Input((time, features)), or Reshape the inputs first."
            )
        return tuple(input_shape[1:])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self.layer._check_input_shape(self._step_shape(input_shape))

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        step = self.layer.compute_output_shape(self._step_shape(input_shape))
        return (input_shape[0], *step)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        if not self.layer.built:
            self.layer._build_example(self._step_shape(input_shape), rngs)

    def check_input(self, x: Any) -> None:
        """Checks the rank; the wrapped layer checks each step's shape when called."""
        if jnp.ndim(x) < 3:
            self._step_shape(tuple(jnp.shape(x))[1:])

    def _check_mask(self, x: jax.Array, mask: Any) -> None:
        """Keras's checks: a mask of at least 2 axes whose batch and time sizes are the input's."""
        shape = tuple(jnp.shape(mask))
        if len(shape) < 2:
            raise self._error(
                "was passed a `mask` that must be at least 2D (e.g. `(batch_size, timesteps)`), "
                f"but it has {len(shape)} dimension(s) with shape {shape}."
            )
        if shape[:2] != tuple(x.shape[:2]):
            raise self._error(
                f"was passed a `mask` of shape {shape} that is incompatible with the input "
                f"shape {tuple(x.shape)}: the first two dimensions of the mask (batch size and "
                f"timesteps) must be the input's, ({x.shape[0]}, {x.shape[1]})."
            )

    def call(self, x, *, training, rngs, mask=None):
        batch, time = x.shape[:2]
        options = {}
        if mask is not None:
            self._check_mask(x, mask)
            if takes_mask(self.layer):
                mask = jnp.asarray(mask)
                options["mask"] = mask.reshape((batch * time, *mask.shape[2:]))
        steps = x.reshape((batch * time, *x.shape[2:]))
        out = self.layer(steps, training=training, rngs=rngs, **options)
        return jax.tree.map(lambda y: y.reshape((batch, time, *y.shape[1:])), out)

    def _keras_weight_groups(self) -> list[tuple[str, int]]:
        """Keras 3's ``.weights.h5`` groups: the wrapped layer's, under ``layer/``."""
        if isinstance(self.layer, RNN | Bidirectional):
            groups = self.layer._keras_weight_groups()
        else:
            groups = [("", len(self.layer.get_weights()))]
        return [(f"layer/{sub}", count) for sub, count in groups]

    def get_config(self) -> dict:
        """Keras's: name, trainable, dtype and the wrapped layer's class and config."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": None,
            "layer": {"class_name": type(self.layer).__name__, "config": self.layer.get_config()},
        }

    @classmethod
    def from_config(cls, config: dict) -> TimeDistributed:
        """Rebuilds the wrapper from `get_config` (the layer by its class name).

        Raises:
          LayerArgumentError: the wrapped layer's class is not a layer phalanx knows.
        """
        config = dict(config)
        entry = config.pop("layer")
        layer = _layer_class(entry["class_name"]).from_config(entry["config"])
        out = cls(layer, name=config.get("name"))
        out.trainable = config.get("trainable", True)
        return out


def _subclasses(cls: type) -> list[type]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _subclasses(sub))]


def _layer_class(name: str) -> type:
    """The layer class called ``name``: phalanx's, else the one layer of one's own so named.

    Raises:
      LayerArgumentError: no layer class, or several of one's own, have that name.
    """
    named = [c for c in _subclasses(Layer) if c.__name__ == name and not name.startswith("_")]
    phalanx_classes = [c for c in named if c.__module__.startswith("phalanx.layers.")]
    found = phalanx_classes or named
    if len(found) != 1:
        raise LayerArgumentError(
            f"TimeDistributed.from_config: found {len(found)} layer classes named {name!r}; "
            "expected one (a phalanx layer, or one layer class of your own of that name). "
            "Define or import the layer's class before from_config."
        )
    return found[0]
