"""Parsing ``tf.train.Example`` records with feature specs (``tf.io.parse_example``).

``parse_single_example`` parses one record; ``parse_example`` parses a batch.
The batched parser is vectorized: records of equal length are checked, with a
few numpy comparisons, to share one byte layout (the same tags, lengths, keys
and varint widths everywhere except in the values); the values of every
record then come out of one ``frombuffer`` view over the joined batch, with
no Python work per record per feature. Batches with differing layouts (map
entries in another order, variable-length values) take a general path that
walks each record once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import ExampleInputError, ExampleParseError
from . import _record_blocks as rb
from ._composite import RaggedTensor, SparseTensor
from ._example import (
    KIND_BYTES,
    KIND_FLOAT,
    KIND_INT64,
    KIND_NONE,
    feature_lists,
    index_features,
    list_segments,
    segment_values,
)

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "RaggedFeature",
    "RaggedTensor",
    "SparseFeature",
    "SparseTensor",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
]

_DTYPES = {
    "float32": (KIND_FLOAT, np.dtype(np.float32)),
    "int64": (KIND_INT64, np.dtype(np.int64)),
    "string": (KIND_BYTES, np.dtype(object)),
}
_KIND_WORDS = {KIND_FLOAT: "float", KIND_INT64: "int64", KIND_BYTES: "bytes"}


def _normalize_dtype(dtype: Any) -> str:
    """Returns ``"float32"``, ``"int64"`` or ``"string"`` for the spellings users write."""
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if dtype in (bytes, str, object, np.bytes_, np.str_, np.object_):
        return "string"
    if dtype is float:
        return "float32"
    if dtype is int:
        return "int64"
    if name is None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
    name = {"float": "float32", "int": "int64", "bytes": "string", "str": "string"}.get(name, name)
    if name in ("object", "bytes_", "str_"):
        name = "string"
    if name not in _DTYPES:
        raise ValueError(
            f"Example features hold float32, int64 or string values; received dtype "
            f"{dtype!r}. Parse as one of those and cast afterwards (e.g. in a map)."
        )
    return name


def _normalize_shape(shape: Any) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    dims = tuple(shape)
    if any(d is None or int(d) < 0 for d in dims):
        raise ValueError(
            f"A feature's shape must be fully defined, with no None or negative dimensions; "
            f"received {shape!r}. For a variable length use VarLenFeature or "
            "FixedLenSequenceFeature."
        )
    return tuple(int(d) for d in dims)


def _default_array(default: Any, dtype: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    np_dtype = _DTYPES[dtype][1]
    if dtype == "string":
        flat = np.asarray(default, dtype=object).ravel()
        arr = np.empty(flat.shape, object)
        arr[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in flat]
        arr = arr.reshape(np.shape(default))
    else:
        arr = np.asarray(default, dtype=np_dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if arr.size == size:
        return arr.reshape(shape)
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(
            f"{what}: default_value has shape {arr.shape} but the feature's shape is {shape}."
        ) from None


@dataclasses.dataclass(frozen=True)
class FixedLenFeature:
    """A feature with a fixed number of values (``tf.io.FixedLenFeature``).

    Args:
        shape: the shape of one example's value (``[]`` for a scalar).
        dtype: ``float32``, ``int64`` or ``string`` (numpy dtypes or names).
        default_value: used when an example lacks the feature; without one a
            missing feature is an error.

    Examples:
        >>> FixedLenFeature([2], "float32")
        FixedLenFeature(shape=(2,), dtype='float32', default_value=None)
    """

    shape: tuple[int, ...]
    dtype: str
    default_value: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _normalize_shape(self.shape))
        object.__setattr__(self, "dtype", _normalize_dtype(self.dtype))


@dataclasses.dataclass(frozen=True)
class VarLenFeature:
    """A feature with any number of values, parsed to a `SparseTensor` (``tf.io.VarLenFeature``).

    Examples:
        >>> VarLenFeature(np.int64)
        VarLenFeature(dtype='int64')
    """

    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _normalize_dtype(self.dtype))


@dataclasses.dataclass(frozen=True)
class FixedLenSequenceFeature:
    """A variable number of fixed-shape items, padded to a dense array (``tf.io.FixedLenSequenceFeature``).

    Args:
        shape: the shape of one item; an example's value count must be a multiple of its size.
        dtype: ``float32``, ``int64`` or ``string``.
        allow_missing: ``False`` by default, as TensorFlow; parsing needs ``True``
            (a missing feature is an empty sequence) and raises ``ValueError``
            without it, as TF's ``parse_example``.
        default_value: the scalar that pads shorter sequences in a batch (0 or ``b""``).

    Examples:
        >>> FixedLenSequenceFeature([2], "int64").shape
        (2,)
    """

    shape: tuple[int, ...]
    dtype: str
    allow_missing: bool = False
    default_value: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _normalize_shape(self.shape))
        object.__setattr__(self, "dtype", _normalize_dtype(self.dtype))


@dataclasses.dataclass(frozen=True)
class SparseFeature:
    """Values and their indices, stored as separate features, parsed to one `SparseTensor`
    (``tf.io.SparseFeature``).

    Args:
        index_key: the int64 feature holding each value's index, or a list of them (one per
            dimension of the result).
        value_key: the feature holding the values.
        dtype: ``float32``, ``int64`` or ``string``.
        size: the dense size: an int for one ``index_key``, a list (one per key) for a list.
        already_sorted: the indices are already in row-major order (else they are sorted).

    ``parse_single_example`` gives ``dense_shape == size``; ``parse_example`` prepends the batch.

    Examples:
        >>> SparseFeature("ix", "val", "float32", 10).size
        10
    """

    index_key: Any
    value_key: str
    dtype: str
    size: Any
    already_sorted: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _normalize_dtype(self.dtype))


class _Partition(NamedTuple):
    key: str


class RowSplits(_Partition):
    """``RaggedFeature`` partition: the int64 feature ``key`` holds row splits."""


class RowLengths(_Partition):
    """``RaggedFeature`` partition: the int64 feature ``key`` holds row lengths."""


class RowStarts(_Partition):
    """``RaggedFeature`` partition: the int64 feature ``key`` holds row starts."""


class RowLimits(_Partition):
    """``RaggedFeature`` partition: the int64 feature ``key`` holds row limits."""


class ValueRowIds(_Partition):
    """``RaggedFeature`` partition: the int64 feature ``key`` holds each value's row id."""


