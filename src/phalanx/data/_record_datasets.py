"""File sources: ``TFRecordDataset``, ``TextLineDataset`` and ``FixedLengthRecordDataset``.

Each is a ``FileSourceDataset`` (so the FILE auto-shard policy gives each input
pipeline its share of the files) that reads its files one after another with
the resumable readers of ``phalanx.io._tfrecord`` and ``phalanx.io._lines_and_records``. An
element is one record as a 0-d object array holding ``bytes`` (what
TensorFlow's ``.numpy()`` gives for strings); batches of them are object arrays
that ``parse_example`` takes directly. Records are not stored as numpy ``S``
arrays, which would drop trailing zero bytes (a serialized Example often ends
with one).

The iterator's state is ``{"file", "record", "offset", "path"}``: the file's
index, the next record's index in it, its byte offset in the (decompressed)
file, and the file's name (a URL for remote files), so a restored iterator
seeks straight to the record instead of re-reading the file (on an object
store: one ranged read from the offset), and refuses a state whose file is not
at that index any more (a bucket that gained files since the checkpoint
reorders a ``list_files`` glob).

With ``num_parallel_reads`` or a ``Dataset`` of file names, the constructor
returns ``names.interleave(one-file dataset, cycle_length=num_parallel_reads,
block_length=1, num_parallel_calls=num_parallel_reads)``, as tf.data does:
records come from the files in turn, each open file read by its own thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, IteratorStateError
from ..io import (
    FixedLengthRecordReader,
    RecordBlock,
    TextLineReader,
    TFRecordReader,
    normalize_compression_type,
)
from ..io import _record_blocks as rb
from ._dataset import Dataset
from ._iterator import DatasetIterator
from ._options import AUTOTUNE
from ._sources import FileSourceDataset, ListFilesDataset
from ._structure import TensorSpec

__all__ = ["FixedLengthRecordDataset", "TFRecordDataset", "TextLineDataset"]

_log = logging.getLogger("phalanx.data")


def _split_parallel(cls, filenames: Any, num_parallel_reads: Any, make_one) -> Dataset | None:
    """The interleaved dataset for a Dataset of names or parallel reads; None for a plain source."""
    if num_parallel_reads not in (None, AUTOTUNE) and int(num_parallel_reads) <= 0:
        raise DatasetArgumentError(
            f"{cls.__name__}: num_parallel_reads must be a positive int or AUTOTUNE; "
            f"received {num_parallel_reads!r}."
        )
    if isinstance(filenames, Dataset):
        names = filenames
    elif num_parallel_reads is None or num_parallel_reads == 1:
        return None
    else:
        names = ListFilesDataset(filenames)
        if len(names.filenames) <= 1:
            return None
    if num_parallel_reads is None:
        return names.interleave(make_one, cycle_length=1, block_length=1)
    return names.interleave(
        make_one,
        cycle_length=num_parallel_reads,
        block_length=1,
        num_parallel_calls=num_parallel_reads,
    )


class _RecordFileDataset(FileSourceDataset):
    """A file source whose reader reports ``position == (record, offset)``."""

    def __new__(cls, *args: Any, **kwargs: Any):
        if not args and not kwargs:  # copy.copy and friends
            return super().__new__(cls)
        parallel = cls._parallel(*args, **kwargs)
        return parallel if parallel is not None else super().__new__(cls)

    @classmethod
    def _parallel(cls, *args: Any, **kwargs: Any) -> Dataset | None:
        return None

    def _reader(self, filename: str, start: tuple[int, int] | None):
        raise NotImplementedError

    def _read_file(self, filename: str):
        return iter(self._reader(filename, None))

    def _iterator(self, ctx):
        return _RecordFileIterator(self)

    def _compute_spec(self):
        return TensorSpec((), object)


class FileBlocksIterator(DatasetIterator):
    """Reads a ``_RecordFileDataset``'s files one after another, a block of values at a time.

    The reader of each file yields values and reports ``position == (record, offset)``
    after each (``_record_blocks.py``); ``pending`` holds the current block's values and
    ``ends`` the reader's ``(record, offset)`` after each; ``at`` is the next one to hand
    out. ``record``/``offset`` are the position after the last value handed out, so the
    state never includes values read ahead. Subclasses say what a block and an element
    are (``_block``, ``_element``).
    """

    def __init__(self, ds: _RecordFileDataset):
        self.ds = ds
        self.file = 0
        self.record = 0
        self.offset: int | None = None
        self.reader = None
        self.it = None
        self.error: Exception | None = None  # met by records_ahead, raised in order
        self._drop_block()

    def _drop_block(self) -> None:
        self.pending = rb.EMPTY
        self.ends: tuple[list[int], list[int]] = ([], [])
        self.at = 0

    def _fill(self) -> bool:
        """Reads the next block of records into ``pending``; False after the last file."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        names = self.ds._filenames
        while self.file < len(names):
            if self.it is None:
                start = None if self.offset is None else (self.record, self.offset)
                self.reader = self.ds._reader(names[self.file], start)
                self.it = _blocks_of(self.reader)
            try:
                block = next(self.it)
            except StopIteration:
                self._close_file()
                self.file += 1
                self.record, self.offset = 0, None
                continue
            self.pending = self._block(block.records)
            self.ends = (block.index.tolist(), block.offset.tolist())
            self.at = 0
            return True
        return False

    def _take(self, n: int) -> None:
        self.at += n
        self.record, self.offset = self.ends[0][self.at - 1], self.ends[1][self.at - 1]

    def _block(self, values: list[Any]) -> Any:
        return values

    def _element(self, value: Any) -> Any:
        return value

    def __next__(self) -> Any:
        if self.at == len(self.pending) and not self._fill():
            raise StopIteration
        self._take(1)
        return self._element(self.pending[self.at - 1])

    def close(self) -> None:
        self._close_file()

    def _close_file(self) -> None:
        if self.it is not None:
            self.it.close()
        damaged = getattr(self.reader, "damaged", None)
        if damaged:
            _log.warning(
                "%s: skipped %d damaged records (record, byte offset, what): %s",
                self.reader.path,
                len(damaged),
                damaged[:10],
            )
            damaged.clear()
        self.it = self.reader = None
        self._drop_block()

    def get_state(self) -> dict[str, Any]:
        names = self.ds._filenames
        path = names[self.file] if self.file < len(names) else None
        return {"file": self.file, "record": self.record, "offset": self.offset, "path": path}

    def set_state(self, state: dict[str, Any]) -> None:
        self._close_file()
        self.error = None
        self.file, self.record = int(state["file"]), int(state["record"])
        self.offset = None if state.get("offset") is None else int(state["offset"])
        names = self.ds._filenames
        path = state.get("path")
        here = names[self.file] if 0 <= self.file < len(names) else None
        if path is not None and path != here:
            raise IteratorStateError(
                f"The iterator state was saved reading {path!r} as file {self.file} of this "
                f"source, but file {self.file} is now {here!r}: the files changed since the "
                "checkpoint (new files in the bucket or folder reorder a list_files glob). "
                "Restore with the same files, or start the input from the beginning."
            )


