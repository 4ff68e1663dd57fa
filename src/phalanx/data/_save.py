"""``Dataset.save`` and ``Dataset.load``: a dataset's elements written to a folder and read back.

The folder holds ``dataset_spec.json`` (the format, the element spec, the
shard files in order and their element counts) and one ``.npz`` file per shard
(``shard_<k>.npz``, the format of ``cache(filename)``: arrays stacked per
component, strings as exact bytes, never pickles; ``compression="GZIP"``
deflates them). This is phalanx's own format, not TensorFlow's snapshot
format: a folder TF saved cannot be loaded, nor the reverse. ``shard_func``
maps each element to its shard (an int >= 0), as TF; without it every element
goes to shard 0. ``load`` reads the shards one after the other in shard order
(TF's default ``reader_func`` interleaves them, in no promised order); the
loaded dataset has random access, so it shuffles and batches by index, and it
checkpoints by position.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError
from ..io import _fs
from . import _structure as st
from ._cache import _save, _to_access, read_store
from ._dataset import Dataset
from ._iterator import AccessIterator, RandomAccess
from ._structure import TensorSpec

FORMAT = "phalanx.data.save/1"
SPEC_FILE = "dataset_spec.json"


def _compression(compression: Any, method: str) -> bool:
    if compression in (None, ""):
        return False
    if compression == "GZIP":
        return True
    raise DatasetArgumentError(
        f"{method}: compression must be None or 'GZIP', got {compression!r}. phalanx's saved "
        "datasets are .npz files; 'SNAPPY' is not supported."
    )


def _unsupported(method: str, name: str, value: Any, why: str) -> None:
    if value is not None:
        raise DatasetArgumentError(f"{method}: {name} is not supported ({why}); leave it None.")


def save(
    dataset: Dataset,
    path: Any,
    compression: Any = None,
    shard_func: Any = None,
    checkpoint_args: Any = None,
) -> None:
    """``dataset.save(path, compression, shard_func)``: see the module docstring."""
    _unsupported(
        "save",
        "checkpoint_args",
        checkpoint_args,
        "a save runs to its end in one call; save again to redo it",
    )
    compressed = _compression(compression, "save")
    if shard_func is not None and not callable(shard_func):
        raise DatasetTypeError(
            f"save: shard_func must be a function element -> int, got {type(shard_func).__name__}."
        )
    if dataset.cardinality() == -1:
        raise DatasetArgumentError(
            "save: the dataset is infinite (a repeat() without count?); take(n) first."
        )
    st.refuse_composites(
        dataset.element_spec, "save", "Save dense arrays (.to_tensor() / .to_dense() in a map)."
    )
    folder = os.fspath(path)
    shards: dict[int, list[Any]] = {}
    for n, element in enumerate(dataset):
        k = 0 if shard_func is None else _shard_of(st.call_unpacked(shard_func, element), n)
        shards.setdefault(k, []).append(element)
    _fs.makedirs(folder)
    names, counts = [], []
    for k in sorted(shards):
        name = f"shard_{k:05d}.npz"
        _save(f"{folder}/{name}", shards[k], _to_access(shards[k]), compressed)
        names.append(name)
        counts.append(len(shards[k]))
    spec = dataset.element_spec
    meta = {
        "format": FORMAT,
        "treedef": st.encode_treedef(st.treedef(spec)),
        "specs": [_encode_spec(s) for s in st.flatten(spec)],
        "shards": names,
        "counts": counts,
        "compression": "GZIP" if compressed else None,
    }
    with _fs.atomic_write(f"{folder}/{SPEC_FILE}") as f:  # written last: a complete save
        f.write(json.dumps(meta).encode())


def _shard_of(value: Any, n: int) -> int:
    a = np.asarray(value)
    if a.shape != () or a.dtype.kind not in "iu" or int(a) < 0:
        raise DatasetTypeError(
            f"save: shard_func must return an int >= 0 (a shard index), got {value!r:.40} for "
            f"element {n}."
        )
    return int(a)


def _encode_spec(s: TensorSpec) -> dict[str, Any]:
    shape = None if s.shape is None else list(s.shape)
    return {"shape": shape, "dtype": np.dtype(s.dtype).str}


def _decode_spec(obj: dict[str, Any]) -> TensorSpec:
    shape = obj["shape"]
    return TensorSpec(None if shape is None else tuple(shape), np.dtype(obj["dtype"]))


def load(
    path: Any, element_spec: Any = None, compression: Any = None, reader_func: Any = None
) -> Dataset:
    """``Dataset.load(path, element_spec, compression)``: see the module docstring."""
    _unsupported(
        "load",
        "reader_func",
        reader_func,
        "phalanx reads the shards in shard order; reorder the loaded dataset instead",
    )
    _compression(compression, "load")  # np.load reads both; the argument is only checked
    folder = os.fspath(path)
    meta_path = f"{folder}/{SPEC_FILE}"
    if not _fs.exists(meta_path):
        raise DatasetArgumentError(
            f"load: {folder!r} holds no saved dataset (no {SPEC_FILE}); save one with "
            "dataset.save(path) first."
        )
    with _fs.open(meta_path, "rb") as f:
        meta = json.loads(f.read().decode())
    if meta.get("format") != FORMAT:
        raise DatasetArgumentError(
            f"load: {folder!r} is not a phalanx saved dataset (format {meta.get('format')!r}); "
            "TensorFlow's saved datasets cannot be read."
        )
    tdef = st.decode_treedef(meta["treedef"])
    spec = st.unflatten(tdef, [_decode_spec(s) for s in meta["specs"]])
    if element_spec is not None and st.treedef(element_spec) != tdef:
        raise DatasetArgumentError(
            f"load: element_spec {element_spec!r} does not match the saved elements' {spec!r}."
        )
    parts = [
        _SavedShard(f"{folder}/{name}", spec, n)
        for name, n in zip(meta["shards"], meta["counts"], strict=True)
    ]
    if not parts:
        return Dataset.from_tensor_slices(np.zeros(0, np.int64)).take(0)
    out: Dataset = parts[0]
    for p in parts[1:]:
        out = out.concatenate(p)
    return out


class _SavedShard(Dataset):
    """One shard file of a saved dataset, read when first iterated."""

    def __init__(self, path: str, spec: Any, count: int):
        self._path, self._spec_saved, self._count = path, spec, count
        self._store: RandomAccess | None = None

    def _random_access(self) -> RandomAccess:
        if self._store is None:
            self._store = read_store(self._path)
        return self._store

    def _iterator(self, ctx):
        return AccessIterator(self._random_access())

    def _cardinality(self) -> int:
        return self._count

    def _compute_spec(self):
        return self._spec_saved
