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
checkpoints by position. ``load(reader_func=f)`` returns ``f(shards)``, ``shards``
a dataset of one dataset per shard in shard order (``ShardsDataset``), as TF.
``Dataset.snapshot`` writes and reads this format too (``_snapshot.py``).
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
from ._iterator import AccessIterator, DatasetIterator, RandomAccess, state_int
from ._structure import TensorSpec
from ._window import DatasetSpec

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
        shards.setdefault(shard_of(shard_func, element, n, "save"), []).append(element)
    write_folder(folder, shards, dataset.element_spec, compressed)


def shard_of(shard_func: Any, element: Any, n: int, method: str) -> int:
    """The shard of element ``n``: ``shard_func(element)`` checked, 0 without a function."""
    if shard_func is None:
        return 0
    return _shard_of(st.call_unpacked(shard_func, element), n, method)


def write_folder(folder: str, shards: dict[int, list[Any]], spec: Any, compressed: bool) -> None:
    """Write ``shards`` (shard index -> its elements) as a saved dataset in ``folder``;
    ``dataset_spec.json`` last, so a folder that has it is complete."""
    _fs.makedirs(folder)
    names, counts = [], []
    tdef = st.treedef(spec)
    for k in sorted(shards):
        name = f"shard_{k:05d}.npz"
        _save(f"{folder}/{name}", shards[k], _to_access(shards[k]), compressed, tdef=tdef)
        names.append(name)
        counts.append(len(shards[k]))
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


def _shard_of(value: Any, n: int, method: str) -> int:
    a = np.asarray(value)
    if a.shape != () or a.dtype.kind not in "iu" or int(a) < 0:
        raise DatasetTypeError(
            f"{method}: shard_func must return an int >= 0 (a shard index), got {value!r:.40} "
            f"for element {n}."
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
    """``Dataset.load(path, element_spec, compression, reader_func)``: see the module docstring."""
    if reader_func is not None and not callable(reader_func):
        raise DatasetTypeError(
            f"load: reader_func must be a function or None, got {type(reader_func).__name__}."
        )
    _compression(compression, "load")  # np.load reads both; the argument is only checked
    parts = read_folder(os.fspath(path), element_spec, "load")
    if reader_func is not None:
        out = reader_func(ShardsDataset(parts, parts[0].element_spec if parts else None))
        if not isinstance(out, Dataset):
            raise DatasetTypeError(
                f"load: reader_func must return a Dataset of the elements (e.g. "
                f"datasets.interleave(lambda x: x)), got {type(out).__name__}."
            )
        return out
    if not parts:
        return Dataset.from_tensor_slices(np.zeros(0, np.int64)).take(0)
    out: Dataset = parts[0]
    for p in parts[1:]:
        out = out.concatenate(p)
    return out


def read_folder(folder: str, element_spec: Any, method: str) -> list[Dataset]:
    """The shards of the saved dataset in ``folder``, one dataset each, in shard order."""
    meta_path = f"{folder}/{SPEC_FILE}"
    if not _fs.exists(meta_path):
        raise DatasetArgumentError(
            f"{method}: {folder!r} holds no saved dataset (no {SPEC_FILE}); save one with "
            "dataset.save(path) first."
        )
    with _fs.open(meta_path, "rb") as f:
        meta = json.loads(f.read().decode())
    if meta.get("format") != FORMAT:
        raise DatasetArgumentError(
            f"{method}: {folder!r} is not a phalanx saved dataset (format {meta.get('format')!r}); "
            "TensorFlow's saved datasets cannot be read."
        )
    tdef = st.decode_treedef(meta["treedef"])
    spec = st.unflatten(tdef, [_decode_spec(s) for s in meta["specs"]])
    if element_spec is not None and st.treedef(element_spec) != tdef:
        raise DatasetArgumentError(
            f"{method}: element_spec {element_spec!r} does not match the saved elements' {spec!r}."
        )
    return [
        _SavedShard(f"{folder}/{name}", spec, n)
        for name, n in zip(meta["shards"], meta["counts"], strict=True)
    ]


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


class ShardsDataset(Dataset):
    """The dataset of a saved dataset's shards that ``reader_func`` receives (one dataset each,
    in shard order), as tf.data's ``load`` and ``snapshot`` give it."""

    def __init__(self, shards: list[Dataset], spec: Any):
        self._shards, self._shard_spec = shards, spec

    def _iterator(self, ctx):
        return _ShardsIterator(self._shards)

    def _cardinality(self) -> int:
        return len(self._shards)

    def _compute_spec(self):
        return DatasetSpec(self._shard_spec)


class _ShardsIterator(DatasetIterator):
    def __init__(self, shards: list[Dataset]):
        self.shards, self.i = shards, 0

    def __next__(self):
        if self.i >= len(self.shards):
            raise StopIteration
        self.i += 1
        return self.shards[self.i - 1]

    def get_state(self):
        return {"i": self.i}

    def set_state(self, state):
        self.i = state_int(state, "i", high=len(self.shards))