class UniformRowLength(NamedTuple):
    """``RaggedFeature`` partition: rows of ``length`` values each (no feature read)."""

    length: int


_PARTITIONS = (RowSplits, RowLengths, RowStarts, RowLimits, ValueRowIds, UniformRowLength)


@dataclasses.dataclass(frozen=True)
class RaggedFeature:
    """A variable-length feature, optionally partitioned by other features, parsed to a
    `RaggedTensor` (``tf.io.RaggedFeature``).

    Args:
        dtype: ``float32``, ``int64`` or ``string``.
        value_key: the feature holding the values (default: this feature's own key).
        partitions: ``RaggedFeature.RowSplits(key)``, ``RowLengths``, ``RowStarts``,
            ``RowLimits``, ``ValueRowIds`` or ``UniformRowLength(length)``, outermost first.
        row_splits_dtype: ``int32`` (the default, as TF) or ``int64``.
        validate: accepted as TF's; phalanx always checks the partitions (and raises
            ``ExampleParseError`` when they do not fit the values).

    ``parse_single_example`` of a feature without partitions gives a 1-D array, with
    partitions a ``RaggedTensor`` (inner ``UniformRowLength`` partitions reshape instead);
    ``parse_example`` gives a ``RaggedTensor`` whose first dimension is the batch.

    Examples:
        >>> RaggedFeature("int64", partitions=[RaggedFeature.RowLengths("n")]).partitions
        (RowLengths(key='n'),)
    """

    dtype: str
    value_key: str | None = None
    partitions: Any = ()
    row_splits_dtype: Any = "int32"
    validate: bool = False

    RowSplits = RowSplits
    RowLengths = RowLengths
    RowStarts = RowStarts
    RowLimits = RowLimits
    ValueRowIds = ValueRowIds
    UniformRowLength = UniformRowLength

    def __post_init__(self) -> None:
        if self.value_key is not None and (
            not isinstance(self.value_key, str) or not self.value_key
        ):
            raise ValueError(
                f"RaggedFeature: Argument `value_key` must be a non-empty string; got "
                f"{self.value_key!r}."
            )
        try:
            dtype = _normalize_dtype(self.dtype)
        except ValueError:
            raise ValueError(
                f"RaggedFeature: Argument `dtype` must be int64, float32, or bytes; got "
                f"{self.dtype!r}."
            ) from None
        object.__setattr__(self, "dtype", dtype)
        splits = getattr(self.row_splits_dtype, "name", self.row_splits_dtype)
        splits = {int: "int64"}.get(splits, splits)
        if str(splits) not in ("int32", "int64"):
            raise ValueError(
                "RaggedFeature: Argument `row_splits_dtype` must be int32 or int64; got "
                f"{self.row_splits_dtype!r}."
            )
        object.__setattr__(self, "row_splits_dtype", str(splits))
        if not isinstance(self.partitions, (list, tuple)):
            raise TypeError(
                "RaggedFeature: Argument `partitions` must be a list or tuple; got "
                f"{type(self.partitions).__name__} {self.partitions!r:.40}."
            )
        for p in self.partitions:
            if not isinstance(p, _PARTITIONS):
                raise TypeError(
                    "RaggedFeature: Argument `partitions` must hold RaggedFeature.RowSplits, "
                    "RowLengths, RowStarts, RowLimits, ValueRowIds or UniformRowLength; got "
                    f"{p!r}."
                )
        object.__setattr__(self, "partitions", tuple(self.partitions))
        if not isinstance(self.validate, bool):
            raise TypeError(
                f"RaggedFeature: Argument `validate` must be a bool; got {self.validate!r}."
            )


