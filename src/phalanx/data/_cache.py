"""``Dataset.cache``: keep the elements after the first complete pass, in memory or in a file.

The first iterator reads the input and records its elements; when it reaches
the end, the recording becomes the cache, and later iterators (later
``repeat`` epochs, a second run for a file cache) read the cache instead of
the input. A pass that is abandoned before the end caches nothing.

A file cache is one ``.npz`` file (``filename``, with ``.npz`` appended
unless present), written to a temporary name and renamed into place when
complete, so a half-written cache is never read. ``filename`` may be a URL
(``gs://bucket/cache/train``): the file is written locally, then uploaded in
one piece (``phalanx.io``), and read back streaming. It holds plain numpy
arrays and a JSON header; it is loaded with ``allow_pickle=False``. Byte
strings in ``object`` arrays (records of ``TFRecordDataset``, lines of
``TextLineDataset``) are stored as their concatenated bytes and offsets, never
pickled; other ``object`` elements are refused. A file that cannot be read as
a complete cache is ignored and rewritten.

As tf.data, one iterator at a time writes a file cache: the first call of a
writing iterator's ``next`` takes the cache's lock (``path + ".lockfile"`` on a
local disk, and a registry in this process for every path), and a second writer
raises ``AlreadyExistsError`` until the first completes the file, is closed or is
garbage-collected. A lock file left by a process of this machine that no longer
runs is taken over (TensorFlow asks for it to be deleted by hand).

When the elements are in memory already (``from_tensor_slices``, ``range``),
an in-memory ``cache()`` has nothing to save and passes them through, so the
pipeline keeps its vectorized batch path. Once filled, a cache whose elements
all have one shape is a random-access array store: ``shuffle`` and ``batch``
after it gather by index.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import warnings
from typing import Any, ClassVar

import numpy as np

from ..errors import AlreadyExistsError
from ..io import _fs
from . import _structure as st
from ._dataset import Dataset
from ._iterator import AccessIterator, ArraysAccess, DatasetIterator, RandomAccess

CACHE_FORMAT = "phalanx.data.cache/1"


class ListAccess(RandomAccess):
    """Random access into a list of elements (a cache of unlike shapes)."""

    materialized = True

    def __init__(self, elements: list[Any]):
        self.elements = elements

    def __len__(self) -> int:
        return len(self.elements)

    def get(self, i: int) -> Any:
        return self.elements[i]


def _to_access(elements: list[Any]) -> RandomAccess:
    if elements:
        flats = [st.flatten(e) for e in elements]
        try:
            leaves = [st.stack(column) for column in zip(*flats, strict=True)]
        except ValueError:
            return ListAccess(elements)
        tdef = st.treedef(elements[0])
        if all(st.treedef(e) == tdef for e in elements):
            return ArraysAccess(tdef, leaves, [isinstance(a, np.ndarray) for a in flats[0]])
    return ListAccess(elements)


class CacheDataset(Dataset):
    """``Dataset.cache``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, filename: str = ""):
        self._input = input_dataset
        filename = os.fspath(filename)
        self._path = (
            "" if not filename else filename if filename.endswith(".npz") else filename + ".npz"
        )
        self._store: RandomAccess | None = None

    def _with_inputs(self, inputs):
        out = super()._with_inputs(inputs)
        out._store = None
        return out

    def _filled(self) -> RandomAccess | None:
        if self._store is None and self._path and _fs.exists(self._path):
            self._store = _load(self._path)
        return self._store

    def _random_access(self):
        store = self._filled()
        if store is not None:
            return store
        inner = self._input._random_access()
        if not self._path and inner is not None and inner.materialized:
            return inner
        return None

    def _iterator(self, ctx):
        access = self._random_access()
        if access is not None:
            inner = self._input._random_access()
            if access is inner:
                return self._input._iterator(ctx)
            return AccessIterator(access)
        return _FillIterator(self, ctx)

    def _finish(self, elements: list[Any]) -> None:
        if self._store is not None:
            return
        store = _to_access(elements)
        if self._path:
            tdefs = {st.treedef(e) for e in elements}
            # elements of unlike structures: an object component holding None (a leaf there)
            tdef = next(iter(tdefs), "first") if len(tdefs) <= 1 else st.treedef(self.element_spec)
            _save(self._path, elements, store, tdef=tdef)
        self._store = store

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec


