"""TFRecordDataset, TextLineDataset, FixedLengthRecordDataset on the Dataset engine."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from phalanx.data import (
    AutoShardPolicy,
    Dataset,
    FixedLenFeature,
    FixedLengthRecordDataset,
    TextLineDataset,
    TFRecordDataset,
    TFRecordWriter,
    VarLenFeature,
    auto_shard,
    parse_example,
    serialize_example,
)
from phalanx.errors import CorruptRecordError
from tests_support import TFRECORD_VECTORS as VECTORS


def _files(tmp_path, n_files=3, per_file=(4, 2, 5), compression=None):
    paths = []
    for f in range(n_files):
        path = tmp_path / f"part-{f}.tfrecord"
        with TFRecordWriter(path, compression) as w:
            for r in range(per_file[f]):
                w.write(b"f%d-r%d\x00" % (f, r))  # a trailing zero byte must survive
        paths.append(str(path))
    return paths


def _items(ds) -> list[bytes]:
    return [x.item() for x in ds]


def test_reads_files_in_order_as_object_scalars(tmp_path):
    paths = _files(tmp_path)
    ds = TFRecordDataset(paths)
    assert ds.element_spec.shape == () and ds.element_spec.dtype == object
    got = _items(ds)
    assert got == [b"f%d-r%d\x00" % (f, r) for f, n in enumerate((4, 2, 5)) for r in range(n)]
    batch = next(iter(ds.batch(3)))
    assert batch.dtype == object and batch.tolist() == got[:3]


def _interleaved(per_file, cycle):
    """tf.data's interleave order (block_length=1) over files of the given lengths."""
    pending = list(range(len(per_file)))
    slots, out, taken = [None] * cycle, [], [0] * len(per_file)
    i = 0
    while pending or any(s is not None for s in slots):
        if slots[i] is None and pending:
            slots[i] = pending.pop(0)
        f = slots[i]
        if f is not None:
            if taken[f] < per_file[f]:
                out.append(b"f%d-r%d\x00" % (f, taken[f]))
                taken[f] += 1
                i = (i + 1) % cycle
                continue
            slots[i] = None  # exhausted: free the slot and move on, as TensorFlow
        i = (i + 1) % cycle
    return out


def test_num_parallel_reads_interleaves_like_tf_data(tmp_path):
    paths = _files(tmp_path)
    want = _interleaved((4, 2, 5), 2)
    assert _items(TFRecordDataset(paths, num_parallel_reads=2)) == want
    names = Dataset.from_tensor_slices(np.array(paths, dtype=object).astype(bytes))
    assert _items(TFRecordDataset(names, num_parallel_reads=2)) == want
    assert _items(TFRecordDataset(names)) == _items(TFRecordDataset(paths))
    listed = Dataset.list_files(str(tmp_path / "part-*.tfrecord"), shuffle=False)
    assert _items(listed.interleave(TFRecordDataset, cycle_length=2, block_length=1)) == want


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_checkpoint_resumes_at_every_record(tmp_path, compression):
    paths = _files(tmp_path, compression=compression)
    for ds in (
        TFRecordDataset(paths, compression),
        TFRecordDataset(paths, compression, num_parallel_reads=2),
    ):
        full = _items(ds)
        for k in range(len(full) + 1):
            it = iter(ds)
            head = [next(it).item() for _ in range(k)]
            state = json.loads(json.dumps(it.get_state()))
            fresh = iter(ds)
            fresh.set_state(state)
            assert head + [x.item() for x in fresh] == full, k


def test_batch_then_parse_example_pipeline(tmp_path):
    path = tmp_path / "ex.tfrecord"
    with TFRecordWriter(path) as w:
        for i in range(10):
            w.write(serialize_example({"x": np.float32([i, 0.0]), "ids": np.arange(i % 3)}))
    spec = {"x": FixedLenFeature([2], np.float32), "ids": VarLenFeature(np.int64)}
    ds = TFRecordDataset(str(path)).batch(4).map(lambda b: parse_example(b, spec)).prefetch(2)
    batches = list(ds)
    assert [b["x"].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0]["x"][:, 0].tolist() == [0, 1, 2, 3]
    assert batches[2]["ids"].to_ragged().to_list() == [[0, 1], []]


def test_file_auto_shard_splits_files(tmp_path):
    paths = _files(tmp_path)
    ds = Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False).interleave(
        TFRecordDataset, cycle_length=2, block_length=1
    )
    shares = []
    for i in range(2):
        mine, used, _ = auto_shard(ds, 2, i, AutoShardPolicy.FILE)
        assert used == AutoShardPolicy.FILE
        shares.append(set(_items(mine)))
    assert shares[0].isdisjoint(shares[1]) and shares[0] | shares[1] == set(
        _items(TFRecordDataset(paths))
    )
    direct, used, _ = auto_shard(TFRecordDataset(paths), 3, 1, AutoShardPolicy.FILE)
    assert used == AutoShardPolicy.FILE and _items(direct) == [b"f1-r0\x00", b"f1-r1\x00"]


def test_corrupt_records_raise_or_are_skipped(tmp_path, caplog):
    (path,) = _files(tmp_path, n_files=1, per_file=(3,))
    data = bytearray(Path(path).read_bytes())
    data[16 + 6 + 12] ^= 0xFF  # the data of record 1 (records are 6 bytes)
    Path(path).write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="record 1 at byte offset 22"):
        list(TFRecordDataset(path))
    with caplog.at_level(logging.WARNING, logger="phalanx.data"):
        assert _items(TFRecordDataset(path, skip_corrupt=True)) == [b"f0-r0\x00", b"f0-r2\x00"]
    assert "skipped 1 damaged records" in caplog.text


def test_tensorflow_vectors_through_datasets():
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    for v in manifest["vectors"]:
        path = str(VECTORS / v["file"])
        if v["kind"] == "raw":
            want = [base64.b64decode(r) for r in v["records_b64"]]
            assert _items(TFRecordDataset(path, v["compression"])) == want
        elif v["kind"] == "text_lines":
            assert [x.decode() for x in _items(TextLineDataset(path))] == v["lines"]
        elif v["kind"] == "fixed_length":
            ds = FixedLengthRecordDataset(
                path, v["record_bytes"], v["header_bytes"], v["footer_bytes"]
            )
            assert _items(ds) == [base64.b64decode(r) for r in v["records_b64"]]


def test_text_and_fixed_length_checkpoints(tmp_path):
    text = tmp_path / "a.txt"
    text.write_bytes(b"one\r\ntwo\n\nfour")
    fixed = tmp_path / "f.bin"
    fixed.write_bytes(b"HH" + bytes(range(12)) + b"F")
    for ds in (
        TextLineDataset([str(text), str(text)]),
        FixedLengthRecordDataset(str(fixed), 3, 2, 1),
    ):
        full = _items(ds)
        for k in range(len(full) + 1):
            it = iter(ds)
            head = [next(it).item() for _ in range(k)]
            fresh = iter(ds)
            fresh.set_state(it.get_state())
            assert head + [x.item() for x in fresh] == full
    assert _items(TextLineDataset(str(text))) == [b"one", b"two", b"", b"four"]
