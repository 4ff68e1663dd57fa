"""TFRecord files, byte for byte as TensorFlow writes and reads them.

A TFRecord file is a sequence of records, each framed as::

    uint64  length          little-endian
    uint32  masked CRC-32C of the 8 length bytes
    bytes   data[length]
    uint32  masked CRC-32C of data

optionally inside one GZIP or ZLIB stream. ``mask(crc) = rotr15(crc) +
0xa282ead8 (mod 2**32)``, as in TensorFlow's ``crc32c::Mask``.

This module holds the framing (`TFRecordWriter`, `TFRecordOptions`)
and a low-level, resumable reader of one file (`TFRecordReader`) that the
``TFRecordDataset`` source and ``phalanx records`` build on. Reading goes a
large chunk at a time, and every complete record of a chunk is framed at once
(``TFRecordReader.blocks``, ``_frame``): the length headers are followed with
numpy along runs of one record length, the length CRCs checked once per
distinct length, the data CRCs computed by one ``map`` of CRC-32C (in C) and
compared as an array. A record that fails a check, or does not fit in the
chunk, goes through the record-by-record loop, which reports, skips or reads on.
"""

from __future__ import annotations

import dataclasses
import io
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

import crc32c as _crc32c
import numpy as np

from ..errors import (
    CorruptRecordError,
    DataLossError,
    DatasetArgumentError,
    DatasetTypeError,
    TruncatedRecordError,
)
from . import _fs

__all__ = [
    "RecordBlock",
    "TFRecordOptions",
    "TFRecordReader",
    "TFRecordWriter",
    "masked_crc32c",
    "tf_record_iterator",
]

_crc = _crc32c.crc32c
_HEADER = struct.Struct("<QI")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_HEADER_BYTES = 12
_FOOTER_BYTES = 4
# TensorFlow reads through a 256 KiB buffer by default; Python pays per call,
# so phalanx reads at least 4 MiB at a time.
_MIN_CHUNK = 4 << 20
_WBITS = {"ZLIB": 15, "GZIP": 31}
# A record longer than this is checked before it is held: in a file, against the bytes left;
# in a compressed stream, by streaming its CRC through (bounded memory), so a forged length
# header (1 GiB, 2**60) cannot allocate more than the file really holds.
_LARGE_RECORD = 64 << 20
_COMPRESSION_TYPES = (None, "", "ZLIB", "GZIP")


