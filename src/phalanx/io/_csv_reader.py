"""The reader of ``CsvDataset``'s files, and the text rows ``make_csv_dataset`` infers from.

``CsvReader`` is TF 2.21's ``CSVDatasetOp`` iterator over one file opened
through ``phalanx.io`` (local or a URL, GZIP/ZLIB): records end at an unquoted
``\\n``, ``\\r`` or ``\\r\\n``; quoted fields (RFC 4180, ``""`` for a quote)
may hold delimiters and line breaks. A record with an error is consumed whole
and handed out as its ``CsvParseError``, so the next record parses (and
``ignore_errors`` drops only the bad one), as TF's iterator. The columns'
types, defaults and number syntax are ``_csv.py``'s, shared with ``decode_csv``.
"""

from __future__ import annotations

import codecs
import csv
import os
import re
from collections.abc import Iterator
from typing import Any

from ..errors import CsvParseError, TruncatedRecordError
from . import _record_blocks as rb
from ._csv import Column, Format, convert
from ._tfrecord import _MIN_CHUNK, normalize_compression_type, open_stream

__all__ = ["CsvReader", "text_rows"]


def _file_record(buf: bytes, i: int, eof: bool, fmt: Format, stop: re.Pattern):
    """TF's ``CSVDatasetOp`` ``ReadRecord`` from ``buf[i]``: ``(fields, error, next)``, or None
    when the record goes on past ``buf`` (and ``buf`` is not the end of the file)."""
    nl = buf.find(b"\n", i)
    if nl >= 0 or eof:  # a line without quotes or \r (but its \r\n) is a record of its fields
        line = buf[i:nl] if nl >= 0 else buf[i:]
        if line[-1:] == b"\r":
            line = line[:-1]
        if (not fmt.use_quote or b'"' not in line) and b"\r" not in line:
            return line.split(fmt.delim), None, nl + 1 if nl >= 0 else len(buf)
    fields: list[bytes] = []
    error: str | None = None
    n, delim = len(buf), fmt.delim[0]
    while True:
        if i >= n:  # a delimiter ended the buffer
            if not eof:
                return None
            fields.append(b"")
            return fields, error, i
        if fmt.use_quote and buf[i] == 34:
            step = _quoted_field(buf, i, eof, delim)
        else:
            step = _unquoted_field(buf, i, eof, stop, fmt.use_quote)
        if step is None:
            return None
        field, ch, i, bad = step
        fields.append(field)
        error = error or bad
        if ch == delim:
            continue
        if ch == 13:  # \r, or \r\n
            if i >= n and not eof:
                return None
            if buf[i : i + 1] == b"\n":
                i += 1
        return fields, error, i  # \n, \r or the end of the file


def _quoted_field(buf: bytes, i: int, eof: bool, delim: int):
    """The quoted field opening at ``buf[i]``: ``(field, the byte after its closing quote (-1
    at the end of the file), next, error)``, or None when it goes on past ``buf``."""
    j, parts, error, n = i + 1, [], None, len(buf)
    while True:
        q = buf.find(b'"', j)
        if q < 0 or q + 1 >= n:
            if not eof:
                return None
            if q < 0:
                return b"", -1, n, "Reached end of file without closing quoted field"
            parts.append(buf[j:q])  # the file ends with the closing quote
            return b"".join(parts), -1, n, error
        ch = buf[q + 1]
        if ch == 34:  # "" is a quote
            parts.append(buf[j : q + 1])
        elif ch == delim or ch in (10, 13):
            parts.append(buf[j:q])
            return b"".join(parts), ch, q + 2, error
        else:  # as TF: noted, and the field goes on to a quote before a delimiter or a break
            error = error or "Quote inside a string has to be escaped by another quote"
        j = q + 2


def _unquoted_field(buf: bytes, i: int, eof: bool, stop: re.Pattern, use_quote: bool):
    """The unquoted field at ``buf[i]``, as ``_quoted_field`` gives a quoted one."""
    m = stop.search(buf, i)
    if m is None:
        if not eof:
            return None
        field, ch, i = buf[i:], -1, len(buf)
    else:
        k = m.start()
        field, ch, i = buf[i:k], buf[k], k + 1
    error = "Unquoted fields cannot have quotes inside" if use_quote and b'"' in field else None
    return field, ch, i, error


