"""``tf.train.Example`` messages and their protobuf wire codec, without protobuf.

The schema (``tensorflow/core/example/{example,feature}.proto``)::

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }
    Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                             Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed = true]; }
    Int64List { repeated int64 value = 1 [packed = true]; }

phalanx writes what TensorFlow writes: packed floats and int64s, every map
entry with its key and value, in the order of the mapping given (TensorFlow
writes a map in its protobuf runtime's hash order, so byte equality holds for
the same order). It reads any encoding protobuf accepts: packed or unpacked
repeated fields, fields in any order, unknown fields (skipped), repeated
``Features`` (merged) and repeated map keys (the last wins).

A hand-written codec measured faster here than ``protobuf``'s upb runtime for
what the parsers need (finding a few features and viewing their values in
place with numpy), and it keeps the dependency out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ExampleParseError

__all__ = [
    "BytesList",
    "Example",
    "Feature",
    "Features",
    "FloatList",
    "Int64List",
    "serialize_example",
]

# Feature kinds, as the oneof's field numbers.
KIND_NONE, KIND_BYTES, KIND_FLOAT, KIND_INT64 = 0, 1, 2, 3
KIND_NAMES = {
    KIND_NONE: None,
    KIND_BYTES: "bytes_list",
    KIND_FLOAT: "float_list",
    KIND_INT64: "int64_list",
}
_U64_MASK = 0xFFFFFFFFFFFFFFFF

# ---------------------------------------------------------------------------
# Wire primitives
# ---------------------------------------------------------------------------

_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def encode_varint(value: int) -> bytes:
    """Returns the protobuf varint of a non-negative ``value`` below 2**64."""
    if value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _malformed(what: str) -> ExampleParseError:
    return ExampleParseError(
        f"Could not parse a serialized tf.train.Example: {what}. Is the record an Example "
        "(and not, say, a SequenceExample or raw bytes)?"
    )


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Returns ``(value, next_pos)`` for the varint at ``buf[pos]`` (unsigned)."""
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        result = b & 0x7F
        shift = 7
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift > 63:
                raise _malformed(f"a varint at byte {pos} is longer than 10 bytes")
    except IndexError:
        raise _malformed(f"the data ends inside a varint (byte {pos})") from None


def skip_field(buf: bytes, pos: int, tag: int, end: int) -> int:
    """Returns the position after the value of a field with ``tag`` (any wire type)."""
    wire = tag & 7
    if tag >> 3 == 0:
        raise _malformed(f"field number 0 at byte {pos}")
    if wire == 0:
        _, pos = read_varint(buf, pos)
    elif wire == 2:
        n, pos = read_varint(buf, pos)
        pos += n
    elif wire == 5:
        pos += 4
    elif wire == 1:
        pos += 8
    else:
        raise _malformed(f"unsupported wire type {wire} (groups) at byte {pos}")
    if pos > end:
        raise _malformed(f"a field runs past the end of its message ({pos} > {end})")
    return pos


