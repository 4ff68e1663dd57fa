"""CSV records as TensorFlow parses them: ``decode_csv`` and the reader of ``CsvDataset``.

Two parsers, as TensorFlow has two (``decode_csv_op.cc`` and
``csv_dataset_op.cc``, TF 2.21), sharing the columns' types, defaults and
number syntax:

* ``decode_csv`` splits each record string alone (TF's ``ExtractFields``): a
  quoted field must end with a quote followed by the delimiter or the end; an
  unquoted one may not hold a quote, ``\\r`` or ``\\n``.
* ``CsvReader`` (``_csv_reader.py``) reads a file (``CsvDataset``): records end at an unquoted
  ``\\n``, ``\\r`` or ``\\r\\n``; quoted fields (RFC 4180, ``""`` for a quote)
  may hold delimiters and line breaks. A record with an error is consumed
  whole and handed out as the error, so the next record parses (and
  ``ignore_errors`` drops only the bad one), as TF's iterator.
* ``text_rows`` (``_csv_reader.py``) reads a file's decoded text with Python's ``csv`` module, as
  TF's ``make_csv_dataset`` does to infer column names and types.

Numbers follow TF's ``safe_strto32/64`` and ``safe_strtof/d``: spaces around
them are allowed, ints are ``-?digits`` in range, floats are decimal (with an
exponent), ``inf``/``nan`` (any case) or a hex integer, under 32 bytes. An empty field, or
one equal to ``na_value``, takes the column's default; a column without one
(a dtype or an empty list) is required.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import CsvParseError, DatasetArgumentError, DatasetTypeError
from . import _record_blocks as rb

__all__ = ["Column", "Format", "columns", "convert", "csv_format", "decode_csv"]

_STRING = np.dtype(object)
_DTYPES = {"int32", "int64", "float32", "float64", "string"}
_INT = re.compile(rb"[ \t\n\v\f\r]*-?[0-9]+[ \t\n\v\f\r]*")
_FLOAT = re.compile(
    rb"[ \t\n\v\f\r]*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|nan|0x[0-9a-f]+)"
    rb"[ \t\n\v\f\r]*",
    re.IGNORECASE,
)
_LIMITS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class Column(NamedTuple):
    """One output column: its type's name, dtype (``object`` for strings), default (None:
    required) and ``parse``, the field's bytes to a value (raises ``ValueError``)."""

    name: str
    dtype: np.dtype
    default: Any
    parse: Any


def _dtype_name(x: Any) -> str | None:
    """``"int32"`` ... ``"string"`` for a dtype spelling, None when ``x`` is not a dtype."""
    if isinstance(x, np.ndarray | np.generic | list | tuple):
        return None
    if x in (str, bytes, object, np.str_, np.bytes_, np.object_, "string", "str", "bytes"):
        return "string"
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
        kind = np.dtype(x)
    elif isinstance(x, str) or x in (int, float):
        try:
            kind = np.dtype(x)
        except TypeError:
            return None
    else:
        return None
    return "string" if kind.kind in "OSU" else kind.name


def columns(record_defaults: Any, who: str) -> list[Column]:
    """The columns of ``record_defaults`` (TF's rules): a dtype or an empty list is required;
    a scalar or a one-element list is the default, its type the column's."""
    if isinstance(record_defaults, np.ndarray):
        record_defaults = list(record_defaults)  # TF 2: np.zeros(5) is five float64 defaults
    if not isinstance(record_defaults, Sequence) or isinstance(record_defaults, str | bytes):
        raise DatasetTypeError(
            f"{who}: record_defaults must be a list with one entry per column (a dtype, or a "
            f"default value in a list: [0.0], ['']); received {record_defaults!r:.80}."
        )
    if not record_defaults:
        raise DatasetArgumentError(f"{who}: record_defaults is empty; give one entry per column.")
    # A map(decode_csv) calls this per record: the columns of the same defaults are kept.
    key = (who, tuple(_key(x) for x in record_defaults))
    found = _KNOWN.get(key)
    if found is None:
        found = [_column(x, i, who) for i, x in enumerate(record_defaults)]
        if len(_KNOWN) < 256:
            _KNOWN[key] = found
    return list(found)


