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

import weakref
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx

from ..layers._layer import Layer
from ..saving import _npz as _weights

# Keras's names of the weights nnx calls kernel/bias/scale/mean/var/embedding.
_KERAS_NAMES = {"embedding": "embeddings", "mean": "moving_mean", "var": "moving_variance"}
_NORM_NAMES = {"scale": "gamma", "bias": "beta"}

_OWNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def claim(model: Any, module: nnx.Module | None) -> None:
    """Records ``model`` as the owner of every phalanx layer in ``module``."""
    if module is None:
        return
    ref = weakref.ref(model)
    for _, node in nnx.iter_graph(module):
        if isinstance(node, Layer):
            _OWNERS[node] = ref


def owner_of(layer: nnx.Module) -> Any:
    """The model that owns ``layer`` (its weights may live in the model's state), or None."""
    ref = _OWNERS.get(layer)
    return None if ref is None else ref()


def _synced(module: nnx.Module) -> None:
    owner = owner_of(module)
    if owner is not None:
        owner._sync_module()


class TrainableFilter:
    """The nnx filter of trained weights: ``nnx.Param`` s outside frozen modules.

    Hashable and comparable by its frozen paths, so ``nnx.Not(filter)`` and
    graph caches behave.
    """

    def __init__(self, frozen: Sequence[tuple]):
        self.frozen = tuple(sorted(set(frozen), key=repr))

    def __call__(self, path: tuple, value: Any) -> bool:
        if not isinstance(value, nnx.Param):
            return False
        return not any(tuple(path[: len(f)]) == f for f in self.frozen)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TrainableFilter) and other.frozen == self.frozen

    def __hash__(self) -> int:
        return hash(self.frozen)

    def __repr__(self) -> str:
        return f"TrainableFilter(frozen={list(self.frozen)})"


def frozen_paths(module: nnx.Module) -> list[tuple]:
    """The graph paths of the modules whose ``trainable`` is False."""
    return [
        tuple(path)
        for path, node in nnx.iter_graph(module)
        if isinstance(node, nnx.Module) and getattr(node, "trainable", True) is False
    ]


def trainable_filter(module: nnx.Module) -> Any:
    """``nnx.Param`` when nothing is frozen, else a :class:`TrainableFilter`."""
    frozen = frozen_paths(module)
    return TrainableFilter(frozen) if frozen else nnx.Param


class Weight:
    """A live view of one weight, as a Keras variable: ``name``, ``path``, ``numpy()``, ``assign``.

    Reads return the value the owning model holds now (after ``fit``, the
    trained one); ``assign`` writes it there.
    """

    def __init__(
        self, root: nnx.Module, path: tuple, variable: nnx.Variable, name: str, trainable: bool
    ):
        self._trainable = trainable
        self._root = root
        self._variable = variable
        self.path = name
        self.name = name.rsplit("/", 1)[-1]
        self._nnx_path = path

    @property
    def trainable(self) -> bool:
        """Whether ``fit`` trains this weight (a ``Param`` outside frozen layers)."""
        return self._trainable

    @property
    def shape(self) -> tuple[int, ...]:
        """The weight's shape."""
        return tuple(np.shape(self._variable.get_value()))

    @property
    def dtype(self) -> np.dtype:
        """The weight's dtype."""
        return np.dtype(self._variable.get_value().dtype)

    @property
    def value(self) -> np.ndarray:
        """The current value (numpy)."""
        _synced(self._root)
        return np.asarray(jax.device_get(self._variable.get_value()))

    def numpy(self) -> np.ndarray:
        """The current value as a numpy array (Keras's ``variable.numpy()``)."""
        return self.value

    def __array__(self, dtype=None, copy=None):
        value = self.value
        return value if dtype is None else value.astype(dtype)

    def assign(self, value: Any) -> None:
        """Sets the weight (same shape); the owning model trains from it next.

        Raises:
          ValueError: the shape differs.
        """
        new = np.asarray(value)
        if new.shape != self.shape:
            raise ValueError(
                f"Weight {self.path!r} has shape {self.shape}, got a value of shape {new.shape}."
            )
        _synced(self._root)
        self._variable.set_value(jax.numpy.asarray(new, self.dtype))
        _reload_owner(self._root)

    def __repr__(self) -> str:
        return f"<Weight path={self.path} shape={self.shape} dtype={self.dtype.name}>"


def _reload_owner(module: nnx.Module) -> None:
    owner = owner_of(module)
    if owner is not None and owner._state is not None:
        owner._load_state(_weights.weights_state(owner._module))