# ---------------------------------------------------------------------------
# Plans: the specs, compiled once per call
# ---------------------------------------------------------------------------

_FIXED, _VAR, _SEQ = 0, 1, 2


class _Item(NamedTuple):
    name: str
    key: bytes
    form: int  # _FIXED, _VAR or _SEQ
    kind: int
    np_dtype: np.dtype
    shape: tuple[int, ...]
    size: int  # values per example (_FIXED) or per item (_SEQ)
    default: np.ndarray | None
    spec: Any


_PLANS: dict[int, tuple[tuple, list[_Item]]] = {}


def _compile(features: Mapping[str, Any]) -> list[_Item]:
    """Returns the plan of ``features``, cached while the same dict holds the same specs."""
    try:
        snapshot = tuple(features.items())
    except AttributeError:
        snapshot = None
    cached = _PLANS.get(id(features))
    if cached is not None and cached[0] == snapshot:
        return cached[1]
    items = _compile_uncached(features)
    if snapshot is not None:
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[id(features)] = (snapshot, items)
    return items


def _compile_uncached(features: Mapping[str, Any]) -> list[_Item]:
    if not isinstance(features, Mapping) or not features:
        raise TypeError(
            "features must be a non-empty dict of name -> FixedLenFeature, VarLenFeature, "
            f"FixedLenSequenceFeature, SparseFeature or RaggedFeature; received {features!r}."
        )
    items = []
    for name, spec in features.items():
        if isinstance(spec, FixedLenFeature):
            form, shape = _FIXED, spec.shape
        elif isinstance(spec, FixedLenSequenceFeature):
            if spec.allow_missing is not True:
                raise ValueError(
                    f"Feature {name!r}: Unsupported: FixedLenSequenceFeature requires "
                    "allow_missing to be True (as TensorFlow's parse_example); pass "
                    "FixedLenSequenceFeature(..., allow_missing=True): a missing feature then "
                    "parses as an empty sequence."
                )
            form, shape = _SEQ, spec.shape
        elif isinstance(spec, VarLenFeature):
            form, shape = _VAR, ()
        else:
            raise TypeError(
                f"Feature {name!r}: unsupported spec {spec!r} of type {type(spec).__name__}; "
                "use FixedLenFeature, VarLenFeature, FixedLenSequenceFeature, SparseFeature or "
                "RaggedFeature."
            )
        kind, np_dtype = _DTYPES[spec.dtype]
        size = int(np.prod(shape, dtype=np.int64))
        default = None
        if form == _FIXED and spec.default_value is not None:
            default = _default_array(spec.default_value, spec.dtype, shape, f"Feature {name!r}")
        elif form == _SEQ:
            pad = spec.default_value
            if pad is None:
                pad = b"" if kind == KIND_BYTES else 0
            default = _default_array(pad, spec.dtype, (), f"Feature {name!r}")
        items.append(
            _Item(name, name.encode("utf-8"), form, kind, np_dtype, shape, size, default, spec)
        )
    return items


