"""tf.train.Example encoding and parsing: wire variants, specs, errors, fast path vs general path."""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.errors import ExampleInputError, ExampleParseError
from phalanx.io._example import (
    BytesList,
    Example,
    Feature,
    Features,
    FloatList,
    Int64List,
    encode_varint,
    serialize_example,
)
from phalanx.io._parse_example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    SparseTensor,
    VarLenFeature,
    parse_example,
    parse_single_example,
)


def _ld(field: int, payload: bytes) -> bytes:
    return encode_varint(field << 3 | 2) + encode_varint(len(payload)) + payload


def _entry(key: bytes, feature: bytes, *, value_first: bool = False, junk: bytes = b"") -> bytes:
    parts = [_ld(1, key), _ld(2, feature)]
    if value_first:
        parts.reverse()
    return _ld(1, junk + b"".join(parts))


def _example(*entries: bytes, junk: bytes = b"") -> bytes:
    return junk + _ld(1, b"".join(entries))


INT64S = [0, 1, -1, 127, 128, 300, 2**31, -(2**63), 2**63 - 1]
SPEC = {
    "f": FixedLenFeature([3], np.float32),
    "i": VarLenFeature(np.int64),
    "s": FixedLenFeature([2], "string"),
}


def test_encoding_packed_and_canonical():
    data = serialize_example({"i": np.array(INT64S), "f": np.float32([1, 2, 3]), "s": [b"x", "y"]})
    assert Example.FromString(data).SerializeToString() == data
    ex = Example.from_dict({"i": np.array(INT64S), "f": np.float32([1, 2, 3]), "s": [b"x", "y"]})
    assert ex.SerializeToString() == data
    assert ex.to_dict()["i"].tolist() == INT64S
    # Packed lists: one tag, one length.
    assert _ld(2, _ld(1, np.float32([1, 2, 3]).tobytes())) in data


def test_large_int64_lists_encode_vectorized_like_small_ones():
    values = np.array(INT64S * 20)
    small = b"".join(Feature(int64_list=Int64List(v)).SerializeToString()[4:] for v in [values[:9]])
    big = Feature(int64_list=Int64List(values)).SerializeToString()
    assert small in big
    assert (
        Example.FromString(serialize_example({"v": values})).to_dict()["v"].tolist()
        == values.tolist()
    )


def test_unpacked_unknown_fields_and_any_field_order_parse():
    unpacked_floats = b"".join(b"\x0d" + np.float32(v).tobytes() for v in (1, 2, 3))
    unpacked_ints = b"".join(b"\x08" + encode_varint(v & (2**64 - 1)) for v in INT64S[:4])
    packed_ints = _ld(1, b"".join(encode_varint(v & (2**64 - 1)) for v in INT64S[4:]))
    unknown = (
        b"\x78\x05" + _ld(14, b"zzz") + b"\x7d\x00\x00\x00\x00"
    )  # fields 15 varint/fixed32, 14
    data = _example(
        _entry(b"s", _ld(1, _ld(1, b"p") + unknown + _ld(1, b"q")), value_first=True),
        _entry(b"i", _ld(3, unknown + unpacked_ints + packed_ints), junk=unknown),
        _entry(b"f", unknown + _ld(2, unpacked_floats)),
        _entry(b"unused", _ld(2, b"garbage that is never looked at")),
        junk=unknown,
    )
    out = parse_single_example(data, SPEC)
    assert out["f"].tolist() == [1, 2, 3]
    assert out["i"].values.tolist() == INT64S
    assert out["s"].tolist() == [b"p", b"q"]
    batch = parse_example([data, data], SPEC)
    assert batch["f"].tolist() == [[1, 2, 3]] * 2
    assert batch["i"].to_ragged().to_list() == [INT64S, INT64S]


def test_repeated_features_messages_merge_and_last_key_wins():
    first = _example(_entry(b"f", _ld(2, _ld(1, np.float32([9, 9, 9]).tobytes()))))
    second = _example(_entry(b"f", _ld(2, _ld(1, np.float32([1, 2, 3]).tobytes()))))
    other = _example(_entry(b"s", _ld(1, _ld(1, b"a") + _ld(1, b"b"))))
    out = parse_single_example(first + second + other, {"f": SPEC["f"], "s": SPEC["s"]})
    assert out["f"].tolist() == [1, 2, 3] and out["s"].tolist() == [b"a", b"b"]