_KNOWN: dict[Any, list[Column]] = {}


def _key(x: Any) -> Any:
    """A default's identity: an array's bytes (its repr rounds), a value's exact repr."""
    if isinstance(x, np.ndarray):
        return (np.ndarray, x.dtype.str, x.shape, repr(x.tolist()))
    return (type(x), repr(x))


def _column(x: Any, i: int, who: str) -> Column:
    name = _dtype_name(x)
    if name is not None:
        return _checked(name, None, x, i, who)
    if isinstance(x, (np.ndarray, list | tuple)):
        a = np.asarray(x, dtype=object if _holds_text(x) else None)
        if a.ndim > 1:
            raise DatasetArgumentError(
                f"{who}: Each record default should be at most rank 1; field {i} has shape "
                f"{a.shape}. Give a scalar, a one-element list, or a dtype."
            )
        if a.size > 1:
            raise DatasetArgumentError(
                f"{who}: There should only be 1 default per field but field {i} has {a.size} "
                f"({x!r:.60})."
            )
        if a.size == 0:  # tf.constant([]) is float32; an empty numpy array keeps its dtype
            return _checked(_kind_name(a.dtype, x), None, x, i, who)
        return _checked(_kind_name(a.dtype, x), a.reshape(-1)[0], x, i, who)
    return _checked(_kind_name(np.asarray(x).dtype, x), x, x, i, who)


def _holds_text(x: Any) -> bool:
    return any(isinstance(v, str | bytes) for v in np.asarray(x, dtype=object).ravel().tolist())


def _kind_name(dtype: np.dtype, given: Any = None) -> str:
    """TF's dtype of a Python default: ``int`` -> int32, ``float`` -> float32, text -> string."""
    if dtype.kind in "OSU":
        return "string"
    if not isinstance(given, np.ndarray | np.generic):
        return {"i": "int32", "f": "float32"}.get(dtype.kind, dtype.name)
    return dtype.name


def _checked(name: str, default: Any, given: Any, i: int, who: str) -> Column:
    if name not in _DTYPES:
        raise DatasetTypeError(
            f"{who}: field {i}'s record default {given!r:.60} is of type {name}; CSV columns are "
            "float32, float64, int32, int64 or string. Parse as one of those and cast in a map."
        )
    if name == "string":
        if default is not None and not isinstance(default, bytes):
            default = str(default).encode("utf-8")
        return Column(name, _STRING, default, _parser(name))
    dtype = np.dtype(name)
    return Column(name, dtype, None if default is None else dtype.type(default), _parser(name))


_F32_MAX = float(np.finfo(np.float32).max)


def _parser(name: str) -> Any:
    """The function of a field's bytes to a value of type ``name`` (TF's ``safe_strto*``)."""
    if name == "string":
        return lambda field: field
    kind = np.dtype(name).type
    if name in _LIMITS:
        low, high = _LIMITS[name]
        match = _INT.fullmatch

        def parse_int(field: bytes) -> Any:
            if match(field) and low <= (value := int(field)) <= high:
                return kind(value)
            raise ValueError(f"is not a valid {name}")

        return parse_int
    match, word = _FLOAT.fullmatch, "float" if name == "float32" else "double"
    narrow = name == "float32"

    def parse_float(field: bytes) -> Any:
        if len(field) >= 32 or not match(field):  # TF: kFastToBufferSize, 32 bytes with spaces
            raise ValueError(f"is not a valid {word}")
        try:
            value = float(field)
        except ValueError:  # a hex integer, as double-conversion's ALLOW_HEX
            text = field.strip().lower()
            value = float(int(text.lstrip(b"+-"), 16)) * (-1.0 if text[:1] == b"-" else 1.0)
        if narrow and abs(value) > _F32_MAX:
            with np.errstate(over="ignore"):
                return kind(value)
        return kind(value)

    return parse_float


