"""What a checkpoint holds of each object given to ``Checkpoint(name=obj, ...)``.

Three kinds of objects, by what they can do (this layer sits below ``train``
in DESIGN.md's table, so it knows them by the protocols declared here,
``Trainable`` and ``TrainableOptimizer``, not by their classes):

- a *model* (``phalanx.Model``): ``_checkpoint_items()`` gives its training
  state as named arrays (parameters, non-trainable state, optimizer state,
  step, RNG key, metric accumulators), their manifest (name -> shape, dtype)
  and JSON data (the training position: epoch, steps done, fit's input
  iterator state); ``_checkpoint_expect()`` the manifest a restore must
  match (None while the model cannot hold a state yet: the arrays then wait
  until ``fit`` builds it); ``_checkpoint_load(manifest, arrays, data)``;
- an *optimizer* (``model.optimizer``): its state is part of its model's
  training state, saved with the model, so it must come with ``model=``;
- anything with ``get_state()``/``set_state(state)`` returning JSON-able
  data: phalanx data iterators (``iter(dataset)``), distributed iterators;
- a *tree*: any pytree of arrays (a custom loop's parameters, optax state), or a
  ``flax.nnx`` module or state, saved leaf by leaf under its key path
  (``['w1']``, ``[0].mu['b']``), PRNG keys as their key data. A restore checks
  the names, shapes and dtypes against the tree given, and puts the arrays where
  its leaves are (their sharding): an nnx module is updated in place; any other
  tree, immutable in JAX, is replaced, and read back as ``checkpoint.<name>``.

The meta data of a checkpoint (JSON) holds, per object, its kind, manifest
and data; the arrays item holds ``{object name: {"a<i>": array}}`` in the
manifest's order.

The meta is written by process 0 only. When each process reads its own share
of the input (a ``Dataset`` auto-sharded per process), a model's position
holds a process-local input state (marked ``"process"``): ``collect``
gathers every process's state through the cluster's key-value store into
the model's data as ``"input_states"`` (a list indexed by process), and
``apply`` gives each process its own back, so that every process resumes
its share mid-epoch. The model's data also holds the number of processes that
saved it (``"processes"``). Under another process count, a position that is
the whole pipeline's moves (arrays; a ``Dataset`` DATA-sharded by rows of each
global batch, where every process is at the same position: its batch size is
rescaled to the new shares); per-process shares (FILE sharding, element-wise
DATA, OFF, ``distribute_datasets_from_function``) are refused mid-epoch with
the reason, and restore at an epoch end.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Protocol, runtime_checkable

import jax
import numpy as np
from flax import nnx

from ..cluster import _kv
from ..data import STATE_FORMAT, share_why
from ..errors import CheckpointError, CheckpointMismatchError
from ._manifest import check_manifest, describe, is_key

FORMAT = "phalanx.checkpoint/1"
GATHER_TIMEOUT_S = 120.0
_gathers = itertools.count()  # every process saves the same checkpoints, in the same order


@runtime_checkable
class Trainable(Protocol):
    """What a checkpoint asks of a model: ``phalanx.Model`` (``train``'s ``Trainer``, a layer
    above this one, implements it; the names stay private to the model's users)."""

    def _checkpoint_items(self) -> tuple[dict, dict, dict]:
        """``(arrays by name, manifest: name -> (shape, dtype), JSON data)`` to save."""
        ...

    def _checkpoint_expect(self) -> dict | None:
        """The manifest a restore must match; None while the model holds no state yet."""
        ...

    def _checkpoint_load(self, manifest: dict, arrays: dict, data: dict) -> None:
        """Makes the restored arrays and data the model's training state and position."""
        ...


@runtime_checkable
class TrainableOptimizer(Protocol):
    """What a checkpoint asks of an optimizer (``model.optimizer``): the model whose
    training state holds its state (a ``Trainable``)."""

    _model: Any


def kind_of(name: str, obj: Any) -> str:
    """``"model"``, ``"optimizer"`` or ``"state"``; raises for anything else."""
    if isinstance(obj, Trainable):
        return "model"
    if isinstance(obj, TrainableOptimizer) and isinstance(obj._model, Trainable):
        return "optimizer"
    if callable(getattr(obj, "get_state", None)) and callable(getattr(obj, "set_state", None)):
        return "state"
    bad = _not_array_leaf(obj)
    if bad is None:
        return "tree"
    raise CheckpointError(
        f"Checkpoint({name}=...) got {type(obj).__name__}, which has no state phalanx can "
        f"save ({bad}). Pass a phalanx Model, its optimizer (model.optimizer), an object "
        "with get_state()/set_state() (a phalanx data iterator: iter(dataset)), or a pytree "
        "of arrays (parameters, optax state) or a flax.nnx module."
    )


def _nnx_module(obj: Any) -> bool:
    cls = type(obj)
    return any(c.__name__ == "Module" and c.__module__.startswith("flax.nnx") for c in cls.__mro__)


def _tree_value(obj: Any) -> Any:
    if _nnx_module(obj):
        return nnx.state(obj)
    return obj


def _not_array_leaf(obj: Any) -> str | None:
    """Why ``obj`` is not a pytree of arrays (its first other leaf), or None if it is."""
    if isinstance(obj, str | bytes | bool | int | float | complex) or obj is None:
        return "not an array: pass jnp.asarray(value), or an array in a pytree"
    value = _tree_value(obj)

    def model_like(x: Any) -> bool:  # a model inside a tree is refused, not flattened
        return x is not value and (isinstance(x, Trainable) or _nnx_module(x))

    leaves = jax.tree_util.tree_flatten_with_path(value, is_leaf=model_like)[0]
    if len(leaves) == 1 and leaves[0][1] is value:
        if hasattr(obj, "dtype") and hasattr(obj, "shape"):
            return None
        return "it is not an array, a pytree of arrays or a flax.nnx module"
    for path, leaf in leaves:
        if isinstance(leaf, bool | int | float | complex) or (
            getattr(leaf, "dtype", None) is not None and hasattr(leaf, "shape")
        ):
            continue
        where = jax.tree_util.keystr(path) or "the value"
        return f"its leaf {where} is a {type(leaf).__name__}, not an array"
    return None


def _tree_items(obj: Any) -> tuple[list[str], list[Any], dict[str, dict]]:
    """``(names, arrays, manifest)`` of a tree: leaves by key path, keys as key data."""
    names, arrays, manifest = [], [], {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(_tree_value(obj))[0]:
        name = jax.tree_util.keystr(path) or "[]"
        if not hasattr(leaf, "dtype"):  # a Python number
            leaf = np.asarray(leaf)
        names.append(name)
        manifest[name] = describe(leaf)
        arrays.append(jax.random.key_data(leaf) if is_key(leaf) else leaf)
    return names, arrays, manifest


def _load_tree(obj: Any, manifest: dict[str, dict], arrays: dict[str, Any]) -> Any:
    """``obj``'s structure filled from the checkpoint's host arrays, each put where the
    template's leaf is (its sharding); an nnx module is updated in place and returned."""
    value = _tree_value(obj)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(value)
    out = []
    for path, leaf in leaves:
        name = jax.tree_util.keystr(path) or "[]"
        host = np.asarray(arrays[name])
        impl = manifest[name].get("key")
        if impl:
            restored = jax.random.wrap_key_data(host, impl=impl)
            if isinstance(leaf, jax.Array):
                restored = jax.device_put(restored, leaf.sharding)
        elif isinstance(leaf, jax.Array):
            restored = jax.make_array_from_callback(
                host.shape, leaf.sharding, lambda index, host=host: host[index]
            )
        elif isinstance(leaf, np.ndarray | np.generic):
            restored = host.astype(leaf.dtype, copy=False)
        else:  # a Python number
            restored = type(leaf)(host.item())
        out.append(restored)
    restored = jax.tree_util.tree_unflatten(treedef, out)
    if _nnx_module(obj):
        nnx.update(obj, restored)
        return obj
    return restored


def check_objects(objects: dict[str, Any]) -> dict[str, str]:
    """The kind of every object; an optimizer must come with its model."""
    kinds = {name: kind_of(name, obj) for name, obj in objects.items()}
    models = [obj for name, obj in objects.items() if kinds[name] == "model"]
    for name, obj in objects.items():
        if kinds[name] == "optimizer" and not any(m is obj._model for m in models):
            raise CheckpointError(
                f"Checkpoint({name}=optimizer) without its model: the optimizer's state is part "
                "of the model's training state. Pass the model too: "
                f"Checkpoint(model=model, {name}=model.optimizer)."
            )
    return kinds


def collect(objects: dict[str, Any], kinds: dict[str, str]) -> tuple[dict, dict]:
    """``(arrays, entries)`` to save: arrays by object, JSON entries by object."""
    arrays: dict[str, dict] = {}
    entries: dict[str, dict] = {}
    for name, obj in objects.items():
        kind = kinds[name]
        if kind == "model":
            named, manifest, data = obj._checkpoint_items()
            names = list(manifest)
            arrays[name] = {f"a{i}": named[n] for i, n in enumerate(names)}
            entries[name] = {
                "kind": kind,
                "arrays": [[n, manifest[n]] for n in names],
                "data": _with_input_states(name, data),
            }
        elif kind == "optimizer":
            entries[name] = {"kind": kind, "data": None}  # saved with its model
        elif kind == "tree":
            names, leaves, manifest = _tree_items(obj)
            arrays[name] = {f"a{i}": leaf for i, leaf in enumerate(leaves)}
            entries[name] = {
                "kind": kind,
                "arrays": [[n, manifest[n]] for n in names],
                "data": None,
            }
        else:
            entries[name] = {"kind": kind, "data": obj.get_state()}
    return arrays, entries


def _process_local_state(data: Any) -> Any:
    """The position's input state when it is one process's share, else None."""
    position = data.get("position") if isinstance(data, dict) else None
    state = position.get("input_state") if isinstance(position, dict) else None
    return state if isinstance(state, dict) and "process" in state else None


def _with_input_states(name: str, data: Any) -> Any:
    """``data`` with the number of processes that saved it (``"processes"``) and, when each
    process reads its own share of the input, every process's input state
    (``"input_states"``; see the module docstring)."""
    if not isinstance(data, dict):
        return data
    n = _kv.num_processes()
    state = _process_local_state(data)
    if state is None or n < 2:
        return dict(data, processes=n)
    values = _kv.gather(
        f"checkpoint-input-{name}-{next(_gathers)}",
        json.dumps(state),
        timeout_s=GATHER_TIMEOUT_S,
        what="its input position for a checkpoint",
    )
    return dict(data, processes=n, input_states=[json.loads(v) for v in values])


def _own_input_state(data: Any) -> Any:
    """``data`` with this process's own input position.

    Under the process count that saved it: the process's own state. Under another
    count, mid-epoch: the position moves when it is the whole pipeline's (arrays;
    a ``Dataset`` DATA-sharded by rows, where every process was at the same
    position), with the batch size of this count's shares; else a ``CheckpointError``
    says why (``_moved_input_state``).
    """
    if not isinstance(data, dict):
        return data
    states = data.get("input_states")
    me, n = _kv.process_id(), _kv.num_processes()
    saved_n = len(states) if isinstance(states, list) else int(data.get("processes", 1))
    if saved_n == n:
        if isinstance(states, list):
            return dict(data, position=dict(data["position"], input_state=states[me]))
        return data
    position = data.get("position")
    if not isinstance(position, dict) or not isinstance(position.get("input_state"), dict):
        return data  # arrays: the position is the epoch and step, whatever the process count
    moved = _moved_input_state(position, states, saved_n, n)
    return data if moved is None else dict(data, position=dict(position, input_state=moved))


def _moved_input_state(position: dict, states: Any, saved_n: int, n: int) -> Any:
    """The input state for ``n`` processes from one saved by ``saved_n``; None to keep the
    saved position as it is (per-process shares at an epoch's start: no position is
    restored then); a ``CheckpointError`` for per-process shares mid-epoch."""
    states = states if isinstance(states, list) else [position["input_state"]]
    mid_epoch = int(position.get("step", 0)) > 0
    shards = [
        (s.get("iterator") or {}).get("shard") if isinstance(s, dict) else None for s in states
    ]
    local = [sh for sh in shards if isinstance(sh, dict) and not sh.get("global")]
    if local and not mid_epoch:
        return None
    if local:
        raise CheckpointError(
            f"This checkpoint was saved mid-epoch by {saved_n} processes, each reading its own "
            f"share of the input ({share_why(local[0])}), and is restored by {n}: the shares "
            f"differ, so no process can resume its share mid-epoch. Restore it with {saved_n} "
            "processes, or back up at epoch ends (BackupAndRestore(save_freq='epoch')), or "
            "end the pipeline with batch(global_batch) under AutoShardPolicy.DATA (each "
            "process takes rows of every global batch, a position any process count can resume)."
        )
    iterators = [_without_shard(s.get("iterator")) for s in states]
    if any(i != iterators[0] for i in iterators):
        raise CheckpointError(
            f"This checkpoint holds {saved_n} different input positions (one per process) and "
            f"is restored by {n} processes: they should be one position (DATA sharding by "
            "rows), so the checkpoint is damaged. Restore it with "
            f"{saved_n} processes."
        )
    state = {k: v for k, v in states[0].items() if k != "process"}
    size = state.get("batch_size")
    if isinstance(size, int) and "process" in states[0]:
        size *= saved_n  # the global batch
    if isinstance(size, int) and n > 1 and _is_dataset_state(state):
        size //= n  # each process's rows of it (a Dataset is auto-sharded under n processes)
    return dict(state, batch_size=size)


def _without_shard(iterator: Any) -> Any:
    """An iterator state without its ``"shard"`` (which names the process's pipeline)."""
    if not isinstance(iterator, dict):
        return iterator
    return {k: v for k, v in iterator.items() if k != "shard"}


def _is_dataset_state(state: dict) -> bool:
    """Whether the input state is a ``phalanx.data`` iterator's (a ``Dataset`` given to fit)."""
    iterator = state.get("iterator")
    return isinstance(iterator, dict) and iterator.get("format") == STATE_FORMAT


def _check_tree(name: str, saved: dict[str, dict], given: dict[str, dict]) -> None:
    """Raises ``CheckpointMismatchError`` naming each leaf whose key path, shape or dtype
    differs between the checkpoint and the tree given to restore into."""

    def spec(entry: dict) -> str:
        return f"shape {tuple(entry['shape'])} {entry['dtype']}"

    lines = []
    for leaf, want in given.items():
        got = saved.get(leaf)
        if got is None:
            lines.append(f"{leaf}: missing from the checkpoint (given: {spec(want)})")
        elif (list(got["shape"]), got["dtype"]) != (list(want["shape"]), want["dtype"]):
            lines.append(f"{leaf}: checkpoint {spec(got)}, given {spec(want)}")
    lines += [
        f"{leaf}: in the checkpoint ({spec(got)}), not in the tree given"
        for leaf, got in saved.items()
        if leaf not in given
    ]
    if lines:
        shown = "\n  ".join(lines[:10])
        more = f"\n  ... and {len(lines) - 10} more" if len(lines) > 10 else ""
        raise CheckpointMismatchError(
            f"The checkpoint's {name!r} does not match the tree given to restore it into: "
            f"{len(lines)} leaf/leaves differ (key path, shape, dtype):\n  {shown}{more}\n"
            "Pass a tree of the structure, shapes and dtypes that was saved (the same init)."
        )


def manifest_of(entry: dict) -> dict[str, dict]:
    """The manifest (name -> shape, dtype) of a saved model entry."""
    return {name: spec for name, spec in entry.get("arrays", [])}


def check_restorable(path: str, objects: dict, kinds: dict, saved: dict) -> None:
    """Raises unless every object has a matching entry (names, shapes, dtypes), before any
    array is read."""
    for name, obj in objects.items():
        entry = saved.get(name)
        if entry is None:
            raise CheckpointMismatchError(
                f"The checkpoint {path!r} holds no {name!r} (it holds {sorted(saved)}). "
                f"Restore it with the names it was saved with: Checkpoint({name}=...) must "
                "match the Checkpoint that saved it."
            )
        if entry.get("kind") != kinds[name]:
            raise CheckpointMismatchError(
                f"The checkpoint's {name!r} is a {entry.get('kind')}, but a {kinds[name]} was "
                "given to restore it into. Pass the same kind of object that was saved."
            )
        if kinds[name] == "model":
            expected = obj._checkpoint_expect()
            if expected is not None:
                check_manifest("model", manifest_of(entry), expected)
        if kinds[name] == "tree":
            _check_tree(name, manifest_of(entry), _tree_items(obj)[2])


def apply(objects: dict, kinds: dict, saved: dict, arrays: dict) -> None:
    """Loads each object's arrays and data (already checked by ``check_restorable``)."""
    for name, obj in objects.items():
        entry = saved[name]
        if kinds[name] == "model":
            manifest = manifest_of(entry)
            mine = arrays.get(name, {})
            named = {n: mine[f"a{i}"] for i, n in enumerate(manifest)}
            obj._checkpoint_load(manifest, named, _own_input_state(entry.get("data") or {}))
        elif kinds[name] == "state":
            obj.set_state(entry["data"])
        elif kinds[name] == "tree":
            manifest = manifest_of(entry)
            mine = arrays.get(name, {})
            named = {n: mine[f"a{i}"] for i, n in enumerate(manifest)}
            objects[name] = _load_tree(obj, manifest, named)
