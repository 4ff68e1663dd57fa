"""Readers of text lines and fixed-length records, as TensorFlow's datasets read them.

``TextLineDataset`` semantics (TensorFlow's ``BufferedInputStream::ReadLine``):
lines end at ``\\n``, which is dropped; every ``\\r`` in a line is dropped too
(not only a trailing one); a last line without ``\\n`` is kept when it is not
empty. ``FixedLengthRecordDataset`` semantics: skip ``header_bytes``, then
records of ``record_bytes`` until ``footer_bytes`` remain; a body that is not a
multiple of the record length is an error (before any record for an
uncompressed file, at its end for a compressed one).

Both readers are resumable from ``position == (index, offset)``, the next
record's index and byte offset in the (decompressed) file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..errors import DataLossError, TruncatedRecordError
from . import _fs
from ._tfrecord import _MIN_CHUNK, normalize_compression_type, open_stream

__all__ = ["FixedLengthRecordReader", "TextLineReader"]


class TextLineReader:
    """Iterates the lines of one text file as ``bytes`` (low level of ``TextLineDataset``).

    Args:
        path: the file.
        compression_type: ``None``/``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (at least 4 MiB).
        start: ``(index, offset)`` to resume from, as `position` gave.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(path, "wb").write(b"one\\r\\n\\ntwo")
        >>> list(TextLineReader(path))
        [b'one', b'', b'two']
    """

    def __init__(
        self,
        path: str | os.PathLike,
        compression_type: str | None = None,
        *,
        buffer_size: int | None = None,
        start: tuple[int, int] = (0, 0),
    ):
        self.path = os.fspath(path)
        self.compression_type = normalize_compression_type(compression_type)
        self._chunk = max(int(buffer_size or 0), _MIN_CHUNK)
        self.position = (int(start[0]), int(start[1]))

    def __iter__(self) -> Iterator[bytes]:
        return self._lines()

    def _lines(self) -> Iterator[bytes]:
        src = open_stream(self.path, self.compression_type, self.position[1], self._chunk)
        try:
            index, offset = self.position
            rest = b""
            while True:
                more = src.read(self._chunk)
                if not more:
                    break
                lines = (rest + more).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    index += 1
                    offset += len(line) + 1
                    self.position = (index, offset)
                    yield line.replace(b"\r", b"") if b"\r" in line else line
            if not getattr(src, "ended_cleanly", True):
                raise TruncatedRecordError(
                    f"{self.path}: the {self.compression_type} stream ends before its end marker "
                    f"after line {index} (byte {offset} of the decompressed text); every "
                    "complete line before it was read. The file was cut short."
                )
            last = rest.replace(b"\r", b"")
            if last:
                self.position = (index + 1, offset + len(rest))
                yield last
        finally:
            src.close()


class FixedLengthRecordReader:
    """Iterates the fixed-length records of one binary file (low level of ``FixedLengthRecordDataset``).

    Args:
        path: the file.
        record_bytes: the length of every record.
        header_bytes: bytes to skip at the start of the file.
        footer_bytes: bytes to ignore at the end of the file.
        compression_type: ``None``/``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (at least 4 MiB).
        start: ``(index, offset)`` to resume from, as `position` gave.

    Raises:
        ValueError: an uncompressed body is not a multiple of ``record_bytes``.
        DataLossError: the same for a compressed file, after its complete records.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "f.bin")
        >>> _ = open(path, "wb").write(b"HDaabbccFT")
        >>> list(FixedLengthRecordReader(path, 2, header_bytes=2, footer_bytes=2))
        [b'aa', b'bb', b'cc']
    """

    def __init__(
        self,
        path: str | os.PathLike,
        record_bytes: int,
        *,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        start: tuple[int, int] | None = None,
    ):
        self.path = os.fspath(path)
        self.record_bytes = int(record_bytes)
        self.header_bytes = int(header_bytes or 0)
        self.footer_bytes = int(footer_bytes or 0)
        if self.record_bytes <= 0 or self.header_bytes < 0 or self.footer_bytes < 0:
            raise ValueError(
                f"record_bytes must be positive and header_bytes/footer_bytes non-negative; "
                f"received record_bytes={record_bytes!r}, header_bytes={header_bytes!r}, "
                f"footer_bytes={footer_bytes!r}."
            )
        self.compression_type = normalize_compression_type(compression_type)
        self._chunk = max(int(buffer_size or 0), _MIN_CHUNK)
        self.position = start if start is not None else (0, self.header_bytes)

    def __iter__(self) -> Iterator[bytes]:
        return self._records()

    def _body_error(self, body: int) -> str:
        return (
            f"{self.path}: excluding the header ({self.header_bytes} bytes) and footer "
            f"({self.footer_bytes} bytes), the body is {body} bytes, which is not a multiple "
            f"of record_bytes={self.record_bytes}. Check record_bytes, header_bytes and "
            "footer_bytes."
        )

    def _records(self) -> Iterator[bytes]:
        if not self.compression_type:
            body = _fs.size(self.path) - self.header_bytes - self.footer_bytes
            if body < 0 or body % self.record_bytes:
                raise ValueError(self._body_error(body))
            limit = self.header_bytes + body
        else:
            limit = None
        rb = self.record_bytes
        per_read = max(1, self._chunk // rb) * rb
        src = open_stream(self.path, self.compression_type, self.position[1], self._chunk)
        try:
            index, offset = self.position
            buf = b""
            while True:
                want = per_read if limit is None else min(per_read, limit - offset - len(buf))
                more = src.read(want) if want > 0 else b""
                buf += more
                # Without the file's size, keep footer_bytes back until the end.
                keep = 0 if limit is not None else self.footer_bytes
                whole = max(len(buf) - keep, 0) // rb * rb
                for i in range(0, whole, rb):
                    index += 1
                    offset += rb
                    self.position = (index, offset)
                    yield buf[i : i + rb]
                buf = buf[whole:]
                if not more:
                    break
            if limit is None:
                if not getattr(src, "ended_cleanly", True):
                    raise TruncatedRecordError(
                        f"{self.path}: the {self.compression_type} stream ends before its end "
                        f"marker after record {index}; every complete record was read."
                    )
                if len(buf) != self.footer_bytes:
                    body = offset - self.header_bytes + len(buf) - self.footer_bytes
                    raise DataLossError(self._body_error(body))
        finally:
            src.close()
