"""Manifests: each saved array's name, shape and dtype, compared before any data is read.

A model's training state is stored leaf by leaf under readable names
(``params/layers/0/linear/kernel``, ``opt_state/inner_state/0/mu/...``, ``step``,
``rng``: ``state_items``, ``load_state``); PRNG keys as their raw key data."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..errors import CheckpointMismatchError


def differences(saved: dict[str, dict], expected: dict[str, dict]) -> list[str]:
    """Lines naming each array whose name, shape or dtype differs between two manifests."""
    lines = []
    for name, want in expected.items():
        got = saved.get(name)
        if got is None:
            lines.append(f"{name}: missing from the checkpoint (model: {_spec(want)})")
        elif (list(got["shape"]), got["dtype"]) != (list(want["shape"]), want["dtype"]):
            lines.append(f"{name}: checkpoint {_spec(got)}, model {_spec(want)}")
    for name, got in saved.items():
        if name not in expected:
            lines.append(f"{name}: in the checkpoint ({_spec(got)}), not in the model")
    return lines


def _spec(entry: dict) -> str:
    return f"shape {tuple(entry['shape'])} {entry['dtype']}"


def check_manifest(what: str, saved: dict[str, dict], expected: dict[str, dict]) -> None:
    """Raises ``CheckpointMismatchError`` naming the arrays that differ (at most 10 lines)."""
    lines = differences(saved, expected)
    if lines:
        shown = "\n  ".join(lines[:10])
        more = f"\n  ... and {len(lines) - 10} more" if len(lines) > 10 else ""
        raise CheckpointMismatchError(
            f"The checkpoint's {what} does not match this {what}: {len(lines)} array(s) "
            f"differ (name, shape, dtype):\n  {shown}{more}\nRestore it into a {what} built "
            "and compiled as the one that was saved (same layers, optimizer and metrics)."
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


def is_key(leaf: Any) -> bool:
    """Whether ``leaf`` is a typed PRNG key array (stored as its key data)."""
    dtype = getattr(leaf, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def describe(leaf: Any) -> dict:
    """The manifest entry of a leaf: shape and dtype as stored (key data for PRNG keys)."""
    if is_key(leaf):
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
        name: jax.random.key_data(leaf) if is_key(leaf) else leaf for name, leaf in named.items()
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