class _RecordFileIterator(FileBlocksIterator):
    """A ``FileBlocksIterator`` of string records, handing them over in blocks too
    (``next_records`` ...: ``_record_blocks.py``)."""

    def _block(self, values: list[Any]) -> np.ndarray:
        return rb.objects(values)

    def _element(self, value: Any) -> np.ndarray:
        return rb.as_element(value)

    def next_records(self, k: int) -> np.ndarray:
        """The next ``1..k`` records as an ``object`` array (empty at the end)."""
        if self.at == len(self.pending) and not self._fill():
            return rb.EMPTY
        start = self.at
        self._take(min(k, len(self.pending) - start))
        return self.pending[start : self.at]

    def next_records_and_states(self, k: int) -> tuple[np.ndarray, Any]:
        """``next_records(k)`` and a function of ``i`` giving the state after record ``i`` of
        them (for a reader thread that hands records over ahead of the consumer)."""
        records = self.next_records(k)
        file, start = self.file, self.at - len(records)
        path, (index, offset) = self.ds._filenames[file] if records.size else None, self.ends

        def state_after(i: int) -> dict[str, Any]:
            return {
                "file": file,
                "record": index[start + i],
                "offset": offset[start + i],
                "path": path,
            }

        return records, state_after

    def records_ahead(self) -> np.ndarray:
        """The records read and not handed out yet (a new block if none; empty at the end).

        An error reading the next block is kept, and raised by the next ``__next__`` or
        ``next_records``: at the position where reading one by one meets it.
        """
        if self.at == len(self.pending) and self.error is None:
            try:
                self._fill()
            except Exception as e:
                self.error = e
        return self.pending[self.at :]

    def skip_records(self, n: int) -> None:
        """Hands out the first ``n`` records of ``records_ahead()``."""
        if n:
            self._take(n)


