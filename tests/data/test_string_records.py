"""Records and lines as TensorFlow gives them: Python bytes, parseable, cacheable in a file."""

import numpy as np
import pytest

from phalanx.data import (
    FixedLenFeature,
    TextLineDataset,
    TFRecordDataset,
    TFRecordWriter,
    parse_example,
    serialize_example,
)

SPEC = {"x": FixedLenFeature([2], "float32"), "label": FixedLenFeature([], "int64")}


def _records(tmp_path, n=5):
    path = tmp_path / "data.tfrecord"
    with TFRecordWriter(str(path)) as w:
        for i in range(n):
            w.write(serialize_example({"x": np.array([i, -i], np.float32), "label": i}))
    return str(path)


def _lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"first line\nsecond\n\xc3\xa9t\xc3\xa9\x00zero\n")
    return str(path)


def test_as_numpy_iterator_yields_bytes_for_records_and_lines(tmp_path):
    records = list(TFRecordDataset(_records(tmp_path)).as_numpy_iterator())
    assert all(type(r) is bytes for r in records)
    assert records[0] == serialize_example({"x": np.array([0, 0], np.float32), "label": 0})
    lines = list(TextLineDataset(_lines(tmp_path)).as_numpy_iterator())
    assert lines == [b"first line", b"second", "été".encode() + b"\x00zero"]
    assert lines[2].decode().startswith("été")
    # Batches stay object arrays of bytes; numbers stay numpy.
    batch = next(TFRecordDataset(_records(tmp_path)).batch(2).as_numpy_iterator())
    assert batch.shape == (2,) and type(batch[0]) is bytes


def test_parse_example_accepts_any_sequence_of_records(tmp_path):
    path = _records(tmp_path)
    want = np.arange(5)
    as_bytes = list(TFRecordDataset(path).as_numpy_iterator())
    as_arrays = list(TFRecordDataset(path))  # 0-d object arrays, as iter() yields
    for records in (as_bytes, tuple(as_bytes), as_arrays, np.array(as_bytes, object)):
        parsed = parse_example(records, SPEC)
        np.testing.assert_array_equal(parsed["label"], want)
        np.testing.assert_array_equal(parsed["x"][:, 1], -want.astype(np.float32))
    with pytest.raises(TypeError, match=r"sequence of serialized Examples.*record 1 is int"):
        parse_example([as_bytes[0], 3], SPEC)


@pytest.mark.parametrize("source", ["tfrecord", "lines"])
def test_file_cache_stores_string_records(tmp_path, source):
    """TensorFlow caches TFRecord records and text lines in a file; so does phalanx."""
    if source == "tfrecord":
        ds = TFRecordDataset(_records(tmp_path))
    else:
        ds = TextLineDataset(_lines(tmp_path))
    want = list(ds.as_numpy_iterator())
    cached = ds.cache(str(tmp_path / "cache"))
    assert list(cached.as_numpy_iterator()) == want  # the pass that writes the file
    assert (tmp_path / "cache.npz").exists()
    again = (TFRecordDataset if source == "tfrecord" else TextLineDataset)("/nonexistent")
    assert list(again.cache(str(tmp_path / "cache")).as_numpy_iterator()) == want  # from the file
    batches = list(ds.cache(str(tmp_path / "cache")).batch(2).as_numpy_iterator())
    assert [r for b in batches for r in b] == want


def test_file_cache_still_refuses_other_objects(tmp_path):
    from phalanx.data import Dataset

    ds = Dataset.from_tensor_slices(np.array([None, 1], dtype=object))
    with pytest.raises(TypeError, match=r"holds a NoneType.*never pickles"):
        list(ds.cache(str(tmp_path / "c")))