def _length(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    n = buf[pos] if pos < end else 0x80
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_varint(buf, pos)
    if pos + n > end:
        raise _malformed(f"a length of {n} at byte {pos} runs past the end ({end})")
    return n, pos


def index_features(buf: bytes) -> dict[bytes, tuple[int, int]]:
    """Maps each feature name (bytes) of a serialized Example to its Feature's byte range."""
    out: dict[bytes, tuple[int, int]] = {}
    end = len(buf)
    pos = 0
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(buf, pos)
        if tag == 0x0A:
            n, pos = _length(buf, pos, end)
            _index_entries(buf, pos, pos + n, out)
            pos += n
        else:
            pos = skip_field(buf, pos, tag, end)
    return out


def _index_entries(buf: bytes, pos: int, end: int, out: dict) -> None:
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(buf, pos)
        if tag != 0x0A:
            pos = skip_field(buf, pos, tag, end)
            continue
        n, pos = _length(buf, pos, end)
        entry_end = pos + n
        key = b""
        vs = ve = pos
        while pos < entry_end:
            t = buf[pos]
            if t < 0x80:
                pos += 1
            else:
                t, pos = read_varint(buf, pos)
            if t == 0x0A:
                kl, pos = _length(buf, pos, entry_end)
                key = buf[pos : pos + kl]
                pos += kl
            elif t == 0x12:
                vl, pos = _length(buf, pos, entry_end)
                vs, ve = pos, pos + vl
                pos += vl
            else:
                pos = skip_field(buf, pos, t, entry_end)
        out[key] = (vs, ve)


def feature_lists(buf: bytes, start: int, end: int) -> tuple[int, list[tuple[int, int]]]:
    """Returns ``(kind, [(start, end), ...])``: the Feature's kind and its list message(s).

    A later kind replaces an earlier one (oneof); the same kind repeated merges.
    """
    kind = KIND_NONE
    regions: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(buf, pos)
        field = tag >> 3
        if tag & 7 == 2 and 1 <= field <= 3:
            n, pos = _length(buf, pos, end)
            if field != kind:
                kind = field
                regions = []
            regions.append((pos, pos + n))
            pos += n
        else:
            pos = skip_field(buf, pos, tag, end)
    return kind, regions


def list_segments(buf: bytes, kind: int, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Returns the byte ranges of a list's values.

    Floats: ranges of little-endian float32s; int64s: ranges of varints; bytes:
    one range per string. Packed and unpacked encodings both appear here.
    """
    segs: list[tuple[int, int]] = []
    for pos, end in regions:
        while pos < end:
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = read_varint(buf, pos)
            if tag == 0x0A:  # packed floats / int64s, or one string
                n, pos = _length(buf, pos, end)
                if kind == KIND_FLOAT and n % 4:
                    raise _malformed(f"a packed float list of {n} bytes (not a multiple of 4)")
                segs.append((pos, pos + n))
                pos += n
            elif tag == 0x0D and kind == KIND_FLOAT:
                if pos + 4 > end:
                    raise _malformed("a float runs past the end of its list")
                segs.append((pos, pos + 4))
                pos += 4
            elif tag == 0x08 and kind == KIND_INT64:
                _, after = read_varint(buf, pos)
                segs.append((pos, after))
                pos = after
            else:
                pos = skip_field(buf, pos, tag, end)
    return segs


def decode_varints(data: bytes | np.ndarray) -> np.ndarray:
    """Decodes a stream of varints into int64 (two's complement, as protobuf's int64)."""
    a = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data
    if a.size == 0:
        return np.zeros(0, np.int64)
    high = a >= 0x80
    if not high.any():
        return a.astype(np.int64)
    if high[-1]:
        raise _malformed("an int64 list ends inside a varint")
    ends = np.flatnonzero(~high)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise _malformed("a varint is longer than 10 bytes")
    shift = (np.arange(a.size) - np.repeat(starts, lengths)).astype(np.uint64) * np.uint64(7)
    parts = (a & 0x7F).astype(np.uint64) << shift
    return np.add.reduceat(parts, starts).view(np.int64)


def segment_values(buf: bytes, kind: int, segs: list[tuple[int, int]]) -> Any:
    """Returns the values in ``segs``: a float32 or int64 array, or a list of bytes."""
    if kind == KIND_BYTES:
        return [buf[s:e] for s, e in segs]
    if kind == KIND_FLOAT:
        if len(segs) == 1:
            s, e = segs[0]
            return np.frombuffer(buf, "<f4", (e - s) >> 2, s).astype(np.float32)
        return np.frombuffer(b"".join(buf[s:e] for s, e in segs), "<f4").astype(np.float32)
    if kind == KIND_INT64:
        if len(segs) == 1:
            s, e = segs[0]
            if e - s == 1:
                b = buf[s]
                if b < 0x80:
                    return np.array([b], np.int64)
            return decode_varints(np.frombuffer(buf, np.uint8, e - s, s))
        return decode_varints(b"".join(buf[s:e] for s, e in segs))
    return np.zeros(0, np.float32)


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


def _encode_int64s(values: np.ndarray) -> bytes:
    if values.size <= 16:
        return b"".join(encode_varint(int(v) & _U64_MASK) for v in values.tolist())
    u = values.astype(np.int64, copy=False).view(np.uint64)
    if (u < 0x80).all():
        return u.astype(np.uint8).tobytes()
    nbytes = np.ones(u.shape, np.int64)
    rest = u >> np.uint64(7)
    while rest.any():
        nbytes += rest > 0
        rest >>= np.uint64(7)
    k = np.arange(10, dtype=np.uint64)
    groups = ((u[:, None] >> (k * np.uint64(7))) & np.uint64(0x7F)).astype(np.uint8)
    present = np.arange(10) < nbytes[:, None]
    cont = np.arange(10) < (nbytes[:, None] - 1)
    groups |= (cont * 0x80).astype(np.uint8)
    return groups[present].tobytes()


def _encode_list(kind: int, values: Any) -> bytes:
    if kind == KIND_FLOAT:
        data = np.asarray(values, dtype="<f4").tobytes()
        return b"\x0a" + encode_varint(len(data)) + data if data else b""
    if kind == KIND_INT64:
        data = _encode_int64s(np.asarray(values, dtype=np.int64).ravel())
        return b"\x0a" + encode_varint(len(data)) + data if data else b""
    return b"".join(b"\x0a" + encode_varint(len(v)) + v for v in values)


def encode_feature(kind: int, values: Any) -> bytes:
    """Returns a serialized ``Feature`` of ``kind`` holding ``values``."""
    if kind == KIND_NONE:
        return b""
    body = _encode_list(kind, values)
    return bytes((kind << 3 | 2,)) + encode_varint(len(body)) + body


def encode_features(items: Iterable[tuple[bytes, bytes]]) -> bytes:
    """Returns a serialized ``Features`` from ``(name, serialized Feature)`` pairs, in order."""
    parts = []
    for key, feature in items:
        entry = b"\x0a" + encode_varint(len(key)) + key + b"\x12" + encode_varint(len(feature))
        parts.append(b"\x0a" + encode_varint(len(entry) + len(feature)) + entry + feature)
    return b"".join(parts)


def encode_example(features: bytes | None) -> bytes:
    """Returns a serialized ``Example`` around a serialized ``Features`` (None: unset)."""
    if features is None:
        return b""
    return b"\x0a" + encode_varint(len(features)) + features


# ---------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------


def _as_bytes(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytearray, memoryview, np.bytes_)):
        return bytes(v)
    raise TypeError(f"A BytesList holds bytes or str; received {v!r} of type {type(v).__name__}.")


class BytesList:
    """A list of byte strings (``tf.train.BytesList``); ``str`` values are UTF-8 encoded.

    Examples:
        >>> BytesList(value=[b"a", "é"]).value
        [b'a', b'\\xc3\\xa9']
    """

    __slots__ = ("value",)

    def __init__(self, value: Iterable[bytes | str] = ()):
        self.value: list[bytes] = [_as_bytes(v) for v in value]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BytesList) and self.value == other.value

    def __repr__(self) -> str:
        return f"BytesList(value={self.value!r})"


class FloatList:
    """A list of float32 values (``tf.train.FloatList``), held as a numpy array.

    Examples:
        >>> FloatList(value=[0.5, 2]).value
        array([0.5, 2. ], dtype=float32)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any = ()):
        self.value: np.ndarray = np.asarray(value, dtype=np.float32).ravel()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatList) and np.array_equal(
            self.value.view(np.uint32), other.value.view(np.uint32)
        )

    def __repr__(self) -> str:
        return f"FloatList(value={self.value.tolist()!r})"


