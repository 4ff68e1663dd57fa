"""Keras's introspection of models and layers: ``layers``, ``weights``, ``trainable``.

A model's weights have one home: while a compiled model trains, its
replicated ``TrainState`` (``Model._state``); otherwise the nnx module. The
views here read and write through the model that owns a layer (``claim``
records it), so ``model.get_layer("dense").get_weights()`` after ``fit``
returns the trained values and ``set_weights`` changes what the next step
trains, with no second copy to keep in sync.

``layer.trainable = False`` (or ``model.trainable = False``) freezes weights
as Keras does: from the next ``compile`` the frozen ``nnx.Param`` s leave the
trained half of the split (``trainable_filter``), so they get no gradient,
no optimizer state and no update; they ride with the non-trainable state.
"""

from __future__ import annotations

import json
from typing import Any

from flax import nnx

from .. import saving
from ..errors import KerasFileError
from ..layers import (
    Layer,
    Weight,
    claim,
    weight_views,
)
from . import _keras_config


def top_layers(module: nnx.Module | None) -> list[Layer]:
    """The phalanx layers directly in ``module`` (not those nested inside other layers)."""
    if module is None:
        return []
    listed = getattr(module, "layers", None)
    if isinstance(listed, nnx.List | list | tuple):
        return [layer for layer in listed if isinstance(layer, Layer)]
    found, seen = [], set()
    for path, node in nnx.iter_graph(module):
        if isinstance(node, Layer) and id(node) not in seen:
            found.append((tuple(path), node))
            seen.add(id(node))
    found.sort(key=lambda item: len(item[0]))
    top: list[tuple] = []
    for path, node in found:
        if not any(path[: len(p)] == p for p, _ in top):
            top.append((path, node))
    return [node for _, node in sorted(top, key=lambda item: _path_order(module, item[0]))]


def _path_order(module: nnx.Module, path: tuple) -> int:
    for i, (p, _) in enumerate(nnx.iter_graph(module)):
        if tuple(p) == path:
            return i
    return 0


class ModelIntrospection:
    """Keras's ``layers``/``get_layer``/``weights``/``trainable`` on `phalanx.Model`."""

    def _introspection_module(self) -> nnx.Module | None:
        module = self._module
        if module is not None:
            claim(self, module)
        return module

    @property
    def layers(self) -> list[Layer]:
        """The model's layers, in order (Keras's ``model.layers``)."""
        return top_layers(self._introspection_module())

    @layers.setter
    def layers(self, value: Any) -> None:
        raise AttributeError(
            "`Model.layers` is reserved (it lists the model's layers), as in Keras: name the "
            "attribute otherwise, e.g. self.blocks = [...]."
        )

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """Returns a layer by ``name`` or by ``index`` into ``layers``.

        Raises:
          ValueError: no layer has that name, or the index is out of range.
        """
        layers = self.layers
        if index is not None:
            if not isinstance(index, int) or not -len(layers) <= index < len(layers):
                raise ValueError(
                    f"get_layer(index={index!r}): model {self.name!r} has {len(layers)} layers."
                )
            return layers[index]
        if not isinstance(name, str):
            raise ValueError(f"get_layer takes a name (str) or an index, got {name!r}.")
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(
            f"No such layer: {name!r}. Model {self.name!r} has layers "
            f"{[layer.name for layer in layers]}."
        )

    @property
    def input_shape(self) -> Any:
        """The inputs' shapes, batch axis None: ``(None, 784)``, a list for several (Keras's)."""
        return self._io_shape("input")

    @property
    def output_shape(self) -> Any:
        """The outputs' shapes, batch axis None: ``(None, 10)``, a list for several (Keras's)."""
        return self._io_shape("output")

    def _io_shape(self, which: str) -> Any:
        shape = getattr(self._introspection_module(), f"{which}_shape", None)
        if shape is None:
            raise AttributeError(
                f"Model {self.name!r} has no defined {which} shape yet: start it with "
                "layers.Input(shape=...) (or input_shape= on the first layer), or call it once."
            )
        return _batched(shape)

    def _weight_views(self) -> list[Weight]:
        module = self._introspection_module()
        if module is None or not self.built:
            return []
        return weight_views(module)

    @property
    def weights(self) -> list[Weight]:
        """Every weight (trainable first, then non-trainable), as live views."""
        return self._weight_views()

    @property
    def trainable_weights(self) -> list[Weight]:
        """The weights ``fit`` trains."""
        return [w for w in self._weight_views() if w.trainable]

    @property
    def non_trainable_weights(self) -> list[Weight]:
        """The weights ``fit`` does not train (moving statistics, frozen layers)."""
        return [w for w in self._weight_views() if not w.trainable]

    @property
    def trainable_variables(self) -> list[Weight]:
        """Keras's name for ``trainable_weights``."""
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Weight]:
        """Keras's name for ``non_trainable_weights``."""
        return self.non_trainable_weights

    def get_config(self) -> dict:
        """Keras 3's model config (``Model.get_config``): for a Sequential or functional
        model what ``config.json`` of its ``.keras`` file holds under ``"config"``
        (``name``, ``layers`` with each ``module``, ``class_name``, ``config``,
        ``registered_name``; a functional model's ``inbound_nodes`` and
        ``input_layers``/``output_layers``). Another model (subclassed, an nnx module):
        ``name`` and its ``layers``' ``class_name`` and ``config``, a description only."""
        keras = _keras_description(self)
        if keras is not None:
            return keras["config"]
        layers = [
            {"class_name": type(layer).__name__, "config": layer.get_config(), "name": layer.name}
            for layer in self.layers
        ]
        return {"name": self.name, "layers": layers}

    def to_json(self, **kwargs: Any) -> str:
        """The model as Keras 3's JSON (``kwargs`` go to ``json.dumps``).

        A Sequential or functional model's is what Keras's ``model.to_json()`` writes,
        its ``config.json`` entry with the ``compile_config``: `model_from_json` (and
        Keras's) rebuilds it. Another model's describes it (``TensorBoard(write_graph=
        True)`` writes it), with the subclass's name as ``class_name``.
        """
        keras = _keras_description(self)
        if keras is None:
            keras = {"class_name": type(self).__name__, "config": self.get_config()}
        else:
            keras = {**keras, "compile_config": saving.compile_config(self)}
        return json.dumps(keras, default=str, **kwargs)

    @property
    def trainable(self) -> bool:
        """False freezes every weight in ``fit`` (from the next ``compile``), as Keras."""
        module = self._module
        return True if module is None else getattr(module, "trainable", True) is not False

    @trainable.setter
    def trainable(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"trainable must be True or False, got {value!r}.")
        if self._module is None:
            raise ValueError(
                f"Model {self.name!r} has no layers yet: build it before setting trainable."
            )
        # Keras sets every layer below too (a frozen BatchNormalization then runs in inference
        # mode); setting True again unfreezes them all, as Keras.
        for _, node in nnx.iter_graph(self._module):
            if isinstance(node, Layer) or node is self._module:
                node.trainable = value


def _keras_description(model: Any) -> dict | None:
    """Keras 3's ``serialize_keras_object`` of a Sequential or functional ``model`` without
    its compile config, or None for another model (subclassed, nnx, models as layers)."""
    try:
        return _keras_config.model_config(model)
    except KerasFileError:
        return None


def _batched(shape: Any) -> Any:
    """``(8,)`` -> ``(None, 8)``; several inputs (a list or dict) -> a list, as Keras 3."""
    if isinstance(shape, dict):
        return [_batched(s) for s in shape.values()]
    if isinstance(shape, list):
        return [_batched(s) for s in shape]
    return (None, *shape)
