"""Strings keep every byte, and a cache yields what it was fed (as a tf.string does).

numpy's fixed-width ``'S'`` dtype drops trailing zero bytes, so a serialized
``Example`` whose last field is ``0`` lost its last byte when given to
``from_tensor_slices`` as a list of bytes, and ``parse_example`` refused it.
"""

import numpy as np
import pytest

import phalanx as px
from phalanx.data import Dataset, FixedLenFeature, TFRecordDataset, TFRecordWriter

RECORDS = [b"a\x00", b"\x00b\x00\x00", b"c"]


def _bytes(x):
    return x.item() if isinstance(x, np.ndarray) else bytes(x)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Dataset.from_tensor_slices(RECORDS),
        lambda: Dataset.from_tensor_slices(np.array(RECORDS, dtype=object)).map(lambda s: s),
        lambda: Dataset.from_tensor_slices(RECORDS).filter(lambda s: True),
    ],
    ids=["list", "map", "filter"],
)
def test_trailing_zero_bytes_survive_elements_and_batches(build):
    assert [_bytes(x) for x in build()] == RECORDS
    (batch,) = list(build().batch(3))
    assert batch.dtype == object and list(batch) == RECORDS


def test_unicode_strings_become_utf8_bytes():
    (batch,) = list(Dataset.from_tensor_slices(["é", "b"]).batch(2))
    assert list(batch) == ["é".encode(), b"b"]


@pytest.mark.parametrize("on_file", [False, True], ids=["memory", "file"])
def test_a_cache_yields_what_it_was_fed(tmp_path, on_file):
    path = str(tmp_path / "r.tfrecord")
    with TFRecordWriter(path) as w:
        for r in RECORDS:
            w.write(r)
    ds = (
        TFRecordDataset(path)
        .map(lambda r: (r, np.float32(1.0)))
        .cache(str(tmp_path / "cache") if on_file else "")
    )
    epochs = [list(ds) for _ in range(3)]
    for epoch in epochs:
        assert [_bytes(r) for r, _ in epoch] == RECORDS
        assert [(type(r), r.shape, type(f), np.shape(f)) for r, f in epoch] == [
            (type(r), r.shape, type(f), np.shape(f)) for r, f in epochs[0]
        ]


def test_parse_example_of_serialized_examples_given_as_a_list():
    serialized = [px.data.serialize_example({"x": [1.5], "y": [0]}) for _ in range(2)]
    assert serialized[0].endswith(b"\x00")
    spec = {"x": FixedLenFeature([1], "float32"), "y": FixedLenFeature([1], "int64")}
    (out,) = list(
        Dataset.from_tensor_slices(serialized)
        .batch(2)
        .map(lambda b: px.data.parse_example(b, spec))
    )
    np.testing.assert_array_equal(out["x"], [[1.5], [1.5]])
    np.testing.assert_array_equal(out["y"], [[0], [0]])