class Int64List:
    """A list of int64 values (``tf.train.Int64List``), held as a numpy array.

    Examples:
        >>> Int64List(value=[1, -1]).value
        array([ 1, -1])
    """

    __slots__ = ("value",)

    def __init__(self, value: Any = ()):
        self.value: np.ndarray = np.asarray(value, dtype=np.int64).ravel()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Int64List) and np.array_equal(self.value, other.value)

    def __repr__(self) -> str:
        return f"Int64List(value={self.value.tolist()!r})"


_LIST_TYPES = {KIND_BYTES: BytesList, KIND_FLOAT: FloatList, KIND_INT64: Int64List}


class Feature:
    """One feature (``tf.train.Feature``): at most one of three typed lists.

    Args:
        bytes_list: a `BytesList`.
        float_list: a `FloatList`.
        int64_list: an `Int64List`.

    Examples:
        >>> f = Feature(int64_list=Int64List(value=[3]))
        >>> f.WhichOneof("kind"), f.value
        ('int64_list', array([3]))
        >>> Feature().WhichOneof("kind") is None
        True
    """

    __slots__ = ("_kind", "_list")

    def __init__(
        self,
        *,
        bytes_list: BytesList | None = None,
        float_list: FloatList | None = None,
        int64_list: Int64List | None = None,
    ):
        given = [
            (k, v)
            for k, v in (
                (KIND_BYTES, bytes_list),
                (KIND_FLOAT, float_list),
                (KIND_INT64, int64_list),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(
                "A Feature holds one of bytes_list, float_list, int64_list; "
                f"received {len(given)} of them."
            )
        self._kind, self._list = given[0] if given else (KIND_NONE, None)

    @classmethod
    def _of(cls, kind: int, lst: Any) -> Feature:
        f = cls.__new__(cls)
        f._kind, f._list = kind, lst
        return f

    @property
    def kind(self) -> str | None:
        """``"bytes_list"``, ``"float_list"``, ``"int64_list"``, or None when empty."""
        return KIND_NAMES[self._kind]

    def WhichOneof(self, name: str) -> str | None:
        """Returns `kind` (protobuf's spelling; ``name`` must be ``"kind"``)."""
        if name != "kind":
            raise ValueError(f"Feature has one oneof, 'kind'; received {name!r}.")
        return self.kind

    @property
    def bytes_list(self) -> BytesList:
        """The bytes list (empty when this feature holds another kind)."""
        return self._list if self._kind == KIND_BYTES else BytesList()

    @property
    def float_list(self) -> FloatList:
        """The float list (empty when this feature holds another kind)."""
        return self._list if self._kind == KIND_FLOAT else FloatList()

    @property
    def int64_list(self) -> Int64List:
        """The int64 list (empty when this feature holds another kind)."""
        return self._list if self._kind == KIND_INT64 else Int64List()

    @property
    def value(self) -> Any:
        """The values: a float32/int64 array or a list of bytes (an empty list when unset)."""
        return self._list.value if self._list is not None else []

    def SerializeToString(self) -> bytes:
        """Returns the protobuf encoding of this feature."""
        return encode_feature(self._kind, self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Feature) and (self._kind, self._list) == (
            other._kind,
            other._list,
        )

    def __repr__(self) -> str:
        return f"Feature({self.kind}={self._list!r})" if self._list is not None else "Feature()"


def feature_from_value(value: Any, name: str = "?") -> Feature:
    """Returns a `Feature` for a plain value: array, number, bytes/str, or a list of them.

    Floating values become a FloatList, integers and booleans an Int64List,
    bytes and str a BytesList.

    Examples:
        >>> feature_from_value([1.0, 2.0]).kind, feature_from_value(7).kind
        ('float_list', 'int64_list')
    """
    if isinstance(value, Feature):
        return value
    if isinstance(value, (bytes, str, bytearray, np.bytes_, np.str_)):
        return Feature._of(KIND_BYTES, BytesList([value]))
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None and isinstance(value, (list, tuple)) and not value:
        raise TypeError(
            f"Feature {name!r}: an empty list has no kind; pass a Feature, e.g. "
            "Feature(float_list=FloatList()), or an empty numpy array with a dtype."
        )
    if arr is None:
        if isinstance(value, (list, tuple)) and any(
            isinstance(v, (bytes, str, bytearray, np.bytes_, np.str_)) for v in value
        ):
            return Feature._of(KIND_BYTES, BytesList(value))
        arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return Feature._of(KIND_FLOAT, FloatList(arr))
    if arr.dtype.kind in "iub":
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"Feature {name!r}: values above 2**63-1 do not fit an Int64List.")
        return Feature._of(KIND_INT64, Int64List(arr))
    if arr.dtype.kind in "SUO":
        return Feature._of(KIND_BYTES, BytesList(arr.ravel().tolist()))
    raise TypeError(
        f"Feature {name!r}: cannot tell the kind of {value!r} (dtype {arr.dtype}); pass a "
        "Feature, or a float, integer or bytes array. An empty list needs a Feature, e.g. "
        "Feature(float_list=FloatList()), since its kind is unknown."
    )


class Features:
    """A map from feature name to `Feature` (``tf.train.Features``).

    Args:
        feature: a mapping of names to `Feature` objects or plain values
            (see `feature_from_value`). The order is kept when encoding.
    """

    __slots__ = ("feature",)

    def __init__(self, feature: Mapping[str, Any] | None = None):
        self.feature: dict[str, Feature] = {
            str(k): feature_from_value(v, k) for k, v in (feature or {}).items()
        }

    def SerializeToString(self) -> bytes:
        """Returns the protobuf encoding of this map, entries in the mapping's order."""
        return encode_features(
            (k.encode("utf-8"), f.SerializeToString()) for k, f in self.feature.items()
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Features) and self.feature == other.feature

    def __repr__(self) -> str:
        return f"Features(feature={self.feature!r})"


class Example:
    """One example (``tf.train.Example``): named features, encoded as TensorFlow does.

    Args:
        features: a `Features`, or a mapping of names to features or plain values.

    Examples:
        >>> ex = Example(features={"label": 3, "image": np.array([0.5, 1.5], np.float32)})
        >>> data = ex.SerializeToString()
        >>> back = Example.FromString(data)
        >>> back.features.feature["label"].int64_list.value
        array([3])
        >>> back == ex, back.SerializeToString() == data
        (True, True)
    """

    __slots__ = ("features",)

    def __init__(self, features: Features | Mapping[str, Any] | None = None):
        if features is not None and not isinstance(features, Features):
            features = Features(features)
        self.features: Features | None = features

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any]) -> Example:
        """Returns an Example from a plain dict of arrays, numbers, bytes or Features."""
        return cls(Features(mapping))

    def to_dict(self) -> dict[str, Any]:
        """Returns ``{name: values}`` (float32/int64 arrays, lists of bytes)."""
        feats = self.features.feature if self.features is not None else {}
        return {k: f.value for k, f in feats.items()}

    def SerializeToString(self) -> bytes:
        """Returns the protobuf encoding, byte-identical to TensorFlow's for the same entry order."""
        return encode_example(None if self.features is None else self.features.SerializeToString())

    @classmethod
    def FromString(cls, data: bytes) -> Example:
        """Parses a serialized Example (any valid protobuf encoding of one): bytes, or a
        record as a dataset yields it (a 0-d bytes array).

        Raises:
            ExampleParseError: ``data`` is not a valid encoding.
            TypeError: ``data`` is not one record.
        """
        data = _record_bytes(data)
        features = {}
        for key, (s, e) in index_features(data).items():
            kind, regions = feature_lists(data, s, e)
            if kind == KIND_NONE:
                features[key.decode("utf-8", "replace")] = Feature()
                continue
            values = segment_values(data, kind, list_segments(data, kind, regions))
            lst = _LIST_TYPES[kind].__new__(_LIST_TYPES[kind])
            lst.value = values
            features[key.decode("utf-8", "replace")] = Feature._of(kind, lst)
        ex = cls()
        if data:
            ex.features = Features.__new__(Features)
            ex.features.feature = features
        return ex

    def ParseFromString(self, data: bytes) -> int:
        """Replaces this Example with the parsed ``data`` (protobuf's method, as the TFRecord
        tutorial calls it); returns the number of bytes read.

        Raises:
            ExampleParseError: ``data`` is not a valid encoding.
            TypeError: ``data`` is not one record.
        """
        data = _record_bytes(data)
        self.features = Example.FromString(data).features
        return len(data)

    def __str__(self) -> str:
        """Protobuf's text format, as ``print(example)`` shows it in TensorFlow (features in
        the record's order, where TensorFlow's protobuf prints its map in hash order)."""
        if self.features is None:
            return ""
        lines = ["features {"]
        for key, feature in self.features.feature.items():
            lines += ["  feature {", f'    key: "{_escape(key.encode("utf-8"))}"', "    value {"]
            if feature._kind != KIND_NONE:
                lines.append(f"      {feature.kind} {{")
                lines += [f"        value: {_text_value(feature._kind, v)}" for v in feature.value]
                lines.append("      }")
            lines += ["    }", "  }"]
        return "\n".join([*lines, "}", ""])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Example):
            return False
        mine = self.features.feature if self.features is not None else {}
        theirs = other.features.feature if other.features is not None else {}
        return mine == theirs

    def __repr__(self) -> str:
        return f"Example(features={self.features!r})"