class _FillIterator(DatasetIterator):
    """Reads the input and records it; the state is the count, restored by re-reading."""

    def __init__(self, ds: CacheDataset, ctx):
        self.ds, self.ctx = ds, ctx
        self.child = ds._input._iterator(ctx)
        self.elements: list[Any] = []
        # As tf.data's memory cache: complete once the input's known number of elements is read,
        # without waiting for its end (a file cache waits for the end, as TF's).
        self.complete_at = -1 if ds._path else ds._input._cardinality()

        self.lock: _WriterLock | None = None

    def __next__(self):
        if self.lock is None and self.elements is not None and self.ds._path:
            self.lock = _WriterLock.take(self.ds._path)
        try:
            x = next(self.child)
        except StopIteration:
            if self.elements is not None:
                self._finish()
            raise
        if self.elements is not None:
            if not self.elements and self.ds._path:  # the file holds dense arrays only
                st.refuse_composites(
                    st.spec_of(x), "cache(filename)", "Cache them in memory with cache()."
                )
            self.elements.append(x)
            if len(self.elements) == self.complete_at:
                self._finish()
        return x

    def _finish(self) -> None:
        try:
            self.ds._finish(self.elements)
        finally:
            self.elements = None
            self._unlock()

    def _unlock(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def children(self):
        return [self.child]

    def close(self) -> None:
        self._unlock()  # an abandoned pass: another iterator may write the cache now
        super().close()

    def get_state(self):
        return {"i": len(self.elements) if self.elements is not None else -1}

    def set_state(self, state):
        n = int(state["i"])
        try:
            while n < 0 or len(self.elements) < n:
                next(self)
        except StopIteration:
            pass


class _WriterLock:
    """The right to write one file cache, held by one iterator at a time (tf.data's lock file)."""

    _held: ClassVar[set[str]] = set()  # the caches being written by iterators of this process
    _guard = threading.Lock()

    def __init__(self, key: str, lockfile: str | None):
        self.key, self.lockfile = key, lockfile

    @classmethod
    def take(cls, path: str) -> _WriterLock:
        local = _fs.os_path(path)
        key = os.path.abspath(local) if local is not None else path
        lockfile = None if local is None else key + ".lockfile"
        with cls._guard:
            if key in cls._held:
                raise AlreadyExistsError(
                    _concurrent(path, "another iterator of this process (it holds the lock file)")
                )
            if lockfile is not None:
                _create_lockfile(path, lockfile)
            cls._held.add(key)
        return cls(key, lockfile)

    def release(self) -> None:
        with self._guard:
            self._held.discard(self.key)
            if self.lockfile is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.lockfile)