def _where(row: int | None) -> str:
    return "" if row is None else f" in record {row}"


def _check_kind(item: _Item, kind: int, row: int | None) -> None:
    if kind != item.kind and kind != KIND_NONE:
        raise ExampleParseError(
            f"Feature {item.name!r}{_where(row)} holds a {_KIND_WORDS[kind]} list but the spec "
            f"asks for {item.spec.dtype} (data types don't match). Change the spec's dtype to "
            f"{ {KIND_FLOAT: 'float32', KIND_INT64: 'int64', KIND_BYTES: 'string'}[kind]!r}."
        )


def _missing(item: _Item, row: int | None) -> ExampleParseError:
    return ExampleParseError(
        f"Feature {item.name!r} ({item.spec.dtype}) is required but missing{_where(row)}. "
        "Give its FixedLenFeature a default_value, or parse it with VarLenFeature."
    )


def _bad_count(item: _Item, count: int, row: int | None) -> ExampleParseError:
    if item.form == _FIXED:
        need = f"FixedLenFeature(shape={list(item.shape)}) needs exactly {item.size}"
    else:
        need = f"FixedLenSequenceFeature(shape={list(item.shape)}) needs a multiple of {item.size}"
    return ExampleParseError(
        f"Feature {item.name!r}{_where(row)} has {count} values; {need}. "
        "Fix the spec's shape, or use VarLenFeature for a varying count."
    )


def _values_of(buf: bytes, loc: tuple[int, int] | None, item: _Item, row: int | None) -> Any:
    """Returns the feature's values in one record (None when missing)."""
    if loc is None:
        return None
    kind, regions = feature_lists(buf, loc[0], loc[1])
    _check_kind(item, kind, row)
    if kind == KIND_NONE:  # an empty Feature() (no list): TF's parser skips it, so a
        if item.form == _FIXED and item.default is not None:  # default fills it
            return None
        return [] if item.kind == KIND_BYTES else np.zeros(0, item.np_dtype)
    return segment_values(buf, kind, list_segments(buf, kind, regions))


# ---------------------------------------------------------------------------
# One record
# ---------------------------------------------------------------------------


def parse_single_example(
    serialized: bytes,
    features: Mapping[str, Any],
    example_names: Any = None,
    name: str | None = None,
) -> dict[str, Any]:
    """Parses one serialized ``tf.train.Example`` (``tf.io.parse_single_example``).

    Args:
        serialized: the record's bytes (a ``str`` is taken as its UTF-8 bytes, as TF).
        features: ``{name: FixedLenFeature | VarLenFeature | FixedLenSequenceFeature |
            SparseFeature | RaggedFeature}``.
        example_names: a name for the record (str or bytes), given in parse errors, as TF.
        name: accepted as TF's op name; checked to be a str.

    Returns:
        ``{name: value}``: a numpy array of the spec's shape for FixedLenFeature,
        ``(items, *shape)`` for FixedLenSequenceFeature, a `SparseTensor`
        of rank 1 for VarLenFeature. Strings are object arrays of ``bytes``.

    Raises:
        ExampleParseError: malformed record, a missing required feature, a dtype
            or value-count mismatch.

    Examples:
        >>> from phalanx.io._example import serialize_example
        >>> rec = serialize_example({"x": np.array([1.0, 2.0], np.float32), "y": 7})
        >>> out = parse_single_example(rec, {"x": FixedLenFeature([2], np.float32),
        ...                                  "y": FixedLenFeature([], np.int64),
        ...                                  "z": VarLenFeature(np.int64)})
        >>> out["x"], out["y"], out["z"].values
        (array([1., 2.], dtype=float32), array(7), array([], dtype=int64))
    """
    _check_op_name(name, "parse_single_example")
    if example_names is None:
        return _parse_single(serialized, features)
    label = _names_of(example_names, 1, "parse_single_example", scalar=True)[0]
    try:
        return _parse_single(serialized, features)
    except ExampleParseError as e:
        raise ExampleParseError(f"Name: {label!r}. {e}") from e