def _record_bytes(data: Any) -> bytes:
    """One serialized record as bytes: bytes-like, or a 0-d bytes array (a dataset's record)."""
    if isinstance(data, np.ndarray):
        if data.ndim != 0:
            raise TypeError(
                "Example.FromString/ParseFromString take one serialized record (bytes), got "
                f"an array of shape {data.shape}. Parse a batch with "
                "phalanx.data.parse_example(records, spec), or pass one record."
            )
        data = data.item()
    if isinstance(data, str):
        raise TypeError(
            "Example.FromString/ParseFromString take one serialized record (bytes), got a str; "
            "records are bytes (as TFRecordDataset yields them)."
        )
    return bytes(data)


def _escape(value: bytes) -> str:
    """Protobuf's C escaping of a bytes value (text format)."""
    out = []
    for b in value:
        c = chr(b)
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}


def _text_value(kind: int, value: Any) -> str:
    if kind == KIND_BYTES:
        return f'"{_escape(_as_bytes(value))}"'
    if kind == KIND_INT64:
        return str(int(value))
    f = np.float32(value)
    if np.isnan(f):
        return "nan"
    if np.isinf(f):
        return "inf" if f > 0 else "-inf"
    short = f"{float(f):.6g}"  # upb's rule: FLT_DIG digits when they round-trip, else 9
    return short if np.float32(short) == f else f"{float(f):.9g}"


def serialize_example(features: Mapping[str, Any]) -> bytes:
    """Returns a serialized ``tf.train.Example`` from a plain dict, in the dict's order.

    The fast way to write Examples: values are arrays, numbers, bytes/str, lists
    of them, or `Feature` objects.

    Examples:
        >>> serialize_example({"x": np.array([1.0], np.float32)}).hex()
        '0a0f0a0d0a0178120812060a040000803f'
    """
    parts = []
    for k, v in features.items():
        if isinstance(v, np.ndarray) and v.dtype.kind in "fiub":
            kind = KIND_FLOAT if v.dtype.kind == "f" else KIND_INT64
            feature = encode_feature(kind, v.ravel())
        else:
            f = feature_from_value(v, k)
            feature = encode_feature(f._kind, f.value)
        parts.append((k.encode("utf-8"), feature))
    return encode_example(encode_features(parts))