def masked_crc32c(data: bytes) -> int:
    """Returns TensorFlow's masked CRC-32C of ``data``, as stored in TFRecord framing.

    Examples:
        >>> hex(masked_crc32c(b""))
        '0xa282ead8'
    """
    crc = _crc(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def _mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


class RecordBlock(NamedTuple):
    """Consecutive records of one file, as the reader yields them (internal).

    Attributes:
        records: the records' data, in file order.
        index: ``(n,)`` int64, the reader's record index after each record.
        offset: ``(n,)`` int64, the byte offset (in the decompressed stream) after each record.
    """

    records: list[bytes]
    index: np.ndarray
    offset: np.ndarray

    @classmethod
    def one(cls, data: bytes, index: int, offset: int) -> RecordBlock:
        """A block of one record, after which the reader is at ``(index, offset)``."""
        return cls([data], np.array([index], np.int64), np.array([offset], np.int64))


_U32_BYTES = np.arange(4)
_U64_BYTES = np.arange(8)
_RUN_MIN = 8  # a run of equal lengths shorter than this stops the vectorized walk


def _masked(crcs: np.ndarray) -> np.ndarray:
    """``_mask`` of every element of a uint64 array of CRC-32C values."""
    c = crcs.astype(np.uint64)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def _gather(u8: np.ndarray, at: np.ndarray, width: np.ndarray, dtype: str) -> np.ndarray:
    """The little-endian integers of ``len(width)`` bytes starting at each of ``at``."""
    return u8[at[:, None] + width].view(dtype).ravel()


def _walk(buf: bytes, u8: np.ndarray, pos: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and data lengths of the complete records in ``buf[pos:end]``, trusting headers.

    Follows the length headers one by one, except along a run of records of
    one length, which is checked and taken at once with numpy (fixed-size
    records, the common case, cost no Python per record).
    """
    runs: list[tuple[np.ndarray, np.ndarray]] = []
    starts: list[int] = []  # records walked one by one since the last run
    lengths: list[int] = []
    unpack = _U64.unpack_from
    p, prev, probe_after = pos, -1, 0
    while p + _HEADER_BYTES <= end:
        (length,) = unpack(buf, p)
        step = length + 16
        if p + step > end:
            break
        if length == prev and p >= probe_after:
            count = (end - p) // step
            at = p + step * np.arange(count, dtype=np.int64)
            same = _gather(u8, at, _U64_BYTES, "<u8") == length
            run = count if same.all() else int(np.argmin(same))
            if run >= _RUN_MIN:
                runs.append((np.array(starts, np.int64), np.array(lengths, np.int64)))
                runs.append((at[:run], np.full(run, length, np.int64)))
                starts, lengths = [], []
                p += run * step
                prev = -1
                continue
            probe_after = p + 64 * step  # lengths vary here: walk a while before trying again
        starts.append(p)
        lengths.append(length)
        prev = length
        p += step
    runs.append((np.array(starts, np.int64), np.array(lengths, np.int64)))
    if len(runs) == 1:
        return runs[0]
    return np.concatenate([r[0] for r in runs]), np.concatenate([r[1] for r in runs])


def _frame(buf: bytes, pos: int, end: int, index: int, offset: int) -> RecordBlock | None:
    """The complete records at the start of ``buf[pos:end]`` whose two CRCs match, at once.

    Stops before the first record that is incomplete in ``buf`` or fails a
    CRC check (the record-by-record path reports, skips or reads on from
    there); None when that is the first one. ``index``/``offset``: the
    reader's position at ``pos``.
    """
    u8 = np.frombuffer(buf, np.uint8)
    starts, lengths = _walk(buf, u8, pos, end)
    n = len(starts)
    if n == 0:
        return None
    ok = _gather(u8, starts + 8, _U32_BYTES, "<u4") == _header_crcs(lengths)
    data_at = starts + _HEADER_BYTES
    data = [buf[a:b] for a, b in zip(data_at.tolist(), (data_at + lengths).tolist(), strict=True)]
    good = int(np.argmin(ok)) if not ok.all() else n  # a bad header: its length is not trusted
    if good:
        crcs = np.fromiter(map(_crc, data[:good]), np.uint64, good)
        stored = _gather(u8, data_at[:good] + lengths[:good], _U32_BYTES, "<u4")
        match = _masked(crcs) == stored
        good = good if match.all() else int(np.argmin(match))
    if good == 0:
        return None
    ends = offset + np.cumsum(lengths[:good] + 16)
    return RecordBlock(data[:good], index + 1 + np.arange(good, dtype=np.int64), ends)


def _read_on(src: Any, buf: bytes, pos: int, n: int) -> bytes | None:
    """``buf[pos:]`` followed by up to ``n`` more bytes of ``src``; None at the end of ``src``.

    From a local uncompressed file the unread tail of ``buf`` (a partial
    record) is read again with the next chunk instead of copied in front of it.
    """
    keep = len(buf) - pos
    if keep and isinstance(src, io.FileIO):
        src.seek(-keep, io.SEEK_CUR)
        more = src.read(keep + n)
        return more if len(more) > keep else None
    more = src.read(n)
    if not more:
        return None
    return buf[pos:] + more if keep else more


def _header_crcs(lengths: np.ndarray) -> np.ndarray:
    """The masked CRC-32C of each length's 8 header bytes (one CRC per distinct length)."""
    uniq, inverse = np.unique(lengths, return_inverse=True)
    masked = np.array([_mask(_crc(_U64.pack(int(v)))) for v in uniq], np.int64)
    return masked[inverse]


def normalize_compression_type(compression_type: str | None) -> str:
    """Returns ``""``, ``"ZLIB"`` or ``"GZIP"``; raises ``ValueError`` for anything else."""
    if compression_type is None:
        return ""
    if not isinstance(compression_type, str):
        raise DatasetTypeError(
            "compression_type must be None, '', 'ZLIB' or 'GZIP'; "
            f"received {compression_type!r} of type {type(compression_type).__name__}."
        )
    upper = compression_type.upper()
    if upper in ("", "NONE"):
        return ""
    if upper not in _WBITS:
        raise DatasetArgumentError(
            f"Unsupported compression_type {compression_type!r}: "
            "use None (or ''), 'ZLIB' or 'GZIP', as TensorFlow does."
        )
    return upper


@dataclasses.dataclass(frozen=True)
class TFRecordOptions:
    """How a TFRecord file is compressed (``tf.io.TFRecordOptions``).

    Args:
        compression_type: ``None`` or ``""`` (no compression), ``"ZLIB"`` or ``"GZIP"``.
        compression_level: zlib level 0-9, or -1 for zlib's default (6), as TensorFlow.
        mem_level: zlib ``memLevel``; TensorFlow's default is 9.
        compression_strategy: zlib strategy (``zlib.Z_DEFAULT_STRATEGY`` ...).

    Examples:
        >>> TFRecordOptions("GZIP").compression_type
        'GZIP'
        >>> TFRecordOptions.get_compression_type_string("zlib")
        'ZLIB'
    """

    compression_type: str | None = None
    compression_level: int = -1
    mem_level: int = 9
    compression_strategy: int = zlib.Z_DEFAULT_STRATEGY

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "compression_type", normalize_compression_type(self.compression_type)
        )
        if not -1 <= int(self.compression_level) <= 9:
            raise ValueError(
                f"compression_level must be -1 (zlib's default) or 0..9; "
                f"received {self.compression_level!r}."
            )

    @classmethod
    def get_compression_type_string(cls, options: TFRecordOptions | str | None) -> str:
        """Returns the compression type of ``options`` (an options object or a string)."""
        if isinstance(options, TFRecordOptions):
            return options.compression_type or ""
        return normalize_compression_type(options)

    @classmethod
    def coerce(cls, options: TFRecordOptions | str | None) -> TFRecordOptions:
        """Returns ``options`` as a `TFRecordOptions` (a string names the compression)."""
        if isinstance(options, TFRecordOptions):
            return options
        return cls(compression_type=options)


def frame_record(record: bytes) -> bytes:
    """Returns ``record`` framed as one TFRecord (header, data, footer).

    Examples:
        >>> frame_record(b"a").hex()
        '01000000000000000175de4161786ee428'
    """
    header = _U64.pack(len(record))
    return b"".join(
        (header, _U32.pack(_mask(_crc(header))), record, _U32.pack(_mask(_crc(record))))
    )


class TFRecordWriter:
    """Writes records to a TFRecord file (``tf.io.TFRecordWriter``).

    Without compression the file is byte-identical to TensorFlow's for the same
    records. A context manager: leaving the ``with`` block closes the file.

    Args:
        path: the file to create (replaced if it exists): a local path or a URL
            (``gs://``, ``s3://``, ``memory://`` ...; on an object store the
            file appears when the writer is closed).
        options: a `TFRecordOptions`, or a compression type string
            (``"GZIP"``, ``"ZLIB"``, ``""``/``None``).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with TFRecordWriter(path) as w:
        ...     w.write(b"hello")
        ...     w.write(b"")
        >>> [bytes(r) for r in TFRecordReader(path)]
        [b'hello', b'']
    """

    def __init__(self, path: str | os.PathLike, options: TFRecordOptions | str | None = None):
        self._options = TFRecordOptions.coerce(options)
        self._path = os.fspath(path)
        self._file: BinaryIO | None = _fs.open(self._path, "wb", buffering=1 << 20)
        kind = self._options.compression_type
        self._compressor = (
            zlib.compressobj(
                self._options.compression_level,
                zlib.DEFLATED,
                _WBITS[kind],
                self._options.mem_level,
                self._options.compression_strategy,
            )
            if kind
            else None
        )

    @property
    def path(self) -> str:
        """The file this writer writes."""
        return self._path

    def _checked_file(self) -> BinaryIO:
        if self._file is None:
            raise ValueError(f"TFRecordWriter for {self._path!r} is closed; open a new one.")
        return self._file

    def write(self, record: bytes) -> None:
        """Appends one record (``bytes``-like) to the file."""
        f = self._checked_file()
        if not isinstance(record, bytes):
            record = bytes(record)
        header = _U64.pack(len(record))
        framed = b"".join(
            (header, _U32.pack(_mask(_crc(header))), record, _U32.pack(_mask(_crc(record))))
        )
        if self._compressor is not None:
            framed = self._compressor.compress(framed)
        f.write(framed)

    def flush(self) -> None:
        """Pushes everything written so far to the file (a sync flush of the compressor)."""
        f = self._checked_file()
        if self._compressor is not None:
            f.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        f.flush()

    def close(self) -> None:
        """Finishes the compressed stream, if any, and closes the file. Idempotent."""
        if self._file is None:
            return
        try:
            if self._compressor is not None:
                self._file.write(self._compressor.flush(zlib.Z_FINISH))
        finally:
            self._file.close()
            self._file = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        # Not contextlib.suppress: module globals may be gone at interpreter exit.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass


class _InflatingSource:
    """A readable over a GZIP or ZLIB stream: ``read(n)`` returns n bytes unless at the end.

    As TensorFlow's reader: a GZIP file may hold several members, read one after
    another; a ZLIB file is one stream, and bytes after its end are ignored.
    When the compressed bytes turn corrupt (trailing garbage, a damaged block),
    everything that decompressed before the damage is returned first, and the
    ``DataLossError`` comes with the read after it, so every intact record is
    yielded before the error (TF yields them too).
    """

    def __init__(self, raw: BinaryIO, kind: str, path: str, chunk: int):
        self._raw = raw
        self._kind = kind
        self._path = path
        self._chunk = chunk
        self._wbits = _WBITS[kind]
        self._inflater = zlib.decompressobj(self._wbits)
        self._pending = b""  # compressed input not yet fed
        self._fed_any = False
        self._members = 0  # complete GZIP members (or ZLIB streams) read
        self._member_out = 0  # bytes the current member gave so far
        self._extra = b""  # decompressed bytes kept for the next read
        self._error: DataLossError | None = None  # raised once what came before is read
        self._done = False
        self.ended_cleanly = True

    def read(self, n: int) -> bytes:
        parts = []
        got = 0
        if self._extra:
            parts.append(self._extra[:n])
            self._extra = self._extra[n:]
            got = len(parts[0])
        while got < n:
            if self._error is not None:
                if parts:
                    break  # the intact bytes first; the error with the next read
                error, self._error = self._error, None
                raise error
            if self._done:
                break
            d = self._inflater
            if d.unconsumed_tail:
                feed, self._pending = d.unconsumed_tail, b""
            elif self._pending:
                feed, self._pending = self._pending, b""
            elif d.eof:
                if self._kind == "ZLIB":  # one stream, as TF: what follows is ignored
                    self._done = True
                    break
                if d.unused_data:  # another gzip member follows
                    self._pending = d.unused_data
                    self._new_member()
                    continue
                more = self._raw.read(self._chunk)
                if not more:
                    break
                self._pending = more
                self._new_member()
                continue
            else:
                feed = self._raw.read(self._chunk)
                if not feed:
                    # An empty file holds no records, and TF ends without an error
                    # on a trailing member that gave no bytes; otherwise the stream
                    # stops before its end marker.
                    self.ended_cleanly = not self._fed_any or (
                        self._members > 0 and self._member_out == 0
                    )
                    break
                self._fed_any = True
            before = d.copy()
            try:
                out = d.decompress(feed, n - got)
            except zlib.error as e:
                out = _salvage(before, feed)
                self._error = DataLossError(
                    f"{self._path}: the {self._kind} stream is corrupted after "
                    f"{self._raw.tell()} compressed bytes ({e}); every record before the damage "
                    f"was read. Was the file written with compression_type={self._kind!r}? "
                    "Re-create the file."
                )
                self._done = True
                out, self._extra = out[: n - got], out[n - got :] + self._extra
            if d.eof and not self._error:
                self._members += 1
            if out:
                parts.append(out)
                got += len(out)
                self._member_out += len(out)
        return b"".join(parts)

    def _new_member(self) -> None:
        self._inflater = zlib.decompressobj(self._wbits)
        self._member_out = 0

    def close(self) -> None:
        self._raw.close()


def _salvage(inflater: Any, feed: bytes) -> bytes:
    """What ``inflater`` gives from the longest prefix of ``feed`` that decompresses without
    an error (a binary search over copies: only on the error path)."""
    lo, hi = 0, len(feed)  # feed[:lo] decompresses; feed[:hi + 1] does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            inflater.copy().decompress(feed[:mid])
        except zlib.error:
            hi = mid - 1
        else:
            lo = mid
    return inflater.decompress(feed[:lo])


def guess_compression(path: str) -> str | None:
    """Returns ``""``, ``"GZIP"`` or ``"ZLIB"`` from a file's first bytes; None if not a TFRecord."""
    with _fs.open(path, "rb", read_ahead=False) as f:
        head = f.read(12)
    if not head:
        return ""
    if len(head) == 12:
        (crc,) = _U32.unpack_from(head, 8)
        if masked_crc32c(head[:8]) == crc:
            return ""
    if head[:2] == b"\x1f\x8b":
        return "GZIP"
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return "ZLIB"
    return None


def open_stream(path: str, compression_type: str, offset: int = 0, chunk: int = _MIN_CHUNK):
    """Opens ``path`` (a local path or a URL) for reading from ``offset`` of its (decompressed) stream.

    Remote files stream through a read-ahead of at least ``chunk`` bytes
    (``phalanx.io``: 16 MiB ranged reads), never downloaded whole first.

    The result has ``read(n)`` (n bytes unless at the end), ``close()`` and
    ``ended_cleanly`` (False when a compressed stream stops before its end marker).
    """
    raw = _fs.open(path, "rb", buffering=0, block_size=chunk)
    if not compression_type:
        raw.seek(offset)
        return raw
    source = _InflatingSource(raw, compression_type, path, chunk)
    remaining = offset
    while remaining:
        skipped = len(source.read(min(remaining, chunk)))
        if not skipped:
            break
        remaining -= skipped
    return source


class TFRecordReader:
    """Iterates the records of one TFRecord file, checking every CRC (low level).

    Iterating yields each record's data as ``bytes``. After each record,
    `position` is ``(index, offset)`` of the next one: its index in the
    file and its byte offset in the (decompressed) stream; pass it back as
    ``start=`` to resume exactly there (for a compressed file the reader
    inflates and discards the bytes before ``offset``).

    Args:
        path: the file: a local path or a URL (``gs://``, ``s3://``, ``memory://`` ...).
        compression_type: ``None``/``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (at least 4 MiB are read; remote
            files read ahead at least 16 MiB per request).
        skip_corrupt: skip records whose CRC does not match (and a truncated
            tail) instead of raising, counting them in `corrupt_count` and
            listing them in `damaged`.
        start: ``(index, offset)`` to start from, as `position` gave.

    Raises:
        CorruptRecordError: a CRC does not match (naming file, record index, byte offset).
        TruncatedRecordError: the file ends inside a record, raised after every
            complete record was yielded.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with TFRecordWriter(path, "GZIP") as w:
        ...     for i in range(3):
        ...         w.write(b"r%d" % i)
        >>> reader = TFRecordReader(path, "GZIP")
        >>> next(iter(reader)), reader.position
        (b'r0', (1, 18))
        >>> list(TFRecordReader(path, "GZIP", start=reader.position))
        [b'r1', b'r2']
    """

    def __init__(
        self,
        path: str | os.PathLike,
        compression_type: str | None = None,
        *,
        buffer_size: int | None = None,
        skip_corrupt: bool = False,
        start: tuple[int, int] = (0, 0),
    ):
        self.path = os.fspath(path)
        self.compression_type = normalize_compression_type(compression_type)
        self._chunk = max(int(buffer_size or 0), _MIN_CHUNK)
        self.skip_corrupt = bool(skip_corrupt)
        index, offset = start
        if index < 0 or offset < 0:
            raise ValueError(f"start must be a non-negative (index, offset); received {start!r}.")
        self.position: tuple[int, int] = (int(index), int(offset))
        self.corrupt_count = 0
        #: ``(index, offset, what)`` of each skipped record, what in
        #: ``"length CRC"``, ``"data CRC"``, ``"truncated"``.
        self.damaged: list[tuple[int, int, str]] = []

    def __iter__(self) -> Iterator[bytes]:
        return self._records()

    def blocks(self) -> Iterator[RecordBlock]:
        """Yields the records as `RecordBlock` s: every complete record of a read chunk
        at once (the same records, in the same order, as iterating the reader).

        `position` is not updated per record: each block carries the
        position after each of its records.
        """
        return self._blocks()

    def _records(self) -> Iterator[bytes]:
        blocks = self._blocks()
        try:
            for block in blocks:
                index, offset = block.index.tolist(), block.offset.tolist()
                for i, data in enumerate(block.records):
                    self.position = (index[i], offset[i])
                    yield data
        finally:
            blocks.close()

    def _open(self):
        return open_stream(self.path, self.compression_type, self.position[1], self._chunk)

    def _corrupt(self, index: int, offset: int, what: str, stored: int, actual: int) -> None:
        if not self.skip_corrupt:
            where = f" (its data at byte {offset + _HEADER_BYTES})" if what == "data" else ""
            hint = self._compressed_hint() if (index, offset) == (0, 0) else ""
            raise CorruptRecordError(
                f"{self.path}: record {index} at byte offset {offset}{where} is corrupted: "
                f"the masked CRC-32C of its {what} is {actual:#010x} but the file stores "
                f"{stored:#010x}. "
                + (
                    hint
                    or "Re-create the file, or read with skip_corrupt=True to skip damaged records."
                )
            )
        self.corrupt_count += 1
        self.damaged.append((index, offset, f"{what} CRC"))

    def _compressed_hint(self) -> str:
        """When an uncompressed read fails at byte 0 of a GZIP/ZLIB file: says which it is."""
        kind = None if self.compression_type else guess_compression(self.path)
        if not kind:
            return ""
        return (
            f"The file starts like a {kind} stream: read it with compression_type={kind!r} "
            f"(TFRecordDataset(..., compression_type={kind!r}))."
        )

    def _truncated(self, index: int, offset: int, have: int, need: int | None, src) -> None:
        detail = (
            f"its header claims {need - 16} bytes of data, and only {have} of the record's "
            f"{need} bytes (header, data, footer) are there"
            if need is not None
            else f"only {have} of its 12 header bytes are there"
        )
        if not getattr(src, "ended_cleanly", True):
            detail += f" and the {self.compression_type} stream ends before its end marker"
        if self.skip_corrupt:
            self.corrupt_count += 1
            self.damaged.append((index, offset, "truncated"))
            return
        raise TruncatedRecordError(
            f"{self.path}: truncated record {index} at byte offset {offset}: {detail}. "
            f"Every record before it was read; the file was cut short (an interrupted copy "
            "or write?)."
        )

    def _blocks(self) -> Iterator[RecordBlock]:
        src = self._open()
        try:
            index, offset = self.position
            chunk = self._chunk
            unpack_header = _HEADER.unpack_from
            unpack_u32 = _U32.unpack_from
            crc = _crc
            buf = b""
            pos = 0
            resyncing = False
            while True:
                end_of_data = len(buf)
                block = None if resyncing else _frame(buf, pos, end_of_data, index, offset)
                if block is not None:
                    resyncing = False
                    n = len(block.records)
                    pos += int(block.offset[-1]) - offset
                    index, offset = index + n, int(block.offset[-1])
                    yield block
                    continue
                if end_of_data - pos < _HEADER_BYTES:
                    more = _read_on(src, buf, pos, chunk)
                    if more is None:
                        if pos < end_of_data:
                            self._truncated(index, offset, end_of_data - pos, None, src)
                        elif not getattr(src, "ended_cleanly", True):
                            self._truncated(index, offset, 0, None, src)
                        return
                    buf, pos = more, 0
                    continue
                length, length_crc = unpack_header(buf, pos)
                c = crc(buf[pos : pos + 8])  # masked in line: this loop runs once per record
                if (
                    (((c >> 15) | (c << 17)) & 0xFFFFFFFF) + _MASK_DELTA
                ) & 0xFFFFFFFF != length_crc:
                    if not resyncing:
                        self._corrupt(
                            index, offset, "length", length_crc, _mask(crc(buf[pos : pos + 8]))
                        )
                        index += 1
                    # Skipping: look for the next valid header one byte further on.
                    resyncing = True
                    pos += 1
                    offset += 1
                    continue
                resyncing = False
                data_end = pos + _HEADER_BYTES + length
                if length > _LARGE_RECORD and data_end + _FOOTER_BYTES > end_of_data:
                    checked = self._check_large(
                        src, buf[pos + _HEADER_BYTES :], length, index, offset
                    )
                    if checked is None:
                        return  # truncated: reported, or skipped to the end
                    data, buf = checked
                    pos = 0
                    index += 1
                    offset += length + 16
                    self.position = (index, offset)
                    if data is not None:
                        yield RecordBlock.one(data, index, offset)
                    continue
                if data_end + _FOOTER_BYTES > end_of_data:
                    more = _read_on(
                        src, buf, pos, max(chunk, data_end + _FOOTER_BYTES - end_of_data)
                    )
                    if more is None:
                        have = end_of_data - pos
                        self._truncated(index, offset, have, length + 16, src)
                        return
                    buf, pos = more, 0
                    continue
                data = buf[pos + _HEADER_BYTES : data_end]
                (data_crc,) = unpack_u32(buf, data_end)
                pos = data_end + _FOOTER_BYTES
                c = crc(data)
                if ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF != data_crc:
                    self._corrupt(index, offset, "data", data_crc, _mask(crc(data)))
                    index += 1
                    offset += length + 16
                    self.position = (index, offset)
                    continue
                index += 1
                offset += length + 16
                self.position = (index, offset)
                yield RecordBlock.one(data, index, offset)
        finally:
            src.close()

    def _check_large(self, src, head: bytes, length: int, index: int, offset: int):
        """A record longer than ``_LARGE_RECORD``, checked before it is held in memory.

        ``head`` holds the bytes read after its header. Returns ``(data, rest)``:
        the record's data (None when its CRC does not match and it is skipped) and
        the bytes read past its footer; or None when the file ends inside it.
        """
        if not self.compression_type:
            left = _fs.size(self.path) - src.tell() + len(head)
            if left < length + _FOOTER_BYTES:
                self._truncated(index, offset, _HEADER_BYTES + left, length + 16, src)
                return None
            record = head + src.read(length + _FOOTER_BYTES - len(head))
            data, rest = record[:length], record[length:]
            c = _crc(data)
        else:  # the CRC first, streaming (nothing held), then the data a second time
            data, c, seen, rest = None, _crc(head[:length]), min(len(head), length), head[length:]
            while seen < length or len(rest) < _FOOTER_BYTES:
                more = src.read(self._chunk)
                if not more:
                    have = _HEADER_BYTES + seen + len(rest)
                    self._truncated(index, offset, have, length + 16, src)
                    return None
                take = min(len(more), length - seen)
                c = _crc(more[:take], c)
                seen += take
                rest += more[take:]
        (stored,) = _U32.unpack_from(rest, 0)
        if _mask(c) != stored:
            self._corrupt(index, offset, "data", stored, _mask(c))
            return None, rest[_FOOTER_BYTES:]
        if data is None:
            again = open_stream(
                self.path, self.compression_type, offset + _HEADER_BYTES, self._chunk
            )
            try:
                data = again.read(length)
            finally:
                again.close()
        return data, rest[_FOOTER_BYTES:]


def tf_record_iterator(
    path: str | os.PathLike, options: TFRecordOptions | str | None = None
) -> Iterator[bytes]:
    """Yields the records of one TFRecord file (``tf.compat.v1.io.tf_record_iterator``).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
        >>> with TFRecordWriter(path) as w:
        ...     w.write(b"a")
        >>> list(tf_record_iterator(path))
        [b'a']
    """
    return iter(TFRecordReader(path, TFRecordOptions.get_compression_type_string(options)))