class CsvReader:
    """Iterates the records of one CSV file as rows of typed values (low level of ``CsvDataset``).

    Each row is a tuple with one value per column (numpy scalars; strings as 0-d ``object``
    arrays holding ``bytes``). A record that does not parse is yielded as its
    ``CsvParseError`` (not raised), after which `position` is past it.

    Args:
        path: the file (a local path or a URL).
        cols: the output columns (``columns(record_defaults, ...)``).
        fmt: the delimiter, quoting and NA string (``csv_format(...)``).
        include: the indices of the file's columns to return, or ``("exclude", [...])``
            of those to leave out; None returns every column.
        header: skip the file's first record.
        compression_type: ``None``/``""``, ``"ZLIB"`` or ``"GZIP"``.
        buffer_size: bytes to read at a time (at least 4 MiB).
        start: ``(index, offset)`` to resume from, as `position` gave.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.csv")
        >>> _ = open(path, "wb").write(b'1,"a\\nb"\\r\\n2,c')
        >>> from phalanx.io._csv import columns, csv_format
        >>> cols = columns([[0], [""]], "example")
        >>> [(int(a), b.item()) for a, b in CsvReader(path, cols, csv_format(",", True, "", ""))]
        [(1, b'a\\nb'), (2, b'c')]
    """

    def __init__(
        self,
        path: str | os.PathLike,
        cols: list[Column],
        fmt: Format,
        *,
        include: Any = None,
        header: bool = False,
        compression_type: str | None = None,
        buffer_size: int | None = None,
        start: tuple[int, int] = (0, 0),
    ):
        self.path = os.fspath(path)
        self.cols, self.fmt, self.header = cols, fmt, bool(header)
        self._keep = _keeper(include)
        self.compression_type = normalize_compression_type(compression_type)
        self._chunk = max(int(buffer_size or 0), _MIN_CHUNK)
        self.position = (int(start[0]), int(start[1]))

    def __iter__(self) -> Iterator[Any]:
        return self._rows()

    def _rows(self) -> Iterator[Any]:
        index, base = self.position
        src = open_stream(self.path, self.compression_type, base, self._chunk)
        stop = self.fmt.stop
        try:
            buf, i, eof = b"", 0, False
            skip_header = self.header and base == 0
            while True:
                if i >= len(buf) and eof:
                    if skip_header:
                        yield self._error(index, base, "Can't read header of file: it is empty")
                    break
                found = None if i >= len(buf) else _file_record(buf, i, eof, self.fmt, stop)
                if found is None:
                    more = src.read(self._chunk)
                    eof = not more
                    base, buf, i = base + i, buf[i:] + more, 0
                    continue
                fields, error, i = found
                if skip_header:
                    skip_header = False
                    self.position = (index, base + i)
                    if error:
                        yield self._error(index, base, f"Can't read header of file: {error}")
                        break
                    continue
                row = self._row(fields, error, index, base)
                index += 1
                self.position = (index, base + i)
                yield row
            if not getattr(src, "ended_cleanly", True):
                raise TruncatedRecordError(
                    f"{self.path}: the {self.compression_type} stream ends before its end marker "
                    f"after record {index}; every complete record before it was read. The file "
                    "was cut short."
                )
        finally:
            src.close()

    def _row(self, fields: list[bytes], error: str | None, index: int, base: int) -> Any:
        if error:
            return self._error(index, base, error)
        fields = self._keep(fields)
        n = len(self.cols)
        if len(fields) != n:
            more = "more" if len(fields) > n else len(fields)
            return self._error(index, base, f"Expect {n} fields but have {more}")
        try:
            values = convert(fields, self.cols, self.fmt)
        except ValueError as e:
            return self._error(index, base, str(e))
        return tuple(rb.as_element(v) if isinstance(v, bytes) else v for v in values)

    def _error(self, index: int, offset: int, what: str) -> CsvParseError:
        return CsvParseError(
            f"{self.path}: {what} in record {index} (the file's record {index} after any "
            "header). Check the file against record_defaults (one per selected column), "
            "field_delim and header, or drop bad records with ignore_errors()."
        )


def _keeper(include: Any):
    if include is None:
        return lambda fields: fields
    if isinstance(include, tuple) and include and include[0] == "exclude":
        out = set(include[1])
        return lambda fields: [f for k, f in enumerate(fields) if k not in out]
    keep = list(include)
    return lambda fields: [fields[k] for k in keep if k < len(fields)]


def _text_lines(path: str, compression: str, encoding: str) -> Iterator[str]:
    """The decoded lines of ``path`` (line ends kept), read through ``phalanx.io``."""
    src = open_stream(path, compression, 0, _MIN_CHUNK)
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        rest = ""
        while True:
            more = src.read(_MIN_CHUNK)
            text = rest + decoder.decode(more, final=not more)
            lines = text.splitlines(keepends=True)
            rest = lines.pop() if lines and more else ""
            yield from lines
            if not more:
                return
    finally:
        src.close()


def text_rows(path: str, fmt: Format, compression: str, encoding: str) -> Iterator[list[str]]:
    """The rows of ``path`` as Python's ``csv`` module reads its decoded text (TF infers
    ``make_csv_dataset``'s column names and types so)."""
    quoting = csv.QUOTE_MINIMAL if fmt.use_quote else csv.QUOTE_NONE
    delim = fmt.delim.decode("utf-8")
    return csv.reader(_text_lines(path, compression, encoding), delimiter=delim, quoting=quoting)