def test_messages_api():
    ex = Example(
        features=Features(
            feature={
                "b": Feature(bytes_list=BytesList(value=[b"x"])),
                "f": Feature(float_list=FloatList(value=[0.5])),
                "i": Feature(int64_list=Int64List(value=[1, 2])),
                "e": Feature(),
            }
        )
    )
    back = Example.FromString(ex.SerializeToString())
    assert back == ex
    assert [f.WhichOneof("kind") for f in back.features.feature.values()] == [
        "bytes_list",
        "float_list",
        "int64_list",
        None,
    ]
    assert Example().SerializeToString() == b""
    assert Example(Features()).SerializeToString() == b"\x0a\x00"
    with pytest.raises(ValueError, match="one of"):
        Feature(float_list=FloatList([1]), int64_list=Int64List([1]))
    with pytest.raises(TypeError, match="empty list has no kind"):
        serialize_example({"x": []})


@pytest.mark.parametrize(
    "data, match",
    [
        (b"\x0a\x05\x0a", "runs past|ends inside"),
        (b"\x0a\xff", "ends inside a varint"),
        (b"\x0b", "wire type 3"),
        (_example(_entry(b"f", _ld(2, _ld(1, b"\x00\x00\x80")))), "not a multiple of 4"),
    ],
)
def test_malformed_records_raise(data, match):
    with pytest.raises(ExampleParseError, match=match):
        parse_single_example(data, {"f": VarLenFeature("float32")})


def test_missing_dtype_and_count_errors_name_the_feature_and_record():
    good = serialize_example({"f": np.float32([1, 2, 3]), "s": [b"a", b"b"], "i": np.arange(2)})
    no_f = serialize_example({"s": [b"a", b"b"]})
    wrong_type = serialize_example({"f": np.arange(3), "s": [b"a", b"b"]})
    wrong_count = serialize_example({"f": np.float32([1, 2]), "s": [b"a", b"b"]})
    with pytest.raises(
        ExampleParseError, match=r"'f' \(float32\) is required but missing in record 1"
    ):
        parse_example([good, no_f], SPEC)
    with pytest.raises(ExampleParseError, match="'f' in record 2 holds a int64 list.*float32"):
        parse_example([good, good, wrong_type], SPEC)
    with pytest.raises(ExampleParseError, match=r"'f' in record 1 has 2 values.*needs exactly 3"):
        parse_example([good, wrong_count], SPEC)
    with pytest.raises(ExampleParseError, match="'f' has 2 values"):
        parse_single_example(wrong_count, SPEC)
    with pytest.raises(ValueError, match="float32, int64 or string"):
        FixedLenFeature([], np.float64)
    # TF 2.21: allow_missing defaults to False and parse_example raises ValueError without it
    assert FixedLenSequenceFeature([], np.int64).allow_missing is False
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        parse_example([good], {"f": FixedLenSequenceFeature([], np.int64)})
    with pytest.raises(TypeError, match="'S' array"):
        parse_example(np.array([good], dtype="S"), SPEC)


def test_defaults_and_empty_features():
    spec = {
        "d": FixedLenFeature([2], np.int64, default_value=[4, 5]),
        "z": FixedLenFeature([0], np.float32),
        "seq": FixedLenSequenceFeature([2], np.float32, allow_missing=True, default_value=-1.0),
        "v": VarLenFeature("string"),
    }
    empty = Example({"z": Feature(), "seq": Feature(), "v": Feature()}).SerializeToString()
    full = serialize_example(
        {
            "d": np.array([7, 8]),
            "z": Feature(float_list=FloatList()),
            "seq": np.float32([1, 2, 3, 4]),
            "v": [b"a", b"b", b"c"],
        }
    )
    one = parse_single_example(empty, spec)
    assert one["d"].tolist() == [4, 5] and one["z"].shape == (0,)
    assert one["seq"].shape == (0, 2) and one["v"].dense_shape.tolist() == [0]
    batch = parse_example([empty, full, empty], spec)
    assert batch["d"].tolist() == [[4, 5], [7, 8], [4, 5]]
    assert batch["seq"].tolist() == [[[-1, -1], [-1, -1]], [[1, 2], [3, 4]], [[-1, -1], [-1, -1]]]
    assert batch["v"].indices.tolist() == [[1, 0], [1, 1], [1, 2]]
    assert batch["v"].dense_shape.tolist() == [3, 3]
    assert batch["v"].to_dense().tolist() == [[b"", b"", b""], [b"a", b"b", b"c"], [b"", b"", b""]]
    nothing = parse_example([], spec)
    assert nothing["d"].shape == (0, 2) and nothing["v"].dense_shape.tolist() == [0, 0]


