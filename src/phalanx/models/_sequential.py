"""``Sequential``: Keras's ``Sequential`` model, a ``Model`` over a stack of layers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import ModelArgumentError
from ..layers import Layer
from ._model import Model, _per_example
from ._network import Sequential as _Network


class Sequential(Model):
    """A linear stack of layers with Keras's training API.

    Args:
      layers: the layers, first to last (``phalanx.layers.Dense(...)`` ...). The
        first may be ``layers.Input(shape=...)`` or carry ``input_shape=``;
        otherwise the model is built from the first batch it sees.
      name: the model's name.

    Examples:
      >>> import numpy as np
      >>> from phalanx import Sequential, layers
      >>> model = Sequential([layers.Dense(4, activation="relu"), layers.Dense(1)])
      >>> model.compile(optimizer="adam", loss="mse")
      >>> model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0).epoch
      [0]
    """

    def __init__(self, layers: Iterable[Layer] | None = None, *, name: str | None = None):
        if isinstance(layers, str | bytes) or not (layers is None or isinstance(layers, Iterable)):
            raise ModelArgumentError(
                f"Sequential takes a list of layers, got {layers!r:.60} ({type(layers).__name__}). "
                "Write Sequential([layers.Input(shape=(3,)), layers.Dense(1)]), or "
                "Sequential() and then model.add(layer)."
            )
        super().__init__(_Network(layers, name=name), name=name or "sequential")
        if self._module.input_shape is not None and len(self._module.layers):
            self._module.build()  # Keras builds a model that starts with an Input at once

    @property
    def layers(self) -> list[Layer]:
        """The layers, first to last."""
        return list(self._module.layers)

    def add(self, layer: Layer) -> None:
        """Appends a layer (before the model is compiled)."""
        self._module.add(layer)
        if self._module.input_shape is not None:
            self._module.build()

    def pop(self) -> Layer:
        """Removes and returns the last layer (before the model is built)."""
        return self._module.pop()

    def build(self, input_shape: Sequence[int | None] | None = None) -> None:
        """Creates the weights for inputs of ``input_shape``.

        Keras's batch shape (``(None, 28, 28, 1)``: a leading None is the batch
        axis) or the shape of one example (``(28, 28, 1)``).
        """
        if not self.built:
            self._module.build(None if input_shape is None else _per_example(input_shape))