class Format(NamedTuple):
    """The CSV dialect: the delimiter (one byte), whether quotes delimit, and the NA string."""

    delim: bytes
    use_quote: bool
    na_value: bytes

    @property
    def stop(self) -> re.Pattern:
        return re.compile(b"[" + re.escape(self.delim) + b"\r\n]")


def csv_format(field_delim: Any, use_quote_delim: Any, na_value: Any, who: str) -> Format:
    delim = field_delim.encode("utf-8") if isinstance(field_delim, str) else field_delim
    if not isinstance(delim, bytes) or len(delim) != 1:
        raise DatasetArgumentError(
            f"{who}: field_delim should be only 1 char; received {field_delim!r}."
        )
    if not isinstance(use_quote_delim, bool | np.bool_):
        raise DatasetTypeError(
            f"{who}: use_quote_delim must be a bool; received {use_quote_delim!r}."
        )
    na = na_value.encode("utf-8") if isinstance(na_value, str) else na_value
    if not isinstance(na, bytes):
        raise DatasetTypeError(f"{who}: na_value must be a string; received {na_value!r}.")
    return Format(delim, bool(use_quote_delim), na)


def convert(fields: list[bytes], cols: list[Column], fmt: Format) -> list[Any]:
    """The typed values of a record's fields; raises ``ValueError('Field i ...')``."""
    out = []
    for f, (field, col) in enumerate(zip(fields, cols, strict=True)):
        if not field or field == fmt.na_value:
            if col.default is None:
                raise ValueError(f"Field {f} is required but missing")
            out.append(col.default)
            continue
        try:
            out.append(col.parse(field))
        except ValueError as e:
            raise ValueError(f"Field {f} {e}: {field.decode('utf-8', 'replace')!r}") from None
    return out


# --- decode_csv ---------------------------------------------------------------------------------


def _split(record: bytes, fmt: Format, select: list[int] | None) -> list[bytes]:
    """TF's ``DecodeCSVOp::ExtractFields`` of one record; raises ``ValueError``."""
    fields: list[bytes] = []
    n, i, parsed, d = len(record), 0, 0, fmt.delim
    if not n:
        return fields
    while i < n:
        c = record[i : i + 1]
        if c in (b"\n", b"\r"):
            i += 1
            continue
        if fmt.use_quote and c == b'"':
            field, i = _quoted(record, i + 1, d)
        else:
            end = record.find(d, i)
            end = n if end < 0 else end
            field = record[i:end]
            if (fmt.use_quote and b'"' in field) or b"\n" in field or b"\r" in field:
                raise ValueError("Unquoted fields cannot have quotes/CRLFs inside")
            i = end + 1
        if select is None or select[len(fields)] == parsed:
            fields.append(field)
            if select is not None and len(fields) == len(select):
                return fields
        parsed += 1
    if (select is None or select[len(fields)] == parsed) and record[-1:] == d:
        fields.append(b"")
    return fields


def _quoted(record: bytes, i: int, d: bytes) -> tuple[bytes, int]:
    n, parts = len(record), []
    while i < n - 1:
        q = record.find(b'"', i, n - 1)
        if q < 0:
            parts.append(record[i : n - 1])
            i = n - 1
            break
        parts.append(record[i:q])
        if record[q + 1 : q + 2] == d:
            i = q
            break
        if record[q + 1 : q + 2] != b'"':
            raise ValueError("Quote inside a string has to be escaped by another quote")
        parts.append(b'"')
        i = q + 2
    if not (i < n and record[i : i + 1] == b'"' and (i == n - 1 or record[i + 1 : i + 2] == d)):
        raise ValueError("Quoted field has to end with quote followed by delim or end")
    return b"".join(parts), i + 2


def _as_bytes(x: Any) -> bytes:
    if isinstance(x, bytes | np.bytes_):
        return bytes(x)
    if isinstance(x, str | np.str_):
        return str(x).encode("utf-8")
    raise CsvParseError(
        f"decode_csv: records must be strings (str or bytes); found {type(x).__name__} {x!r:.40}."
    )


