"""What a checkpoint holds of each object given to ``Checkpoint(name=obj, ...)``.

Three kinds of objects, by what they can do (this layer sits above ``train``
in DESIGN.md's table, so it knows them by their methods, not their classes):

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
  data: phalanx data iterators (``iter(dataset)``), distributed iterators.

The meta data of a checkpoint (JSON) holds, per object, its kind, manifest
and data; the arrays item holds ``{object name: {"a<i>": array}}`` in the
manifest's order.

The meta is written by process 0 only. When each process reads its own share
of the input (a ``Dataset`` auto-sharded per process), a model's position
holds a process-local input state (marked ``"process"``): ``collect``
gathers every process's state through the cluster's key-value store into
the model's data as ``"input_states"`` (a list indexed by process), and
``apply`` gives each process its own back, so that every process resumes
its share mid-epoch. A checkpoint saved mid-epoch is refused under another
process count (the shares differ); one saved at an epoch end restores.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ..errors import CheckpointError, CheckpointMismatchError
from ._manifest import check_manifest

FORMAT = "phalanx.checkpoint/1"
GATHER_TIMEOUT_S = 120.0
_gathers = itertools.count()  # every process saves the same checkpoints, in the same order


def kind_of(name: str, obj: Any) -> str:
    """``"model"``, ``"optimizer"`` or ``"state"``; raises for anything else."""
    if callable(getattr(obj, "_checkpoint_items", None)):
        return "model"
    if callable(getattr(getattr(obj, "_model", None), "_checkpoint_items", None)):
        return "optimizer"
    if callable(getattr(obj, "get_state", None)) and callable(getattr(obj, "set_state", None)):
        return "state"
    raise CheckpointError(
        f"Checkpoint({name}=...) got {type(obj).__name__}, which has no state phalanx can "
        "save. Pass a phalanx Model, its optimizer (model.optimizer), or an object with "
        "get_state()/set_state() (a phalanx data iterator: iter(dataset))."
    )


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
        else:
            entries[name] = {"kind": kind, "data": obj.get_state()}
    return arrays, entries


def _process_local_state(data: Any) -> Any:
    """The position's input state when it is one process's share, else None."""
    position = data.get("position") if isinstance(data, dict) else None
    state = position.get("input_state") if isinstance(position, dict) else None
    return state if isinstance(state, dict) and "process" in state else None


def _with_input_states(name: str, data: Any) -> Any:
    """``data`` with every process's input state (``"input_states"``) when each process
    reads its own share of the input (see the module docstring)."""
    from ..cluster import _kv

    state = _process_local_state(data)
    if state is None or _kv.num_processes() < 2:
        return data
    values = _kv.gather(
        f"checkpoint-input-{name}-{next(_gathers)}",
        json.dumps(state),
        timeout_s=GATHER_TIMEOUT_S,
        what="its input position for a checkpoint",
    )
    return dict(data, input_states=[json.loads(v) for v in values])


def _own_input_state(data: Any) -> Any:
    """``data`` with this process's own input state, when the checkpoint holds one per
    process and was saved by as many processes."""
    from ..cluster import _kv

    states = data.get("input_states") if isinstance(data, dict) else None
    if not isinstance(states, list):
        return data
    me, n = _kv.process_id(), _kv.num_processes()
    if len(states) != n:
        if int(data["position"].get("step", 0)) > 0:
            raise CheckpointError(
                f"This checkpoint was saved mid-epoch by {len(states)} processes, each reading "
                f"its own share of the input, and is restored by {n}: the shares differ, so "
                "no process can resume its share mid-epoch. Restore it with "
                f"{len(states)} processes, or back up at epoch ends "
                "(BackupAndRestore(save_freq='epoch')) to change the process count."
            )
        return data
    return dict(data, position=dict(data["position"], input_state=states[me]))


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
