"""``Dataset.snapshot`` (and ``load(reader_func=)``), case by case against TensorFlow 2.21.

The expected elements were recorded with TF 2.21 on a 2-core machine (its default reader
interleaves the shards with ``cycle_length=os.cpu_count()``; the tests fix that count at 2);
TensorFlow is not imported here. phalanx writes ``Dataset.save``'s format, not TF's
(docs/input_pipelines.md).
"""

import os

import numpy as np
import pytest

from phalanx.data import Dataset, TextLineDataset
from phalanx.errors import DatasetArgumentError, DatasetTypeError, IteratorStateError


@pytest.fixture(autouse=True)
def _two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def _ints(ds):
    return [int(x) for x in ds]


def _lines(path):
    return Dataset.from_tensor_slices([path]).flat_map(TextLineDataset)


def test_a_complete_pass_is_read_back_later(tmp_path):
    # TF: first [a, b, c]; the file rewritten as "x\ny": the snapshot still gives [a, b, c]
    f = tmp_path / "lines.txt"
    f.write_text("a\nb\nc\n")
    snap = os.fspath(tmp_path / "snap")
    assert list(_lines(os.fspath(f)).snapshot(snap)) == [b"a", b"b", b"c"]
    f.write_text("x\ny\n")
    assert list(_lines(os.fspath(f)).snapshot(snap)) == [b"a", b"b", b"c"]
    # TF: take(1) of a fresh snapshot then a full pass: [x] then [x, y] (nothing was finalized)
    other = snap + "z"
    assert list(_lines(os.fspath(f)).snapshot(other).take(1)) == [b"x"]
    f.write_text("p\nq\n")
    assert list(_lines(os.fspath(f)).snapshot(other)) == [b"p", b"q"]
    f.write_text("r\n")
    assert list(_lines(os.fspath(f)).snapshot(other)) == [b"p", b"q"]


def test_another_pipeline_at_the_same_path_has_its_own_snapshot(tmp_path):
    # TF: range(6).snapshot(p), then range(6).map(x * 2).snapshot(p): [0, 2, ..., 10]
    p = os.fspath(tmp_path / "p")
    assert _ints(Dataset.range(6).snapshot(p)) == list(range(6))
    assert _ints(Dataset.range(6).map(lambda x: x * 2).snapshot(p)) == [0, 2, 4, 6, 8, 10]
    assert len([d for d in os.listdir(p)]) == 2


def test_shard_func_and_the_default_reader(tmp_path):
    # TF: range(10).enumerate().snapshot(p, shard_func=lambda i, x: i % 3).map(lambda i, x: x):
    # write pass [0..9]; read pass [0, 1, 3, 4, 6, 7, 9, 2, 5, 8] (3 shard folders)
    p = os.fspath(tmp_path / "c")

    def build(**kw):
        snap = Dataset.range(10).enumerate().snapshot(p, shard_func=lambda i, x: i % 3, **kw)
        return snap.map(lambda i, x: x)

    assert _ints(build()) == list(range(10))
    assert _ints(build()) == [0, 1, 3, 4, 6, 7, 9, 2, 5, 8]
    # TF: reader_func=lambda dss: dss.flat_map(lambda x: x) -> [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    flat = build(reader_func=lambda datasets: datasets.flat_map(lambda x: x))
    assert _ints(flat) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    (fingerprint,) = os.listdir(p)
    (run,) = [d for d in os.listdir(os.path.join(p, fingerprint)) if d != "snapshot.json"]
    saved = sorted(os.listdir(os.path.join(p, fingerprint, run)))
    assert saved == ["dataset_spec.json", "shard_00000.npz", "shard_00001.npz", "shard_00002.npz"]
    # the run folder is a Dataset.save folder: load reads it, reader_func as TF's load
    assert _ints(Dataset.load(os.path.join(p, fingerprint, run)).map(lambda i, x: x)) == [
        0,
        3,
        6,
        9,
        1,
        4,
        7,
        2,
        5,
        8,
    ]
    loaded = Dataset.load(
        os.path.join(p, fingerprint, run),
        reader_func=lambda datasets: datasets.interleave(lambda x: x, cycle_length=2),
    )
    assert _ints(loaded.map(lambda i, x: x)) == [0, 1, 3, 4, 6, 7, 9, 2, 5, 8]


