"""A model's weights seen as Keras sees them: the owner of each layer, trainable filters, weight views.

``get_weights``/``set_weights`` order (Keras's: kernel, gamma, bias/beta, moving mean,
moving variance), the ``Weight`` views a layer's ``weights`` lists, and the filter of
trained weights (``nnx.Param`` outside frozen layers).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import flax.nnx as nnx
import jax
import numpy as np

from ._layer import Layer

WEIGHT_TYPES = (nnx.Param, nnx.BatchStat)


_PRIORITY = {
    "kernel": 0,
    "embedding": 0,
    "recurrent_kernel": 1,
    "scale": 1,
    "bias": 2,
    "mean": 3,
    "var": 4,
}


def weight_paths(state: Any) -> list[str]:
    leaves = jax.tree_util.tree_leaves_with_path(state)
    return [jax.tree_util.keystr(path) for path, _ in leaves]


def _keras_order(state: Any) -> list[int]:
    """Indices of ``state``'s leaves in Keras's order (layer by layer, kernel first)."""
    keyed = jax.tree_util.tree_leaves_with_path(
        state, is_leaf=lambda x: isinstance(x, nnx.Variable)
    )
    parents: dict[str, int] = {}
    keys = []
    for i, (path, leaf) in enumerate(keyed):
        names = [str(getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))) for k in path]
        names = [n for n in names if n != "value"]
        parent = "/".join(names[:-1])
        parents.setdefault(parent, len(parents))
        created = _metadata(leaf).get("keras_order")  # add_weight: creation order, as Keras
        if created is not None:
            keys.append((parents[parent], -1, f"{created:012d}", i))
        else:
            keys.append((parents[parent], _PRIORITY.get(names[-1], 5), names[-1], i))
    return [k[-1] for k in sorted(keys)]


def _metadata(leaf: Any) -> dict:
    if isinstance(leaf, nnx.Variable):
        return leaf.get_metadata()
    return {}


def weights_state(module: nnx.Module) -> Any:
    """The module's weight variables (``Param`` and ``BatchStat``) as an ``nnx.State``."""
    return nnx.state(module, nnx.Any(*WEIGHT_TYPES))


def state_to_list(state: Any) -> list[np.ndarray]:
    """The leaves of a weights state as host numpy arrays, in Keras's order."""
    leaves = jax.tree.leaves(state)
    return [np.asarray(leaves[i]) for i in _keras_order(state)]


def list_to_state(state: Any, values: list) -> Any:
    """Returns ``state`` with its leaves replaced by ``values``, checking every shape.

    Raises:
      ValueError: the number of arrays or one of their shapes does not match.
    """
    leaves, treedef = jax.tree.flatten(state)
    if len(values) != len(leaves):
        raise ValueError(
            f"set_weights expected a list of {len(leaves)} arrays (the model's weights in "
            f"get_weights() order), got {len(values)}."
        )
    paths = weight_paths(state)
    out: list[Any] = [None] * len(leaves)
    for position, i in enumerate(_keras_order(state)):
        old, new = leaves[i], np.asarray(values[position])
        if tuple(new.shape) != tuple(old.shape):
            raise ValueError(
                f"Weight {position} ({paths[i]}) has shape {tuple(old.shape)}, but the value "
                f"given has shape {tuple(new.shape)}. Build the model with the same "
                "architecture first."
            )
        out[i] = new.astype(old.dtype)
    return jax.tree.unflatten(treedef, out)


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
    """``nnx.Param`` when nothing is frozen, else a `TrainableFilter`."""
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
        value = nnx.State.from_flat_path([(self._nnx_path, self._variable)])
        value = jax.tree.map(lambda _: new.astype(self.dtype), value)
        _write(self._root, value)

    def __repr__(self) -> str:
        return f"<Weight path={self.path} shape={self.shape} dtype={self.dtype.name}>"


def _write(node: nnx.Module, values: nnx.State) -> None:
    """Writes ``values`` (weights of ``node``) into ``node`` and, placing only these arrays,
    into its model's training state."""
    owner = owner_of(node)
    if owner is None:
        nnx.update(node, values)
    else:
        owner._place_weights(node, values)


def lookup_path(root: nnx.Module, path: tuple) -> Any:
    node = root
    for key in path:
        node = node[key] if isinstance(key, int) else getattr(node, key)
    return node


def keras_path(root: nnx.Module, path: tuple) -> str:
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
    given = _metadata(lookup_path(root, path)).get("keras_name")
    if given is not None:  # add_weight(name=...)
        return "/".join([*parts, given])
    leaf = (_NORM_NAMES if norm else {}).get(leaf, _KERAS_NAMES.get(leaf, leaf))
    return "/".join([*parts, leaf])


def weight_views(root: nnx.Module) -> list[Weight]:
    """Every weight of ``root`` (``Param`` and ``BatchStat``) as views, in Keras's order."""
    state = weights_state(root)
    flat = [tuple(path) for path, _ in nnx.to_flat_state(state)]
    order = _keras_order(state)
    leaf_paths = [_leaf_path(p) for p, _ in jax.tree_util.tree_leaves_with_path(state)]
    by_leaf = {p: p for p in flat}
    trained = nnx.filterlib.to_predicate(trainable_filter(root))
    views = []
    for i in order:
        path = by_leaf[leaf_paths[i]]
        variable = lookup_path(root, path)
        views.append(Weight(root, path, variable, keras_path(root, path), trained(path, variable)))
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
    return state_to_list(weights_state(layer))


def set_weights(layer: nnx.Module, values: Sequence[Any]) -> None:
    """Sets ``layer``'s weights from a ``get_weights()``-ordered list, in its model too."""
    if not getattr(layer, "built", True):
        raise ValueError(
            f"Layer {getattr(layer, 'name', '')!r} is not built, so it has no weights to set: "
            "build it (or the model) first."
        )
    _write(layer, list_to_state(weights_state(layer), list(values)))


# -- which state is trained and which is carried: the filters a training step splits by
#
# ``TRAINABLE`` (``nnx.Param``) are the weights the optimizer updates; ``NON_TRAINABLE``
# (``nnx.BatchStat``) the moving statistics of batch normalization, updated by training
# calls and averaged over replicas by the step. Anything else in a module's state (a user
# module's own ``nnx.RngState``) is neither: carried unchanged.

#: The nnx filter of trainable weights (Keras's ``trainable_weights``).
TRAINABLE = nnx.Param
#: The nnx filter of non-trainable state averaged over replicas (moving statistics).
NON_TRAINABLE = nnx.BatchStat


def split_state(module: nnx.Module):
    """Splits a built module into ``(graphdef, trainable, non_trainable, rest)``.

    ``nnx.merge(graphdef, trainable, non_trainable, rest)`` rebuilds it.

    Args:
      module: a built ``Sequential`` or any ``nnx.Module``.

    Returns:
      The graph definition and three ``nnx.State`` pytrees.

    Examples:
      >>> from phalanx import layers
      >>> from phalanx.models._network import Sequential
      >>> net = Sequential([layers.Dense(2, input_shape=(3,)), layers.BatchNormalization()])
      >>> _ = net.build()
      >>> graphdef, params, stats, rest = split_state(net)
      >>> layers.count_params(net, TRAINABLE), layers.count_params(net, NON_TRAINABLE)
      (12, 4)
    """
    return nnx.split(module, TRAINABLE, NON_TRAINABLE, ...)
