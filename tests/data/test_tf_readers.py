"""``experimental.make_tf_record_dataset`` and ``experimental.parse_example_dataset``.

Expected batches and element specs are what TensorFlow 2.21 gives for the same files and
arguments (``tensorflow.python.data.experimental.ops.readers.make_tf_record_dataset``: TF
2.21 no longer exports it as ``tf.data.experimental``; ``tf.data.experimental.
parse_example_dataset``), recorded by running it; TF is not a test dependency.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from phalanx.data import (
    AUTOTUNE,
    Dataset,
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RaggedTensorSpec,
    SparseFeature,
    SparseTensorSpec,
    TensorSpec,
    TFRecordWriter,
    VarLenFeature,
    serialize_example,
)
from phalanx.data.experimental import make_tf_record_dataset, parse_example_dataset
from phalanx.errors import DatasetArgumentError, DatasetTypeError

STRINGS = TensorSpec((None,), object)


@pytest.fixture
def pattern(tmp_path):
    for name in "ab":
        with TFRecordWriter(str(tmp_path / f"{name}.tfrecord")) as w:
            for i in range(3):
                w.write(f"{name}{i}".encode())
    return str(tmp_path / "*.tfrecord")


def batches(ds, n=None):
    out = []
    for b in ds:
        out.append(b.tolist())
        if n is not None and len(out) == n:
            break
    return out


A0B0A1B1 = [b"a0", b"b0", b"a1", b"b1"]


def test_one_epoch_in_order_as_tf(pattern):
    ds = make_tf_record_dataset(pattern, 2, num_epochs=1, shuffle=False)
    assert ds.element_spec == STRINGS
    assert batches(ds) == [[b"a0", b"b0"], [b"a1", b"b1"], [b"a2", b"b2"]]
    ds = make_tf_record_dataset(pattern, 4, num_epochs=1, shuffle=False)
    assert batches(ds) == [A0B0A1B1, [b"a2", b"b2"]]
    ds = make_tf_record_dataset(pattern, 4, num_epochs=1, shuffle=False, drop_final_batch=True)
    assert ds.element_spec == TensorSpec((4,), object) and batches(ds) == [A0B0A1B1]


def test_forever_drops_the_final_batch_and_epochs_repeat_as_tf(pattern):
    ds = make_tf_record_dataset(pattern, 4, shuffle=False)  # num_epochs=None: forever
    assert ds.element_spec == TensorSpec((4,), object)
    third = [b"a1", b"b1", b"a2", b"b2"]
    assert batches(ds, 3) == [A0B0A1B1, [b"a2", b"b2", b"a0", b"b0"], third]
    ds = make_tf_record_dataset(pattern, 4, num_epochs=2, shuffle=False)
    assert ds.element_spec == STRINGS
    assert batches(ds) == [A0B0A1B1, [b"a2", b"b2", b"a0", b"b0"], third]


def test_reads_parser_prefetch_and_file_lists_as_tf(tmp_path, pattern):
    ds = make_tf_record_dataset(pattern, 4, num_epochs=1, shuffle=False, num_parallel_reads=1)
    assert batches(ds) == [[b"a0", b"a1", b"a2", b"b0"], [b"b1", b"b2"]]
    ds = make_tf_record_dataset(
        pattern, 4, num_epochs=1, shuffle=False, parser_fn=lambda r: np.int32(len(r.item()) * 10)
    )
    assert ds.element_spec == TensorSpec((None,), np.int32)
    assert batches(ds) == [[20, 20, 20, 20], [20, 20]]
    ds = make_tf_record_dataset(pattern, 4, num_epochs=1, shuffle=False, prefetch_buffer_size=0)
    assert type(ds).__name__ == "BatchDataset" and batches(ds) == [A0B0A1B1, [b"a2", b"b2"]]
    assert type(make_tf_record_dataset(pattern, 4, num_epochs=1)).__name__ == "PrefetchDataset"
    files = [str(tmp_path / "b.tfrecord"), str(tmp_path / "a.tfrecord")]
    ds = make_tf_record_dataset(files, 6, num_epochs=1, shuffle=False)  # list_files sorts
    assert batches(ds) == [[b"a0", b"b0", b"a1", b"b1", b"a2", b"b2"]]


def test_shuffled_reads_every_record_once(pattern):
    # TF's shuffle order is not phalanx's (docs/input_pipelines.md); the records are the same
    ds = make_tf_record_dataset(pattern, 6, num_epochs=1, shuffle_seed=3)
    (batch,) = batches(ds)
    assert sorted(batch) == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2"]
    again = make_tf_record_dataset(pattern, 6, num_epochs=1, shuffle_seed=3)
    assert batches(again) == [batch]  # a seed fixes the order


def test_make_tf_record_dataset_refusals(tmp_path, pattern):
    # TF: InvalidArgumentError "No files matched pattern: .../zz*"
    with pytest.raises(DatasetArgumentError, match="no files matched pattern"):
        make_tf_record_dataset(str(tmp_path / "zz*"), 4)
    # TF: InvalidArgumentError "Batch size must be greater than zero."
    with pytest.raises(DatasetArgumentError, match="batch_size must be a positive int, got 0"):
        make_tf_record_dataset(pattern, 0, num_epochs=1)
    with pytest.raises(DatasetTypeError, match="shuffle must be a bool"):
        make_tf_record_dataset(pattern, 2, shuffle="yes")
    with pytest.raises(DatasetTypeError, match="parser_fn must be a function"):
        make_tf_record_dataset(pattern, 2, parser_fn=3)


def _records():
    return [
        serialize_example(
            {
                "x": np.float32([i]),
                "v": np.arange(i, dtype=np.int64),
                "w": np.arange(i, 2 * i, dtype=np.int64),
                "ix": np.array([i]),
                "val": np.float32([i + 0.5]),
            }
        )
        for i in range(3)
    ]


FEATURES = {
    "x": FixedLenFeature([1], "float32"),
    "v": VarLenFeature("int64"),
    "r": RaggedFeature("int64", value_key="w"),
    "s": SparseFeature("ix", "val", "float32", 5),
}


def _dump(batch):
    out = {}
    for k, v in sorted(batch.items()):
        if hasattr(v, "dense_shape"):
            out[k] = (v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist())
        elif hasattr(v, "row_splits"):
            out[k] = (v.to_list(), v.row_splits.dtype.name)
        else:
            out[k] = v.tolist()
    return out


FIRST = {
    "r": ([[], [1]], "int32"),
    "s": ([[0, 0], [1, 1]], [0.5, 1.5], [2, 5]),
    "v": ([[1, 0]], [0], [2, 1]),
    "x": [[0.0], [1.0]],
}


@pytest.mark.parametrize("drop", [False, True])
def test_parse_example_dataset_values_and_spec_as_tf(drop):
    ds = Dataset.from_tensor_slices(np.array(_records(), object)).batch(2, drop_remainder=drop)
    out = ds.apply(parse_example_dataset(FEATURES))
    b = 2 if drop else None
    assert out.element_spec == {
        "r": RaggedTensorSpec((b, None), np.int64, 1, np.int32),
        "s": SparseTensorSpec((b, 5), np.float32),
        "v": SparseTensorSpec((b, None), np.int64),
        "x": TensorSpec((b, 1), np.float32),
    }
    second = {
        "r": ([[2, 3]], "int32"),
        "s": ([[0, 2]], [2.5], [1, 5]),
        "v": ([[0, 0], [0, 1]], [0, 1], [1, 2]),
        "x": [[2.0]],
    }
    assert [_dump(x) for x in out] == ([FIRST] if drop else [FIRST, second])


def test_parse_example_dataset_parallel_and_matrix_input_as_tf():
    recs = np.array(_records(), object)
    ds = Dataset.from_tensor_slices(recs).batch(2)
    out = ds.apply(
        parse_example_dataset({"x": FEATURES["x"]}, num_parallel_calls=2, deterministic=False)
    )
    assert out.element_spec == {"x": TensorSpec((None, 1), np.float32)}
    assert [b["x"].tolist() for b in out] == [[[0.0], [1.0]], [[2.0]]]
    rows = Dataset.from_tensor_slices(recs[None, :2])  # elements of shape (2,)
    out = rows.apply(parse_example_dataset({"x": FEATURES["x"]}, num_parallel_calls=AUTOTUNE))
    assert out.element_spec == {"x": TensorSpec((2, 1), np.float32)}
    assert [b["x"].tolist() for b in out] == [[[0.0], [1.0]]]


def test_parse_example_dataset_refusals_as_tf():
    recs = np.array(_records(), object)
    # TF: TypeError "Input dataset should be a dataset of vectors of strings. Instead it is
    # `TensorSpec(shape=(), dtype=tf.string, name=None)`."
    with pytest.raises(TypeError, match="Input dataset should be a dataset of vectors of strings"):
        Dataset.from_tensor_slices(recs).apply(parse_example_dataset(FEATURES))
    with pytest.raises(
        TypeError,
        match=r"vectors of strings. Instead it is `TensorSpec\(shape=\(None,\), dtype=int64",
    ):
        Dataset.range(3).batch(2).apply(parse_example_dataset(FEATURES))
    # TF: ValueError "Argument `features` is required, but not specified."
    with pytest.raises(ValueError, match="Argument `features` is required, but not specified"):
        parse_example_dataset(None)
    # TF: ValueError "Unsupported int 3 for key 'x'"
    with pytest.raises(ValueError, match="Unsupported int 3 for key 'x'"):
        parse_example_dataset({"x": 3})
    with pytest.raises(DatasetTypeError, match="transforms a phalanx.data.Dataset"):
        parse_example_dataset(FEATURES)(recs)


def test_make_tf_record_dataset_with_parse_example_dataset(pattern, tmp_path):
    path = str(tmp_path / "ex.tfrecord")
    with TFRecordWriter(path) as w:
        for r in _records():
            w.write(r)
    ds = make_tf_record_dataset(path, 2, num_epochs=1, shuffle=False)
    out = ds.apply(parse_example_dataset(FEATURES))
    assert next(_dump(x) for x in out) == FIRST
    assert os.path.exists(path)


def test_parse_example_dataset_specs_of_partitions_sequences_and_strings_as_tf():
    R = RaggedFeature
    ds = Dataset.from_tensor_slices(np.array([b""], object)).batch(1)
    cases = [  # TF 2.21's element_spec for each
        (
            R("int64", value_key="v", partitions=[R.RowLengths("l"), R.UniformRowLength(2)]),
            RaggedTensorSpec((None, None, None, 2), np.int64, 2, np.int32),
        ),
        (
            R("int64", value_key="v", partitions=[R.UniformRowLength(3), R.RowLengths("l")]),
            RaggedTensorSpec((None, None, 3, None), np.int64, 3, np.int32),
        ),
        (
            R("float32", value_key="v", partitions=[R.RowSplits("l")], row_splits_dtype="int64"),
            RaggedTensorSpec((None, None, None), np.float32, 2, np.int64),
        ),
        (
            FixedLenSequenceFeature([2], "float32", allow_missing=True),
            TensorSpec((None, None, 2), np.float32),
        ),
        (
            SparseFeature(["a", "b"], "v", "float32", [4, 5]),
            SparseTensorSpec((None, 4, 5), np.float32),
        ),
        (VarLenFeature("string"), SparseTensorSpec((None, None), object)),
    ]
    for feature, expected in cases:
        assert ds.apply(parse_example_dataset({"f": feature})).element_spec == {"f": expected}