def test_the_reader_gets_a_dataset_of_the_shards(tmp_path):
    p = os.fspath(tmp_path / "d")
    ds = Dataset.range(6).snapshot(p, shard_func=lambda x: x % 2)
    _ints(ds)
    seen = {}

    def reader(datasets):
        seen["cardinality"] = datasets.cardinality()
        seen["spec"] = repr(datasets.element_spec)
        return datasets.shuffle(2, seed=0).interleave(lambda x: x)

    got = _ints(Dataset.range(6).snapshot(p, shard_func=lambda x: x % 2, reader_func=reader))
    assert sorted(got) == list(range(6))
    assert seen == {
        "cardinality": 2,
        "spec": "DatasetSpec(TensorSpec(shape=(), dtype=int64, name=None))",
    }


def test_default_sharding_keeps_the_order_and_compression_round_trips(tmp_path):
    # TF: range(100).snapshot(p) read back in order; GZIP, AUTO, None: [0, 1, 2] twice
    ds = Dataset.range(100).snapshot(os.fspath(tmp_path / "e"))
    _ints(ds)
    assert _ints(ds) == list(range(100))
    for c in ("GZIP", "AUTO", None, "NONE"):
        snap = (
            Dataset.range(3)
            .map(lambda x: (x, np.float32(x) / 2))
            .snapshot(os.fspath(tmp_path / f"comp{c}"), compression=c)
        )
        first, second = list(snap), list(snap)
        assert [(int(a), float(b)) for a, b in second] == [(0, 0.0), (1, 0.5), (2, 1.0)]
        assert [(int(a), float(b)) for a, b in first] == [(0, 0.0), (1, 0.5), (2, 1.0)]
        assert second[0][1].dtype == np.float32


def test_cardinality_and_spec_are_the_inputs(tmp_path):
    # TF: 10
    ds = Dataset.range(10).snapshot(os.fspath(tmp_path / "card"))
    assert ds.cardinality() == 10
    assert ds.element_spec == Dataset.range(10).element_spec


@pytest.mark.parametrize("reading", [False, True])
def test_checkpoints_resume_while_writing_and_reading(tmp_path, reading):
    # TF: after 3 elements, a checkpoint; the rest and the restored iterator: [3, ..., 9]
    ds = Dataset.range(10).shuffle(10, seed=4).snapshot(os.fspath(tmp_path / "ck"))
    if reading:
        _ints(ds)
    it = iter(ds)
    head = [int(next(it)) for _ in range(3)]
    state = it.get_state()
    rest = _ints(it)
    again = iter(ds)
    again.set_state(state)
    assert _ints(again) == rest
    assert sorted(head + rest) == list(range(10))
    # the written snapshot is the order of the writing pass
    assert _ints(ds) == head + rest


def test_a_restored_writing_pass_still_writes_the_snapshot(tmp_path):
    p = os.fspath(tmp_path / "w")
    ds = Dataset.range(5).snapshot(p)
    it = iter(ds)
    next(it)
    state = it.get_state()
    del it
    again = iter(ds)
    again.set_state(state)
    assert _ints(again) == [1, 2, 3, 4]
    assert _ints(ds) == [0, 1, 2, 3, 4]  # read from the snapshot the restored pass wrote
    assert len(os.listdir(p)) == 1


def test_bad_arguments_raise_naming_them(tmp_path):
    p = os.fspath(tmp_path / "bad")
    # TF 2.21 accepts any compression string; phalanx refuses what it cannot write
    for c in ("SNAPPY", "zip"):
        with pytest.raises(DatasetArgumentError, match="compression must be"):
            Dataset.range(3).snapshot(p, compression=c)
    with pytest.raises(DatasetTypeError, match="path must be a folder"):
        Dataset.range(3).snapshot(3)
    with pytest.raises(DatasetTypeError, match="shard_func must be a function"):
        Dataset.range(3).snapshot(p, shard_func=1)
    with pytest.raises(DatasetTypeError, match="reader_func must be a function"):
        Dataset.range(3).snapshot(p, reader_func="interleave")
    # TF: InvalidArgumentError "`shard_func` must return a scalar int64" (a negative shard);
    # TypeError for a float
    for bad in (lambda x: -1, lambda x: 1.5):
        with pytest.raises(DatasetTypeError, match="shard_func must return an int >= 0"):
            _ints(Dataset.range(3).snapshot(p, shard_func=bad))
    _ints(Dataset.range(3).snapshot(p))
    with pytest.raises(DatasetTypeError, match="reader_func must return a Dataset"):
        _ints(Dataset.range(3).snapshot(p, reader_func=lambda datasets: 0))
    with pytest.raises(DatasetTypeError, match="name must be a str"):
        Dataset.range(3).snapshot(p, name=5)
    it = iter(Dataset.range(3).snapshot(p))
    with pytest.raises(IteratorStateError, match="mode"):
        it.set_state({"mode": "elsewhere"})