def _has_composite(features: Any) -> bool:
    values = features.values() if isinstance(features, Mapping) else ()
    return any(type(f) is SparseFeature or type(f) is RaggedFeature for f in values)


def _parse_single(serialized: Any, features: Mapping[str, Any]) -> dict[str, Any]:
    if _has_composite(features):
        from ._composite_features import parse_composite

        return parse_composite(serialized, features, _parse_single_base, batched=False)
    return _parse_single_base(serialized, features)


def _parse_single_base(serialized: Any, features: Mapping[str, Any]) -> dict[str, Any]:
    items = _compile(features)
    buf = serialized if isinstance(serialized, bytes) else _one_record(serialized)
    index = index_features(buf)
    out: dict[str, Any] = {}
    for item in items:
        values = _values_of(buf, index.get(item.key), item, None)
        out[item.name] = _single_value(item, values)
    return out


def _one_record(serialized: Any, where: str | None = None) -> bytes:
    """One record's bytes, from ``bytes``, ``bytearray``, ``memoryview``, ``np.bytes_`` or a 0-d array.

    (``bytes()`` of a 0-d object array would give the 8 bytes of a pointer, not the record.)
    """
    if isinstance(serialized, np.ndarray) and serialized.ndim == 0:
        serialized = serialized.item()
    if isinstance(serialized, str):  # as TF's tf.string of a Python str: its UTF-8 bytes
        return serialized.encode("utf-8")
    if isinstance(serialized, (bytearray, memoryview, np.bytes_)):
        return bytes(serialized)
    if isinstance(serialized, bytes):
        return serialized
    if where is not None:
        raise ExampleInputError(
            f"parse_example takes a sequence of serialized Examples (bytes); {where} is "
            f"{type(serialized).__name__}. Pass the records a TFRecordDataset yields (or "
            "a list of bytes, or a 1-D object array)."
        )
    raise ExampleInputError(
        f"parse_single_example takes one serialized Example (bytes); received "
        f"{type(serialized).__name__}. For a batch use parse_example."
    )