def _lookup(root: nnx.Module, path: tuple) -> Any:
    node = root
    for key in path:
        node = node[key] if isinstance(key, int) else getattr(node, key)
    return node


def _keras_path(root: nnx.Module, path: tuple) -> str:
    """``dense/kernel``: the names of the layers on the way, then Keras's weight name."""
    parts, node, norm = [], root, False
    if isinstance(root, Layer):
        parts.append(root.name or type(root).__name__.lower())
    for key in path[:-1]:
        node = node[key] if isinstance(key, int) else getattr(node, key)
        if isinstance(node, Layer):
            parts.append(node.name or type(node).__name__.lower())
        norm = norm or isinstance(node, nnx.BatchNorm | nnx.LayerNorm)
    leaf = str(path[-1])
    leaf = (_NORM_NAMES if norm else {}).get(leaf, _KERAS_NAMES.get(leaf, leaf))
    return "/".join([*parts, leaf])


def weight_views(root: nnx.Module) -> list[Weight]:
    """Every weight of ``root`` (``Param`` and ``BatchStat``) as views, in Keras's order."""
    state = _weights.weights_state(root)
    flat = [tuple(path) for path, _ in nnx.to_flat_state(state)]
    order = _weights._keras_order(state)
    leaf_paths = [_leaf_path(p) for p, _ in jax.tree_util.tree_leaves_with_path(state)]
    by_leaf = {p: p for p in flat}
    trained = nnx.filterlib.to_predicate(trainable_filter(root))
    views = []
    for i in order:
        path = by_leaf[leaf_paths[i]]
        variable = _lookup(root, path)
        views.append(Weight(root, path, variable, _keras_path(root, path), trained(path, variable)))
    trained = [w for w in views if w.trainable]
    return trained + [w for w in views if not w.trainable]


def _leaf_path(keys) -> tuple:
    out = []
    for k in keys:
        if isinstance(k, jax.tree_util.GetAttrKey) and k.name == "value":
            continue
        out.append(getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))))
    return tuple(out)


def get_weights(layer: nnx.Module) -> list[np.ndarray]:
    """``layer``'s weights as numpy arrays, in Keras's order, read from its model if compiled."""
    _synced(layer)
    return _weights.state_to_list(_weights.weights_state(layer))


def set_weights(layer: nnx.Module, values: Sequence[Any]) -> None:
    """Sets ``layer``'s weights from a ``get_weights()``-ordered list, in its model too."""
    if not getattr(layer, "built", True):
        raise ValueError(
            f"Layer {getattr(layer, 'name', '')!r} is not built, so it has no weights to set: "
            "build it (or the model) first."
        )
    _synced(layer)
    nnx.update(layer, _weights.list_to_state(_weights.weights_state(layer), list(values)))
    _reload_owner(layer)


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
    """Keras's ``layers``/``get_layer``/``weights``/``trainable`` on :class:`phalanx.Model`."""

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
        """Keras's model config: ``name`` and ``layers`` (each ``class_name``, ``config``, and
        for functional models ``inbound_nodes``, Keras's ``[[layer, node, tensor, {}]]``)."""
        module = self._introspection_module()
        inbound = getattr(module, "inbound_nodes", None)
        layers = []
        for layer in self.layers:
            entry = {"class_name": type(layer).__name__, "config": layer.get_config()}
            entry["name"] = layer.name
            if inbound is not None:
                entry["inbound_nodes"] = inbound(layer.name)
            layers.append(entry)
        return {"name": self.name, "layers": layers}

    def to_json(self, **kwargs: Any) -> str:
        """The model's config as JSON, as Keras's ``to_json`` (``kwargs`` go to ``json.dumps``).

        It describes the model (``TensorBoard(write_graph=True)`` writes it); the
        ``class_name`` is ``Sequential``, ``Functional`` or the subclass's name.
        """
        import json

        from ._functional import Functional

        module = self._module
        kind = type(self).__name__
        if isinstance(module, Functional):
            kind = "Functional"
        config = {"class_name": kind, "config": self.get_config(), "backend": "jax"}
        return json.dumps(config, default=str, **kwargs)

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
        self._module.trainable = value


def _batched(shape: Any) -> Any:
    """``(8,)`` -> ``(None, 8)``; several inputs (a list or dict) -> a list, as Keras 3."""
    if isinstance(shape, dict):
        return [_batched(s) for s in shape.values()]
    if isinstance(shape, list):
        return [_batched(s) for s in shape]
    return (None, *shape)