def _random_records(rng, n, *, vary_layout):
    records = []
    for i in range(n):
        count = int(rng.integers(0, 4)) if vary_layout else 2
        label = int(rng.integers(-(2**40), 2**40)) if vary_layout else int(rng.integers(0, 100))
        feats = {
            "image": rng.random(5, dtype=np.float32),
            "label": np.array([label]),
            "ids": rng.integers(0, 1000 if vary_layout else 100, count),
            "name": [b"n%03d" % i],
            "pairs": rng.random(2 * count, dtype=np.float32),
        }
        keys = list(feats)
        if vary_layout and i % 3 == 0:
            keys.reverse()
        records.append(serialize_example({k: feats[k] for k in keys}))
    return records


@pytest.mark.parametrize("vary_layout", [False, True])
def test_batched_parse_equals_per_record_parse(vary_layout):
    rng = np.random.default_rng(0)
    records = _random_records(rng, 200, vary_layout=vary_layout)
    spec = {
        "image": FixedLenFeature([5], np.float32),
        "label": FixedLenFeature([], np.int64),
        "ids": VarLenFeature(np.int64),
        "name": FixedLenFeature([], "string"),
        "pairs": FixedLenSequenceFeature([2], np.float32, allow_missing=True),
        "absent": FixedLenFeature([2], np.float32, default_value=[0.5, 1.5]),
    }
    batch = parse_example(records, spec)
    singles = [parse_single_example(r, spec) for r in records]
    assert np.array_equal(batch["image"], np.stack([s["image"] for s in singles]))
    assert batch["label"].tolist() == [int(s["label"]) for s in singles]
    assert batch["name"].tolist() == [s["name"].item() for s in singles]
    assert batch["ids"].to_ragged().to_list() == [s["ids"].values.tolist() for s in singles]
    width = max(len(s["pairs"]) for s in singles)
    for row, s in zip(batch["pairs"], singles, strict=True):
        assert row.shape == (width, 2) and np.array_equal(row[: len(s["pairs"])], s["pairs"])
    assert batch["absent"].tolist() == [[0.5, 1.5]] * len(records)


def test_same_length_records_with_different_varint_widths_are_not_confused():
    # Equal lengths, but the varint bytes differ in width: the layout check must catch it.
    a = serialize_example({"v": np.array([1, 200]), "w": np.array([5])})
    b = serialize_example({"v": np.array([200, 1]), "w": np.array([5])})
    assert len(a) == len(b)
    out = parse_example([a, b], {"v": VarLenFeature(np.int64), "w": FixedLenFeature([], np.int64)})
    assert out["v"].to_ragged().to_list() == [[1, 200], [200, 1]]


def test_sparse_tensor_helpers():
    st = SparseTensor(np.array([[0, 1], [2, 0]]), np.array([1.5, 2.5]), np.array([3, 2]))
    assert st.to_dense().tolist() == [[0, 1.5], [0, 0], [2.5, 0]]
    ragged = st.to_ragged()
    assert ragged.row_splits.tolist() == [0, 1, 1, 2] and len(ragged) == 3


def test_example_names_name_the_failing_record_as_tf():
    # TF 2.21's parse_example(serialized, features, example_names=None, name=None): the
    # names only label parse errors
    spec = {"f": FixedLenFeature([3], np.float32)}
    good = serialize_example({"f": np.float32([1, 2, 3])})
    bad = serialize_example({"f": np.float32([1, 2])})
    with pytest.raises(ExampleParseError, match=r"in record 1 \('b:1'\) has 2 values"):
        parse_example([good, bad], spec, example_names=["a:0", b"b:1"])
    with pytest.raises(ExampleParseError, match="Name: 'one'"):
        parse_single_example(bad, spec, example_names="one")
    out = parse_example([good], spec, example_names=["a:0"], name="parse")
    assert out["f"].tolist() == [[1.0, 2.0, 3.0]]
    with pytest.raises(ExampleInputError, match=r"example_names must be one name per record \(1\)"):
        parse_example([good], spec, example_names=["a", "b"])