_BLOCK = 256  # records per block from a reader that yields them one by one


def _blocks_of(reader: Any) -> Iterator[RecordBlock]:
    """``reader``'s records as ``RecordBlock`` s: its own blocks, or up to ``_BLOCK`` at a time."""
    if hasattr(reader, "blocks"):
        yield from reader.blocks()
        return
    records, index, offset = [], [], []
    try:
        for data in reader:
            records.append(data)
            i, o = reader.position
            index.append(i)
            offset.append(o)
            if len(records) == _BLOCK:
                yield RecordBlock(records, np.array(index), np.array(offset))
                records, index, offset = [], [], []
    except Exception:
        if records:  # the records before an error first, as one by one
            yield RecordBlock(records, np.array(index), np.array(offset))
        raise
    if records:
        yield RecordBlock(records, np.array(index), np.array(offset))


class TFRecordDataset(_RecordFileDataset):
    """The records of one or more TFRecord files (``tf.data.TFRecordDataset``).

    Every record's CRCs are checked. Elements are 0-d object arrays holding
    the record's ``bytes``; batch them and parse the batch with
    ``parse_example``. Checkpointable: a restored iterator resumes at the exact
    record, seeking to its byte offset.

    Args:
        filenames: a file name, a list of them, or a ``Dataset`` of names
            (e.g. ``Dataset.list_files(...)``).
        compression_type: ``None`` or ``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (phalanx reads at least 4 MiB).
        num_parallel_reads: read this many files at a time, each by its own
            thread, one record from each in turn (tf.data's order); None reads
            them one after another in the consumer thread.
        skip_corrupt: skip records whose CRC does not match (and a truncated
            tail), logging them, instead of raising ``DataLossError``.
        name: accepted for TensorFlow compatibility.

    Raises:
        CorruptRecordError: while iterating, a record fails its CRC check.
        TruncatedRecordError: while iterating, a file ends inside a record
            (after every complete record of it).

    Examples:
        >>> import os, tempfile
        >>> from phalanx.io._tfrecord import TFRecordWriter
        >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
        >>> with TFRecordWriter(path) as w:
        ...     for i in range(3):
        ...         w.write(b"record %d" % i)
        >>> [r.item() for r in TFRecordDataset(path)]
        [b'record 0', b'record 1', b'record 2']
        >>> next(iter(TFRecordDataset([path, path], num_parallel_reads=2).batch(2)))
        array([b'record 0', b'record 0'], dtype=object)
    """

    def __init__(
        self,
        filenames: Any,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        num_parallel_reads: int | None = None,
        *,
        skip_corrupt: bool = False,
        name: str | None = None,
    ):
        super().__init__(filenames)
        self._compression = normalize_compression_type(compression_type)
        self._buffer_size = buffer_size
        self._skip_corrupt = bool(skip_corrupt)

    @classmethod
    def _parallel(
        cls,
        filenames: Any,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        num_parallel_reads: int | None = None,
        *,
        skip_corrupt: bool = False,
        name: str | None = None,
    ) -> Dataset | None:
        def one(filename: Any) -> Dataset:
            return cls(filename, compression_type, buffer_size, skip_corrupt=skip_corrupt)

        return _split_parallel(cls, filenames, num_parallel_reads, one)

    def _reader(self, filename: str, start: tuple[int, int] | None) -> TFRecordReader:
        return TFRecordReader(
            filename,
            self._compression,
            buffer_size=self._buffer_size,
            skip_corrupt=self._skip_corrupt,
            start=start or (0, 0),
        )