def _single_value(item: _Item, values: Any) -> Any:
    if item.form == _FIXED:
        if values is None:
            if item.default is None:
                raise _missing(item, None)
            return item.default.copy()
        if len(values) != item.size:
            raise _bad_count(item, len(values), None)
        arr = rb.objects(values) if item.kind == KIND_BYTES else values
        return arr.reshape(item.shape)
    if values is None:
        values = [] if item.kind == KIND_BYTES else np.zeros(0, item.np_dtype)
    arr = rb.objects(values) if item.kind == KIND_BYTES else values
    if item.form == _SEQ:
        if item.size == 0 or len(arr) % item.size:
            raise _bad_count(item, len(arr), None)
        return arr.reshape((len(arr) // item.size, *item.shape))
    n = len(arr)
    return SparseTensor(np.arange(n, dtype=np.int64).reshape(n, 1), arr, np.array([n], np.int64))


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------


def _records_of(serialized: Any) -> list[bytes]:
    if isinstance(serialized, str):
        raise ExampleInputError(
            f"parse_example takes a batch of serialized Examples (bytes), got a str "
            f"{serialized!r:.60}. Records are bytes: pass what a TFRecordDataset yields (or "
            "encode a str you built yourself)."
        )
    if isinstance(serialized, np.ndarray):
        if serialized.dtype.kind == "S":
            raise ExampleInputError(
                "parse_example got a numpy 'S' array, which drops trailing zero bytes and so "
                "corrupts serialized Examples; pass a list of bytes or an object array."
            )
        serialized = serialized.ravel().tolist()
    elif isinstance(serialized, (bytes, bytearray)):
        raise ExampleInputError(
            "parse_example takes a batch (a list or 1-D array of serialized Examples); "
            "received one bytes object. Use parse_single_example for one record."
        )
    return [
        r if isinstance(r, bytes) else _one_record(r, f"record {i}")
        for i, r in enumerate(serialized)
    ]


def parse_example(
    serialized: Sequence[bytes] | np.ndarray,
    features: Mapping[str, Any],
    example_names: Any = None,
    name: str | None = None,
) -> dict:
    """Parses a batch of serialized ``tf.train.Example`` records (``tf.io.parse_example``).

    Args:
        serialized: a list or 1-D object array of serialized Examples (``str`` records
            are taken as their UTF-8 bytes, as TF).
        features: ``{name: FixedLenFeature | VarLenFeature | FixedLenSequenceFeature |
            SparseFeature | RaggedFeature}``.
        example_names: one name (str or bytes) per record, given in parse errors, as TF.
        name: accepted as TF's op name; checked to be a str.

    Returns:
        ``{name: value}``: ``(batch, *shape)`` arrays for FixedLenFeature,
        ``(batch, max_items, *shape)`` padded arrays for FixedLenSequenceFeature,
        and a `SparseTensor` with ``dense_shape == [batch, max_count]``
        for VarLenFeature (call ``.to_ragged()`` for rows).

    Raises:
        ExampleParseError: as `parse_single_example`, naming the record index.

    Examples:
        >>> from phalanx.io._example import serialize_example
        >>> recs = [serialize_example({"x": np.float32([i, i]), "n": np.arange(i)})
        ...         for i in range(3)]
        >>> out = parse_example(recs, {"x": FixedLenFeature([2], "float32"),
        ...                            "n": VarLenFeature("int64")})
        >>> out["x"].tolist()
        [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
        >>> out["n"].dense_shape.tolist(), out["n"].to_ragged().to_list()
        ([3, 2], [[], [0], [0, 1]])
    """
    _check_op_name(name, "parse_example")
    if example_names is None:
        return _parse_batch(serialized, features)
    records = _records_of(serialized)
    labels = _names_of(example_names, len(records), "parse_example")
    try:
        return _parse_batch(records, features)
    except ExampleParseError as e:
        text = re.sub(
            r"in record (\d+)",
            lambda m: f"in record {m.group(1)} ({labels[int(m.group(1))]!r})",
            str(e),
        )
        raise ExampleParseError(text) from e


def _check_op_name(name: Any, method: str) -> None:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{method}: name must be a str or None, got {type(name).__name__}.")


def _names_of(example_names: Any, n: int, method: str, scalar: bool = False) -> list[Any]:
    names = np.asarray(example_names, dtype=object)
    names = names.reshape(1) if names.ndim == 0 else names.ravel()
    labels = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in names.tolist()]
    if len(labels) != n or not all(isinstance(x, str) for x in labels):
        want = "one name" if scalar else f"one name per record ({n})"
        raise ExampleInputError(
            f"{method}: example_names must be {want} (str or bytes), got {example_names!r:.80}."
        )
    return labels


def _parse_batch(serialized: Any, features: Mapping[str, Any]) -> dict:
    if _has_composite(features):
        from ._composite_features import parse_composite

        return parse_composite(serialized, features, _parse_batch_base, batched=True)
    return _parse_batch_base(serialized, features)


def _parse_batch_base(serialized: Any, features: Mapping[str, Any]) -> dict:
    items = _compile(features)
    records = _records_of(serialized)
    n = len(records)
    groups = _group_by_length(records)
    parts = []
    for rows, same_length in groups:
        group = [records[i] for i in rows] if len(groups) > 1 else records
        result = _parse_fixed_layout(group, items) if same_length and len(group) > 1 else None
        if result is None:
            result = _parse_general(group, items, rows)
        parts.append((rows, result))
    return {item.name: _assemble(item, n, parts, j) for j, item in enumerate(items)}


def _group_by_length(records: list[bytes]) -> list[tuple[np.ndarray, bool]]:
    """Splits the batch into ``(rows, same_length)`` groups of equal record length.

    One group of all rows (``same_length`` False) when lengths are mostly distinct.
    """
    n = len(records)
    if n == 0:
        return [(np.zeros(0, np.int64), False)]
    lengths = np.fromiter(map(len, records), np.int64, n)
    if (lengths == lengths[0]).all():
        return [(np.arange(n), True)]
    uniq, inverse = np.unique(lengths, return_inverse=True)
    if len(uniq) > max(4, n // 64):  # mostly distinct lengths: walk every record
        return [(np.arange(n), False)]
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(1, len(uniq)))
    return [(rows, True) for rows in np.split(order, bounds)]


# A group's result per item: a dense (m, *shape) array for _FIXED, or
# (counts (m,), flat values) for _VAR and _SEQ.


def _parse_general(records: list[bytes], items: list[_Item], rows: np.ndarray) -> list[Any]:
    per_item: list[list[Any]] = [[] for _ in items]
    for r, buf in enumerate(records):
        index = index_features(buf)
        row = int(rows[r])
        for j, item in enumerate(items):
            per_item[j].append(_values_of(buf, index.get(item.key), item, row))
    return [_collect(item, vals, rows) for item, vals in zip(items, per_item, strict=True)]


def _collect(item: _Item, vals: list[Any], rows: np.ndarray) -> Any:
    m = len(vals)
    if item.form == _FIXED:
        out = np.empty((m, *item.shape), item.np_dtype)
        flat = out.reshape(m, item.size)
        for r, v in enumerate(vals):
            if v is None:
                if item.default is None:
                    raise _missing(item, int(rows[r]))
                flat[r] = item.default.ravel()
            elif len(v) != item.size:
                raise _bad_count(item, len(v), int(rows[r]))
            else:
                flat[r] = v
        return out
    counts = np.zeros(m, np.int64)
    chunks = []
    for r, v in enumerate(vals):
        if v is None or len(v) == 0:
            continue
        if item.form == _SEQ and len(v) % item.size:
            raise _bad_count(item, len(v), int(rows[r]))
        counts[r] = len(v)
        chunks.append(v)
    if item.kind == KIND_BYTES:
        flat = rb.objects([b for c in chunks for b in c])
    else:
        flat = np.concatenate(chunks) if chunks else np.zeros(0, item.np_dtype)
    return counts, flat


def _parse_fixed_layout(records: list[bytes], items: list[_Item]) -> list[Any] | None:
    """Parses records of one length that share the first record's layout; None otherwise."""
    first = records[0]
    try:
        index = index_features(first)
        located = []
        dont_care = []
        wanted = {item.key for item in items}
        for key, (s, e) in index.items():
            if key not in wanted:
                dont_care.append((s, e))
        for item in items:
            loc = index.get(item.key)
            if loc is None:
                if item.form == _FIXED and item.default is None:
                    return None  # the general path raises with the record index
                located.append((None, []))  # missing from every record
                continue
            kind, regions = feature_lists(first, *loc)
            if kind not in (item.kind, KIND_NONE):
                return None
            if kind == KIND_NONE and item.form == _FIXED and item.default is not None:
                located.append((None, []))  # an empty Feature() is missing (see _values_of)
                continue
            segs = list_segments(first, kind, regions)
            dont_care.extend(segs)
            located.append((kind, segs))
    except ExampleParseError:
        return None
    m, length = len(records), len(first)
    arr = np.frombuffer(b"".join(records), np.uint8).reshape(m, length)
    ref = arr[0]
    care = np.ones(length, bool)
    for s, e in dont_care:
        care[s:e] = False
    care_idx = np.flatnonzero(care)
    if not (arr[:, care_idx] == ref[care_idx]).all():
        return None
    results = []
    for item, (kind, segs) in zip(items, located, strict=True):
        if kind == KIND_INT64 and segs:  # every varint must have the first row's width
            idx = _seg_index(segs)
            if not ((arr[:, idx] & 0x80) == (ref[idx] & 0x80)).all():
                return None
        values = _layout_values(item, kind, segs, arr, records, first)
        if values is None:
            return None
        results.append(values)
    return results


def _seg_index(segs: list[tuple[int, int]]) -> np.ndarray:
    return np.concatenate([np.arange(s, e) for s, e in segs])


def _layout_values(item, kind, segs, arr, records, first) -> Any:
    """Returns one item's group result from the shared layout (None: let the general path say why)."""
    m = arr.shape[0]
    if kind is None:
        if item.form == _FIXED:
            return np.broadcast_to(item.default, (m, *item.shape)).copy()
        return np.zeros(m, np.int64), np.zeros(0, item.np_dtype)
    if kind == KIND_NONE:
        count = 0
        values = np.zeros((m, 0), item.np_dtype)
    elif kind == KIND_FLOAT:
        if len(segs) == 1:
            s, e = segs[0]
            values = np.ascontiguousarray(arr[:, s:e]).view("<f4")
        else:
            values = np.ascontiguousarray(arr[:, _seg_index(segs)]).view("<f4")
        count = values.shape[1]
    elif kind == KIND_INT64:
        values = _decode_varint_columns(arr, segs) if segs else np.zeros((m, 0), np.int64)
        count = values.shape[1]
    else:
        count = len(segs)
        values = np.empty((m, count), object)
        for j, (s, e) in enumerate(segs):
            values[:, j] = [rec[s:e] for rec in records]
    if item.form == _FIXED:
        if count != item.size:
            return None
        return values.astype(item.np_dtype, copy=False).reshape(m, *item.shape)
    if item.form == _SEQ and (item.size == 0 or count % item.size):
        return None
    counts = np.full(m, count, np.int64)
    return counts, values.astype(item.np_dtype, copy=False).reshape(-1)


def _decode_varint_columns(arr: np.ndarray, segs) -> np.ndarray:
    """Decodes the varints at ``segs`` in every row; all rows share the byte widths."""
    idx = _seg_index(segs)
    cols = arr[:, idx]
    if not (cols[0] & 0x80).any():
        return cols.astype(np.int64)
    widths_ref = cols[0] >= 0x80
    ends = np.flatnonzero(~widths_ref)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    shift = (np.arange(idx.size) - np.repeat(starts, lengths)).astype(np.uint64) * np.uint64(7)
    parts = (cols & 0x7F).astype(np.uint64) << shift
    return np.add.reduceat(parts, starts, axis=1).view(np.int64)


def _assemble(item: _Item, n: int, parts: list, j: int) -> Any:
    if len(parts) == 1 and len(parts[0][0]) == n:
        rows, result = parts[0][0], parts[0][1][j]
        ordered = rows is None or n == 0 or (rows == np.arange(n)).all()
        if ordered:
            return _finish(item, n, result)
    if item.form == _FIXED:
        out = np.empty((n, *item.shape), item.np_dtype)
        for rows, result in parts:
            out[rows] = result[j]
        return out
    counts = np.zeros(n, np.int64)
    for rows, result in parts:
        counts[rows] = result[j][0]
    splits = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=splits[1:])
    flat = np.empty(int(splits[-1]), item.np_dtype)
    for rows, result in parts:
        group_counts, values = result[j]
        local = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(group_counts, out=local[1:])
        dest = np.repeat(splits[rows] - local[:-1], group_counts) + np.arange(local[-1])
        flat[dest] = values
    return _finish(item, n, (counts, flat))


def _finish(item: _Item, n: int, result: Any) -> Any:
    if item.form == _FIXED:
        return result
    counts, flat = result
    if item.form == _VAR:
        width = int(counts.max()) if n else 0
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        splits = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=splits[1:])
        cols = np.arange(len(flat), dtype=np.int64) - np.repeat(splits[:-1], counts)
        return SparseTensor(
            np.stack([rows, cols], axis=1).reshape(-1, 2), flat, np.array([n, width], np.int64)
        )
    items_per_row = counts // max(item.size, 1)
    width = int(items_per_row.max()) if n else 0
    out = np.empty((n, width * item.size), item.np_dtype)
    out[...] = item.default
    row_of = np.repeat(np.arange(n), counts)
    splits = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=splits[1:])
    col_of = np.arange(len(flat)) - np.repeat(splits[:-1], counts)
    out[row_of, col_of] = flat
    return out.reshape(n, width, *item.shape)