def _create_lockfile(path: str, lockfile: str) -> None:
    info = f"Created at: {int(time.time())} by process {os.getpid()} on {socket.gethostname()}"
    os.makedirs(os.path.dirname(lockfile), exist_ok=True)  # as the cache's own write does
    for _ in range(2):
        try:
            fd = os.open(lockfile, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if not _stale(lockfile):
                holder = f"another iterator ({_read_text(lockfile)!r})"
                raise AlreadyExistsError(_concurrent(path, holder, lockfile)) from None
            with contextlib.suppress(FileNotFoundError):
                os.remove(lockfile)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(info)
        return
    raise AlreadyExistsError(_concurrent(path, "another iterator", lockfile))


def _read_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read(200)
    except OSError:
        return ""


def _stale(lockfile: str) -> bool:
    """Whether ``lockfile`` was left by a process of this machine that no longer runs."""
    words = _read_text(lockfile).split()
    if len(words) < 8 or words[-2] != "on" or words[-1] != socket.gethostname():
        return False
    try:
        os.kill(int(words[-3]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


def _concurrent(path: str, holder: str, lockfile: str | None = None) -> str:
    unlock = (
        f" If no running pipeline uses this cache, delete the lock file {lockfile!r}."
        if lockfile
        else ""
    )
    return (
        f"cache({path!r}): {holder} is writing this cache now; two iterators cannot fill one "
        "file cache at once (tf.data raises AlreadyExistsError too). Let the first finish its "
        "pass (or close it) before iterating again, or give each pipeline its own filename."
        + unlock
    )


def _save(
    path: str,
    elements: list[Any],
    store: RandomAccess,
    compressed: bool = False,
    tdef: Any = "first",
) -> None:
    """Write ``elements`` (as ``store`` holds them) to ``path``; ``tdef`` is the structure of
    the dataset's ``element_spec`` (an object component holding ``None`` is a leaf there)."""
    arrays: dict[str, np.ndarray] = {}
    if isinstance(store, ArraysAccess):
        for j, a in enumerate(store.leaves):
            arrays[f"leaf_{j}"] = a
        tdef = store.tdef
    else:
        if tdef == "first" or not elements:
            tdef = st.treedef(elements[0]) if elements else st.LEAF
        for i, e in enumerate(elements):
            for j, a in enumerate(st.flatten_up_to(tdef, e)):
                arrays[f"e{i}_{j}"] = np.asarray(a)
    strings = [name for name, a in arrays.items() if a.dtype == object]
    for name in strings:
        arrays.update(_encode_bytes(path, name, arrays.pop(name)))
    header = {
        "format": CACHE_FORMAT,
        "count": len(elements),
        "stacked": isinstance(store, ArraysAccess),
        "treedef": st.encode_treedef(tdef),
        "leaves": st.num_leaves(tdef) if elements else 0,
        "bytes": strings,
        "as_arrays": store.as_arrays if isinstance(store, ArraysAccess) else [],
    }
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with _fs.atomic_write(path) as f:
        (np.savez_compressed if compressed else np.savez)(f, **arrays)


def _encode_bytes(path: str, name: str, a: np.ndarray) -> dict[str, np.ndarray]:
    """An object array of ``bytes`` as three plain arrays: data, offsets and shape."""
    flat = a.ravel()
    for r in flat:
        if not isinstance(r, bytes):
            raise TypeError(
                f"cache({path!r}): component {name} has dtype object and holds a "
                f"{type(r).__name__}; a file cache stores numeric, bool and string (bytes) "
                "components, never pickles. Convert it to one of those first (or cache in "
                "memory: cache())."
            )
    lengths = np.fromiter((len(r) for r in flat), np.int64, len(flat))
    return {
        f"{name}.data": np.frombuffer(b"".join(flat), np.uint8),
        f"{name}.offsets": np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)]),
        f"{name}.shape": np.asarray(a.shape, np.int64),
    }


def _decode_bytes(z: Any, name: str) -> np.ndarray:
    data = z[f"{name}.data"].tobytes()
    offsets = z[f"{name}.offsets"].tolist()
    out = np.empty(len(offsets) - 1, object)
    for i in range(len(out)):
        out[i] = data[offsets[i] : offsets[i + 1]]
    return out.reshape(tuple(z[f"{name}.shape"].tolist()))


def _load(path: str) -> RandomAccess | None:
    try:
        return read_store(path)
    except Exception as e:  # a damaged or foreign file: refill and overwrite it
        warnings.warn(
            f"cache: ignoring {path!r}, it is not a complete phalanx cache ({e})", stacklevel=3
        )
        return None


def read_store(path: str) -> RandomAccess:
    """The elements a ``_save`` wrote to ``path`` (raises on a damaged or foreign file)."""
    with _fs.open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
        header = json.loads(bytes(z["__header__"]).decode())
        if header.get("format") != CACHE_FORMAT:
            raise ValueError(f"unknown format {header.get('format')!r}")
        tdef = st.decode_treedef(header["treedef"])
        k, n = int(header["leaves"]), int(header["count"])
        strings = set(header.get("bytes", ()))

        def get(name: str) -> np.ndarray:
            return _decode_bytes(z, name) if name in strings else z[name]

        if header["stacked"]:
            leaves = [get(f"leaf_{j}") for j in range(k)]
            return ArraysAccess(tdef, leaves, [bool(b) for b in header.get("as_arrays", ())])
        return ListAccess(
            [st.unflatten(tdef, [get(f"e{i}_{j}") for j in range(k)]) for i in range(n)]
        )