class TextLineDataset(_RecordFileDataset):
    """The lines of one or more text files (``tf.data.TextLineDataset``).

    As TensorFlow: lines end at ``\\n`` (dropped), every ``\\r`` is dropped,
    and a last line without ``\\n`` is kept unless empty. Elements are 0-d
    object arrays holding the line's ``bytes``.

    Args:
        filenames: a file name, a list of them, or a ``Dataset`` of names.
        compression_type: ``None`` or ``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time.
        num_parallel_reads: files to read at a time (a thread each), one line
            from each in turn.
        name: accepted for TensorFlow compatibility.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(path, "w").write("one\\ntwo\\n")
        >>> [line.item() for line in TextLineDataset(path)]
        [b'one', b'two']
    """

    def __init__(
        self,
        filenames: Any,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        num_parallel_reads: int | None = None,
        *,
        name: str | None = None,
    ):
        super().__init__(filenames)
        self._compression = normalize_compression_type(compression_type)
        self._buffer_size = buffer_size

    @classmethod
    def _parallel(
        cls,
        filenames: Any,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        num_parallel_reads: int | None = None,
        *,
        name: str | None = None,
    ) -> Dataset | None:
        def one(filename: Any) -> Dataset:
            return cls(filename, compression_type, buffer_size)

        return _split_parallel(cls, filenames, num_parallel_reads, one)

    def _reader(self, filename: str, start: tuple[int, int] | None) -> TextLineReader:
        return TextLineReader(
            filename, self._compression, buffer_size=self._buffer_size, start=start or (0, 0)
        )


class FixedLengthRecordDataset(_RecordFileDataset):
    """Fixed-length records of one or more binary files (``tf.data.FixedLengthRecordDataset``).

    Args:
        filenames: a file name, a list of them, or a ``Dataset`` of names.
        record_bytes: the length of every record.
        header_bytes: bytes to skip at the start of each file.
        footer_bytes: bytes to ignore at the end of each file.
        buffer_size: bytes to read at a time.
        compression_type: ``None`` or ``""``, ``"ZLIB"`` or ``"GZIP"``.
        num_parallel_reads: files to read at a time (a thread each), one record
            from each in turn.
        name: accepted for TensorFlow compatibility.

    Raises:
        ValueError: while iterating, an uncompressed file's body (without header
            and footer) is not a multiple of ``record_bytes`` (before any record of it).
        DataLossError: the same for a compressed file, after its complete records.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "f.bin")
        >>> _ = open(path, "wb").write(b"HEADER012345FOOTER")
        >>> ds = FixedLengthRecordDataset(path, 2, header_bytes=6, footer_bytes=6)
        >>> [r.item() for r in ds]
        [b'01', b'23', b'45']
    """

    def __init__(
        self,
        filenames: Any,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        buffer_size: int | None = None,
        compression_type: str | None = None,
        num_parallel_reads: int | None = None,
        *,
        name: str | None = None,
    ):
        super().__init__(filenames)
        self._args = dict(
            record_bytes=int(record_bytes),
            header_bytes=header_bytes,
            footer_bytes=footer_bytes,
            compression_type=normalize_compression_type(compression_type),
            buffer_size=buffer_size,
        )
        if self._args["record_bytes"] <= 0:
            raise DatasetArgumentError(
                f"FixedLengthRecordDataset: record_bytes must be positive; received {record_bytes!r}."
            )

    @classmethod
    def _parallel(
        cls,
        filenames: Any,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        buffer_size: int | None = None,
        compression_type: str | None = None,
        num_parallel_reads: int | None = None,
        *,
        name: str | None = None,
    ) -> Dataset | None:
        def one(filename: Any) -> Dataset:
            return cls(
                filename, record_bytes, header_bytes, footer_bytes, buffer_size, compression_type
            )

        return _split_parallel(cls, filenames, num_parallel_reads, one)

    def _reader(self, filename: str, start: tuple[int, int] | None) -> FixedLengthRecordReader:
        return FixedLengthRecordReader(filename, start=start, **self._args)
