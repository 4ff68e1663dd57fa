"""Every vector TensorFlow 2.21 wrote in tests/data/tf_vectors is read as manifest.json says."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest

from phalanx.errors import CorruptRecordError, DataLossError, TruncatedRecordError
from phalanx.io._example import BytesList, Example, Feature, FloatList, Int64List
from phalanx.io._lines_and_records import FixedLengthRecordReader, TextLineReader
from phalanx.io._parse_example import (
    FixedLenFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from phalanx.io._tfrecord import TFRecordReader, TFRecordWriter
from tests_support import TFRECORD_VECTORS as VECTORS


def _manifest() -> dict:
    return json.loads((VECTORS / "manifest.json").read_text())


def _vectors(kind: str) -> list[dict]:
    return [v for v in _manifest()["vectors"] if v["kind"] == kind]


def _b64(items: list[str]) -> list[bytes]:
    return [base64.b64decode(x) for x in items]


def _float(x) -> float:
    return float(x)  # also "nan", "inf", "-inf", as the manifest writes them


def test_manifest_kinds_are_all_covered():
    kinds = {v["kind"] for v in _manifest()["vectors"]}
    assert kinds <= {"raw", "examples", "damaged", "text_lines", "fixed_length"}


@pytest.mark.parametrize("vector", _vectors("raw"), ids=lambda v: v["file"])
def test_raw_records_in_every_compression(vector):
    want = _b64(vector["records_b64"])
    got = list(TFRecordReader(VECTORS / vector["file"], vector["compression"]))
    assert got == want


@pytest.mark.parametrize("vector", _vectors("raw"), ids=lambda v: v["file"])
def test_writer_is_byte_identical_to_tensorflow(vector, tmp_path):
    out = tmp_path / "out.tfrecord"
    with TFRecordWriter(out, vector["compression"]) as w:
        for record in _b64(vector["records_b64"]):
            w.write(record)
    assert out.read_bytes() == (VECTORS / vector["file"]).read_bytes()


def _feature(spec: dict) -> Feature:
    if spec["kind"] is None:
        return Feature()
    if spec["kind"] == "bytes":
        return Feature(bytes_list=BytesList(_b64(spec["values_b64"])))
    if spec["kind"] == "float":
        return Feature(float_list=FloatList([_float(v) for v in spec["values"]]))
    return Feature(int64_list=Int64List(spec["values"]))


def _same_floats(got: np.ndarray, want: list) -> bool:
    want = np.array([_float(v) for v in want], np.float32)
    return np.array_equal(got.view(np.uint32), want.view(np.uint32)) or all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want, strict=True)
    )


@pytest.fixture(scope="module")
def examples_vector():
    (vector,) = _vectors("examples")
    records = list(TFRecordReader(VECTORS / vector["file"], vector["compression"]))
    assert len(records) == len(vector["examples"])
    return vector, records


def test_examples_decode_to_the_manifest_values(examples_vector):
    vector, records = examples_vector
    for record, want in zip(records, vector["examples"], strict=True):
        features = Example.FromString(record).features.feature
        assert set(features) == set(want)
        for name, spec in want.items():
            f = features[name]
            assert f.kind == (None if spec["kind"] is None else f"{spec['kind']}_list")
            if spec["kind"] == "float":
                assert _same_floats(f.value, spec["values"]), name
            elif spec["kind"] == "int64":
                assert f.value.dtype == np.int64 and f.value.tolist() == spec["values"]
            elif spec["kind"] == "bytes":
                assert f.value == _b64(spec["values_b64"])


def test_examples_encode_to_tensorflow_bytes(examples_vector):
    # TensorFlow wrote each map in its protobuf runtime's order, which is the
    # reverse of the manifest's key order; encoding that order gives its bytes.
    vector, records = examples_vector
    for record, want in zip(records, vector["examples"], strict=True):
        example = Example({name: _feature(want[name]) for name in reversed(list(want))})
        assert example.SerializeToString() == record
        assert Example.FromString(record).SerializeToString() == record


def _spec(manifest_spec: dict) -> dict:
    out = {}
    for name, s in manifest_spec.items():
        if s["type"] == "FixedLenFeature":
            out[name] = FixedLenFeature(s["shape"], s["dtype"], s.get("default_value"))
        else:
            assert s["type"] == "VarLenFeature"
            out[name] = VarLenFeature(s["dtype"])
    return out


def _check_parse_result(out: dict, want: dict, rows: list[int]) -> None:
    for name, value in want.items():
        if name.endswith("_b64"):
            got = out[name[: -len("_b64")]]
            assert got.dtype == object
            assert got.tolist() == [_b64(want[name][r]) for r in rows]
        elif isinstance(value, dict):
            st = out[name]
            entries = list(zip(value["indices"], value["values"], strict=True))
            indices = [[k, j] for k, r in enumerate(rows) for (i, j), _ in entries if i == r]
            values = [v for r in rows for (i, _), v in entries if i == r]
            assert st.indices.dtype == np.int64 and st.indices.tolist() == indices
            assert st.values.tolist() == values
            if rows == list(range(len(rows))) and len(rows) == value["dense_shape"][0]:
                assert st.dense_shape.tolist() == value["dense_shape"]
        else:
            got = out[name]
            expected = np.array([value[r] for r in rows], dtype=got.dtype)
            assert got.shape == expected.shape and np.array_equal(got, expected), name


def test_parse_example_matches_tensorflow(examples_vector):
    vector, records = examples_vector
    spec = _spec(vector["parse_example"]["spec"])
    out = parse_example(records, spec)
    _check_parse_result(out, vector["parse_example"]["result"], list(range(len(records))))
    assert out["image"].dtype == np.float32 and out["label"].dtype == np.int64


@pytest.mark.parametrize("rows", [[0, 0, 0], [1, 3, 5], [0, 2, 4], [5]])
def test_parse_example_on_sub_batches(examples_vector, rows):
    # Same-layout batches take the vectorized path; mixed ones the general one.
    vector, records = examples_vector
    spec = _spec(vector["parse_example"]["spec"])
    out = parse_example([records[r] for r in rows], spec)
    _check_parse_result(out, vector["parse_example"]["result"], rows)


def test_parse_single_example_matches_each_row(examples_vector):
    vector, records = examples_vector
    spec = _spec(vector["parse_example"]["spec"])
    want = vector["parse_example"]["result"]
    for r, record in enumerate(records):
        out = parse_single_example(record, spec)
        assert np.array_equal(out["image"], np.float32(want["image"][r]))
        assert out["label"] == want["label"][r] and out["label"].shape == ()
        assert out["missing_with_default"].tolist() == want["missing_with_default"][r]
        row_values = [
            v
            for (i, _), v in zip(want["big"]["indices"], want["big"]["values"], strict=True)
            if i == r
        ]
        assert out["big"].values.tolist() == row_values
        assert out["big"].dense_shape.tolist() == [len(row_values)]


def test_special_floats_survive(examples_vector):
    vector, records = examples_vector
    special = [i for i, e in enumerate(vector["examples"]) if "special" in e]
    for i in special:
        got = parse_single_example(records[i], {"special": VarLenFeature("float32")})
        assert _same_floats(got["special"].values, vector["examples"][i]["special"]["values"])


@pytest.mark.parametrize("vector", _vectors("damaged"), ids=lambda v: v["file"])
def test_damaged_files_raise_after_the_good_records(vector):
    path = VECTORS / vector["file"]
    got = []
    with pytest.raises(DataLossError, match=vector["file"]) as info:
        for record in TFRecordReader(path):
            got.append(record)
    assert len(got) == vector["tensorflow_records_before_error"]
    expected = (
        TruncatedRecordError if "truncated" in vector["tensorflow_error"] else CorruptRecordError
    )
    assert isinstance(info.value, expected)
    # TensorFlow's message names the byte offset too ("corrupted record at 68",
    # the data of the record at 56; "truncated record at 66151").
    tf_offset = int(vector["tensorflow_error"].split(" record at ")[1].split("'")[0].split()[0])
    assert str(tf_offset) in str(info.value)


@pytest.mark.parametrize("vector", _vectors("damaged"), ids=lambda v: v["file"])
def test_damaged_files_can_be_skipped(vector):
    reader = TFRecordReader(VECTORS / vector["file"], skip_corrupt=True)
    got = list(reader)
    assert reader.corrupt_count == 1 and len(reader.damaged) == 1
    assert len(got) >= vector["tensorflow_records_before_error"]


@pytest.mark.parametrize("vector", _vectors("text_lines"), ids=lambda v: v["file"])
def test_text_lines(vector):
    got = [line.decode("utf-8") for line in TextLineReader(VECTORS / vector["file"])]
    assert got == vector["lines"]


@pytest.mark.parametrize("vector", _vectors("fixed_length"), ids=lambda v: v["file"])
def test_fixed_length_records(vector):
    reader = FixedLengthRecordReader(
        VECTORS / vector["file"],
        vector["record_bytes"],
        header_bytes=vector["header_bytes"],
        footer_bytes=vector["footer_bytes"],
    )
    assert list(reader) == _b64(vector["records_b64"])