def decode_csv(
    records: Any,
    record_defaults: Any,
    field_delim: str = ",",
    use_quote_delim: bool = True,
    name: str | None = None,
    na_value: str = "",
    select_cols: Sequence[int] | None = None,
) -> list[np.ndarray]:
    """Converts CSV records to one array per column (``tf.io.decode_csv``).

    RFC 4180 format is expected (quoted fields, ``""`` for a quote inside one); spaces are
    allowed around int and float fields, as TensorFlow.

    Args:
        records: a string, or an array (any shape) of strings: one CSV record each.
        record_defaults: one entry per output column: a dtype (``"float32"``, ``np.int64``,
            ``"string"`` ...) or an empty list for a required column, a value or a one-element
            list (``[0.0]``, ``[""]``, ``3``) for the default of an empty field. A Python
            ``int`` default makes an int32 column, a ``float`` a float32 one, as TensorFlow.
        field_delim: the one-character delimiter of fields.
        use_quote_delim: False treats double quotes as ordinary characters.
        name: accepted for TensorFlow compatibility.
        na_value: a field equal to this is missing too (takes the default).
        select_cols: the sorted indices of the columns to return (one per
            ``record_defaults`` entry); all columns when None.

    Returns:
        A list with one array per column, of ``records``' shape: ``int32``, ``int64``,
        ``float32``, ``float64``, or ``object`` holding ``bytes`` for strings.

    Raises:
        CsvParseError: a record has the wrong number of fields, an unparsable number, a
            missing required field or misplaced quotes (naming the record and field).
        DatasetArgumentError: ``select_cols`` is not increasing, negative, or of another
            length than ``record_defaults`` (TF's messages).

    Examples:
        >>> a, b, c = decode_csv(["1,2.5,x", '2,,"y, z"'], [[0], [0.0], ["?"]])
        >>> a, b, c
        (array([1, 2], dtype=int32), array([2.5, 0. ], dtype=float32), array([b'x', b'y, z'], dtype=object))
    """
    who = "decode_csv"
    cols = columns(record_defaults, who)
    fmt = csv_format(field_delim, use_quote_delim, na_value, who)
    select = None
    if select_cols is not None:
        select = [int(c) for c in select_cols]
        if any(a >= b for a, b in itertools.pairwise(select)):
            raise DatasetArgumentError("select_cols is not strictly increasing.")
        if select and select[0] < 0:
            raise DatasetArgumentError("select_cols contains negative values.")
        if len(select) != len(cols):
            raise DatasetArgumentError("Length of select_cols and record_defaults do not match.")
    array = np.asarray(records, dtype=object)
    flat = array.reshape(-1)
    values: list[list[Any]] = [[] for _ in cols]
    for r, record in enumerate(flat.tolist()):
        where = f"record {r}" if array.ndim <= 1 else f"record {np.unravel_index(r, array.shape)}"
        try:
            fields = _split(_as_bytes(record), fmt, select)
            if len(fields) != len(cols):
                raise ValueError(f"Expect {len(cols)} fields but have {len(fields)}")
            row = convert(fields, cols, fmt)
        except ValueError as e:
            raise CsvParseError(
                f"decode_csv: {e} in {where} ({_show(record)}). Check the record against "
                "record_defaults (one entry per column) and field_delim."
            ) from None
        for v, x in zip(values, row, strict=True):
            v.append(x)
    return [_column_array(v, c, array.shape) for v, c in zip(values, cols, strict=True)]


def _column_array(values: list[Any], col: Column, shape: tuple[int, ...]) -> np.ndarray:
    if col.dtype == _STRING:
        return rb.objects(values).reshape(shape)
    return np.array(values, col.dtype).reshape(shape)


def _show(record: Any) -> str:
    text = record.decode("utf-8", "replace") if isinstance(record, bytes) else str(record)
    return repr(text if len(text) <= 80 else text[:77] + "...")
