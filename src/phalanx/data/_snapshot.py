"""``Dataset.snapshot``: the first complete pass is saved to a folder, later passes read it.

Built on ``Dataset.save``'s folder format (``_save.py``), as tf.data's snapshot
and save share theirs. A snapshot of ``input`` at ``path`` lives in
``path/<fingerprint>/``: the fingerprint names the pipeline (a hash of its
transformations' kinds and its ``element_spec``), so different pipelines can
share ``path``. Each writing pass collects its elements by shard
(``shard_func``, as ``save``) while it yields them, and at the end of the input
writes them as a saved dataset in ``path/<fingerprint>/<run>/`` and then
``path/<fingerprint>/snapshot.json`` naming that run: a pass abandoned before
the end writes nothing, and passes that run at once each write their own run
(the last to finish is read). Later iterators read the finalized run through
``reader_func(shards)`` (``shards``: a dataset of one dataset per shard, in
shard order), by default ``shards.interleave(lambda x: x, cycle_length=
os.cpu_count())``, tf.data's default reader. Iterators checkpoint in either
mode: a writing pass saves its count of elements (a restore replays them), a
reading pass the reader's position.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from typing import Any

from ..errors import DatasetArgumentError, DatasetTypeError, IteratorStateError
from ..io import _fs
from ._dataset import Dataset
from ._iterator import DatasetIterator, replay, state_int
from ._save import ShardsDataset, read_folder, shard_of, write_folder

FORMAT = "phalanx.data.snapshot/1"
RUN_FILE = "snapshot.json"


def compression_of(compression: Any) -> bool:
    """Whether the snapshot's shard files are deflated (``"GZIP"``)."""
    if compression in (None, "", "AUTO", "NONE"):
        return False
    if compression == "GZIP":
        return True
    raise DatasetArgumentError(
        f"snapshot: compression must be 'AUTO' (the default: uncompressed .npz), 'GZIP' or None, "
        f"got {compression!r}. phalanx's snapshots are .npz files; 'SNAPPY' is not supported."
    )


class SnapshotDataset(Dataset):
    """``Dataset.snapshot``: see the module docstring."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, path: Any, compression, reader_func, shard_func):
        if not isinstance(path, str | os.PathLike) or not os.fspath(path):
            raise DatasetTypeError(
                f"snapshot: path must be a folder name (str or os.PathLike), got "
                f"{type(path).__name__} {path!r:.60}; e.g. snapshot('/data/snapshots/train')."
            )
        for arg, fn in (("reader_func", reader_func), ("shard_func", shard_func)):
            if fn is not None and not callable(fn):
                raise DatasetTypeError(
                    f"snapshot: {arg} must be a function or None, got {type(fn).__name__}."
                )
        self._input = input_dataset
        self._folder = os.fspath(path)
        self._compressed = compression_of(compression)
        self._reader_func, self._shard_func = reader_func, shard_func

    def _fingerprint_folder(self) -> str:
        key = f"{self._input._signature()}|{self._input.element_spec!r}"
        return f"{self._folder}/{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    def _finalized_run(self) -> str | None:
        """The folder of the complete snapshot to read, or None (write one)."""
        run_file = f"{self._fingerprint_folder()}/{RUN_FILE}"
        if not _fs.exists(run_file):
            return None
        with _fs.open(run_file, "rb") as f:
            meta = json.loads(f.read().decode())
        if meta.get("format") != FORMAT:
            raise DatasetArgumentError(
                f"snapshot: {run_file!r} is not a phalanx snapshot (format "
                f"{meta.get('format')!r}); give snapshot a folder of its own."
            )
        return f"{self._fingerprint_folder()}/{meta['run']}"

    def _reader(self, run: str) -> Dataset:
        spec = self._input.element_spec
        shards = ShardsDataset(read_folder(run, spec, "snapshot"), spec)
        if self._reader_func is None:
            return shards.interleave(lambda shard: shard, cycle_length=os.cpu_count() or 1)
        out = self._reader_func(shards)
        if not isinstance(out, Dataset):
            raise DatasetTypeError(
                f"snapshot: reader_func must return a Dataset of the elements (e.g. "
                f"datasets.interleave(lambda x: x)), got {type(out).__name__}."
            )
        return out

    def _finish(self, shards: dict[int, list[Any]]) -> None:
        """Write a complete pass as a new run, then name it in ``snapshot.json``."""
        run = secrets.token_hex(8)
        write_folder(
            f"{self._fingerprint_folder()}/{run}",
            shards,
            self._input.element_spec,
            self._compressed,
        )
        with _fs.atomic_write(f"{self._fingerprint_folder()}/{RUN_FILE}") as f:
            f.write(json.dumps({"format": FORMAT, "run": run}).encode())

    def _iterator(self, ctx):
        return _SnapshotIterator(self, ctx)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec


class _SnapshotIterator(DatasetIterator):
    """Reads the finalized snapshot, or writes one while passing the input through."""

    def __init__(self, ds: SnapshotDataset, ctx):
        self.ds, self.ctx = ds, ctx
        self.inner: DatasetIterator | None = None
        self.shards: dict[int, list[Any]] | None = None  # None: reading, or written
        self.count = 0

    def _start(self, write: bool | None = None) -> DatasetIterator:
        run = self.ds._finalized_run()
        if write is None:
            write = run is None
        if write:
            self.shards = {}
            self.inner = self.ds._input._iterator(self.ctx)
        elif run is None:
            raise IteratorStateError(
                f"set_state: the state was saved while reading the snapshot in "
                f"{self.ds._folder!r}, which holds no complete snapshot of this pipeline now. "
                "Restore it where that snapshot is, or start this dataset afresh."
            )
        else:
            self.inner = self.ds._reader(run)._iterator(self.ctx)
        self.writing = write
        return self.inner

    def __next__(self):
        inner = self.inner if self.inner is not None else self._start()
        if not self.writing:
            return next(inner)
        try:
            x = next(inner)
        except StopIteration:
            if self.shards is not None:
                shards, self.shards = self.shards, None
                self.ds._finish(shards)
            raise
        if self.shards is not None:
            k = shard_of(self.ds._shard_func, x, self.count, "snapshot")
            self.shards.setdefault(k, []).append(x)
        self.count += 1
        return x

    def children(self):
        return [] if self.inner is None else [self.inner]

    def get_state(self):
        if self.inner is None:
            return {"mode": "start"}
        if self.writing:
            return {"mode": "write", "i": self.count}
        return {"mode": "read", "reader": self.inner.get_state()}

    def set_state(self, state):
        mode = state.get("mode") if isinstance(state, dict) else None
        if mode == "start":
            return
        if mode == "write":
            n = state_int(state, "i")
            self._start(write=True)
            replay(self, n, "the snapshot's input")
        elif mode == "read":
            self._start(write=False).set_state(state["reader"])
        else:
            raise IteratorStateError(
                f"set_state: a snapshot's state has mode 'start', 'write' or 'read'; got "
                f"{str(state)[:80]}. Restore a state saved by get_state() of the same pipeline."
            )
