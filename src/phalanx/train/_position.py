"""A model's whole training state as named arrays plus JSON, for ``phalanx.checkpoint``.

``Model._state`` (a ``_step.TrainState``) is the one authoritative training
state: parameters, non-trainable state, optimizer state, step, RNG key and
the metric accumulators. ``fit``, the callbacks (through ``get_weights``,
``set_weights`` and ``model.optimizer.learning_rate``, which read and write
it), and checkpoints all go through it; the nnx module is a view refreshed
from it (``Model.module``). Next to it the model keeps its *training
position* (``TrainPosition``): the epoch, the steps done in it and the input
iterator's state after them, updated with the state at every execution, so
a checkpoint saved at any point holds a consistent pair.

A checkpoint stores every leaf of the state under a readable name
(``params/layers/0/linear/kernel``, ``opt_state/inner_state/0/mu/...``,
``step``, ``rng``), with its shape and dtype in the manifest, so a
checkpoint of another model is refused before any data is read, with the
arrays that differ named. PRNG keys are stored as their raw key data.

The checkpoint layer sees a model only through the protocol it declares
(``phalanx.checkpoint._objects.Trainable``, since ``checkpoint`` sits below
``train`` in DESIGN.md's layers): ``_checkpoint_items()``,
``_checkpoint_expect()`` and ``_checkpoint_load()``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from ..checkpoint import check_manifest
from ..errors import CheckpointMismatchError


class TrainPosition(NamedTuple):
    """Where ``fit`` stands: what a resumed ``fit`` needs besides the arrays.

    Attributes:
      epoch: the 0-based epoch being trained (the next one after an epoch ends).
      step: the steps done in that epoch (0 at an epoch's start).
      input_state: the input iterator's ``get_state()`` after those steps, or
        None (arrays; inputs that cannot save a position).
      logs: the epoch's logs after those steps (used when a resumed epoch has
        no steps left).
    """

    epoch: int = 0
    step: int = 0
    input_state: Any = None
    logs: dict | None = None

    def to_json(self) -> dict:
        """The position as a JSON-able dict."""
        return {
            "epoch": int(self.epoch),
            "step": int(self.step),
            "input_state": self.input_state,
            "logs": self.logs,
        }

    @classmethod
    def from_json(cls, data: Any) -> TrainPosition:
        """The position saved by ``to_json``."""
        if not isinstance(data, dict):
            raise CheckpointMismatchError(
                f"The checkpoint's training position is {data!r}, not a dict: the checkpoint is "
                "damaged or was not written by phalanx. Restore another one."
            )
        return cls(
            int(data.get("epoch", 0)),
            int(data.get("step", 0)),
            data.get("input_state"),
            data.get("logs"),
        )


def _component(key: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def leaf_name(path: tuple) -> str:
    """``params/layers/0/linear/kernel`` for a key path (nnx's ``.value`` dropped)."""
    parts = [_component(k) for k in path]
    return "/".join(p for p in parts if p != "value")


def _is_key(leaf: Any) -> bool:
    dtype = getattr(leaf, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def describe(leaf: Any) -> dict:
    """The manifest entry of a leaf: shape and dtype as stored (key data for PRNG keys)."""
    if _is_key(leaf):
        data = jax.random.key_data(leaf)
        impl = str(jax.random.key_impl(leaf))
        return {"shape": list(data.shape), "dtype": str(data.dtype), "key": impl}
    return {"shape": list(np.shape(leaf)), "dtype": str(np.dtype(leaf.dtype))}


def named_leaves(state: Any) -> dict[str, Any]:
    """Every leaf of ``state`` by name, in the tree's order."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(state)
    return {leaf_name(path): leaf for path, leaf in leaves}


def state_items(state: Any) -> tuple[dict[str, Any], dict[str, dict]]:
    """``(arrays, manifest)`` of a state: PRNG keys as their key data."""
    named = named_leaves(state)
    manifest = {name: describe(leaf) for name, leaf in named.items()}
    arrays = {
        name: jax.random.key_data(leaf) if _is_key(leaf) else leaf for name, leaf in named.items()
    }
    return arrays, manifest


def load_state(template: Any, manifest: dict[str, dict], arrays: dict[str, Any]) -> Any:
    """``template``'s structure filled from checkpoint ``arrays`` (host), after checking them."""
    _, expected = state_items(template)
    check_manifest("model", manifest, expected)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    out = []
    for path, _ in leaves:
        name = leaf_name(path)
        value = np.asarray(arrays[name])
        impl = manifest[name].get("key")
        out.append(jax.random.wrap_key_data(value, impl=impl) if impl else value)
    return jax.tree_util.tree_unflatten(treedef, out)
