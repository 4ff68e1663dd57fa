"""Records in blocks (``_record_blocks.py``): the same elements, order and states as one by one.

``list_files -> interleave(TFRecordDataset) -> shuffle -> batch`` reads,
interleaves, shuffles and batches whole blocks of records; iterating the same
pipeline element by element (no ``batch``) takes the record-by-record path.
Both must give the same records in the same order, each exactly once, and the
same iterator states, so a checkpoint taken mid-block resumes exactly.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from phalanx.data import (
    Dataset,
    FixedLenFeature,
    TextLineDataset,
    TFRecordDataset,
    TFRecordWriter,
    _record_datasets,
    parse_example,
    serialize_example,
)
from phalanx.errors import CorruptRecordError, IteratorStateError
from phalanx.io import _tfrecord as _tfrecord_io

# records per file: an empty file, short and long ones, so slots end at different times
PER_FILE = (40, 0, 7, 93, 61)


def _write(tmp_path, per_file=PER_FILE, fixed=False, compression=None, seed=0):
    """Files ``part-<f>.tfrecord``; records ``f<f>-r<r>`` padded to a random (or fixed) length."""
    rng = random.Random(seed)
    every = []
    for f, n in enumerate(per_file):
        with TFRecordWriter(tmp_path / f"part-{f}.tfrecord", compression) as w:
            for r in range(n):
                pad = 20 if fixed else rng.randrange(0, 60)
                record = (b"f%02d-r%03d" % (f, r)).ljust(8 + pad, b"\x00")  # trailing zeros kept
                w.write(record)
                every.append(record)
    return str(tmp_path / "part-*.tfrecord"), every


def _pipeline(pattern, cycle=3, block=1, buffer=17, compression=None, shuffle=True):
    files = Dataset.list_files(pattern, shuffle=True, seed=4)
    ds = files.interleave(
        lambda name: TFRecordDataset(name, compression), cycle_length=cycle, block_length=block
    )
    return ds.shuffle(buffer, seed=9) if shuffle else ds


def _one_by_one(ds) -> list[bytes]:
    return [x if isinstance(x, bytes) else x.item() for x in ds]


def _batched(ds, size, drop=False) -> list[bytes]:
    out = []
    for batch in ds.batch(size, drop_remainder=drop):
        assert batch.dtype == object and batch.ndim == 1
        out.extend(batch.tolist())
    return out


@pytest.fixture
def small_chunks(monkeypatch):
    """Reads of 200 bytes: a file is many blocks, and records straddle the reads."""
    monkeypatch.setattr(_tfrecord_io, "_MIN_CHUNK", 200)


@pytest.fixture
def records_one_by_one(monkeypatch):
    """Counts the records that the file reader handed out one by one (``__next__``)."""
    count = [0]
    one = _record_datasets._RecordFileIterator.__next__

    def counted(self):
        count[0] += 1
        return one(self)

    monkeypatch.setattr(_record_datasets._RecordFileIterator, "__next__", counted)
    return count


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("cycle,block", [(1, 1), (3, 1), (4, 1), (3, 2), (2, 5), (8, 1)])
@pytest.mark.parametrize("buffer", [1, 17, 1000])
def test_blocks_give_the_one_by_one_order(
    tmp_path, small_chunks, records_one_by_one, fixed, cycle, block, buffer
):
    pattern, every = _write(tmp_path, fixed=fixed)
    want = _one_by_one(_pipeline(pattern, cycle, block, buffer))
    assert sorted(want) == sorted(every)  # each record exactly once
    assert records_one_by_one[0] >= len(every)  # the probe counts (and each file's end)
    for size in (1, 5, 64, 1000):
        records_one_by_one[0] = 0
        got = _batched(_pipeline(pattern, cycle, block, buffer), size)
        assert got == want, (size, cycle, block, buffer)
        assert records_one_by_one[0] == 0  # batch took every record in blocks
    dropped = _batched(_pipeline(pattern, cycle, block, buffer), 64, drop=True)
    assert dropped == want[: len(want) // 64 * 64]


def test_interleave_alone_in_blocks(tmp_path, small_chunks):
    pattern, _ = _write(tmp_path)
    for cycle, block in [(3, 1), (4, 2)]:
        want = _one_by_one(_pipeline(pattern, cycle, block, shuffle=False))
        assert _batched(_pipeline(pattern, cycle, block, shuffle=False), 50) == want


def test_full_size_reads_of_fixed_length_records(tmp_path):
    """The bench's shape: 4 files of fixed-length records, several 4 MiB reads each."""
    record = 3000
    for f in range(4):
        with TFRecordWriter(tmp_path / f"train-{f}.tfrecord") as w:
            for r in range(1500 + 37 * f):
                w.write((b"%d-%d|" % (f, r)).ljust(record, b"\x01"))
    pattern = str(tmp_path / "train-*.tfrecord")
    want = _one_by_one(_pipeline(pattern, cycle=4, buffer=1000))
    assert len(set(want)) == len(want) == sum(1500 + 37 * f for f in range(4))
    assert _batched(_pipeline(pattern, cycle=4, buffer=1000), 1024) == want


def test_gzip_files(tmp_path, small_chunks):
    pattern, every = _write(tmp_path, compression="GZIP")
    want = _one_by_one(_pipeline(pattern, compression="GZIP"))
    assert sorted(want) == sorted(every)
    assert _batched(_pipeline(pattern, compression="GZIP"), 16) == want


def test_text_lines_in_blocks(tmp_path):
    lines = []
    for f, n in enumerate((300, 0, 650, 20)):
        rows = [f"file{f} line{r}" for r in range(n)]
        (tmp_path / f"t{f}.txt").write_text("".join(r + "\n" for r in rows))
        lines += rows

    def make():
        files = Dataset.list_files(str(tmp_path / "t*.txt"), shuffle=False)
        return files.interleave(TextLineDataset, cycle_length=3).shuffle(100, seed=2)

    want = _one_by_one(make())
    assert sorted(w.decode() for w in want) == sorted(lines)
    assert _batched(make(), 128) == want


def test_epochs_reshuffle_the_same_way(tmp_path, small_chunks):
    pattern, _ = _write(tmp_path)
    want = _one_by_one(_pipeline(pattern).repeat(3))
    got = _batched(_pipeline(pattern).repeat(3), 33)
    assert got == want
    n = sum(PER_FILE)
    assert want[:n] != want[n : 2 * n] and sorted(want[:n]) == sorted(want[n : 2 * n])


@pytest.mark.parametrize("size,stops", [(7, (1, 5, 11, 25)), (64, (1, 2, 3))])
def test_state_mid_block_resumes_exactly(tmp_path, small_chunks, size, stops):
    pattern, _ = _write(tmp_path)
    want = _batched(_pipeline(pattern), size)
    for stop in stops:
        it = iter(_pipeline(pattern).batch(size))
        head = [r for _ in range(stop) for r in next(it).tolist()]
        state = it.get_state()
        rest = [r for b in it for r in b.tolist()]
        fresh = iter(_pipeline(pattern).batch(size))
        fresh.set_state(state)
        again = [r for b in fresh for r in b.tolist()]
        assert again == rest
        assert head + rest == want


def test_states_match_the_one_by_one_path(tmp_path, small_chunks):
    """After the same elements, the batch's input state is the one-by-one iterator's state,
    so a checkpoint taken on one path restores on the other."""
    pattern, _ = _write(tmp_path)
    size = 9
    one = iter(_pipeline(pattern))
    batched = iter(_pipeline(pattern).batch(size))
    for _ in range(12):
        for _ in range(size):
            next(one)
        next(batched)
        assert batched.get_state()["node"]["child"] == one.get_state()["node"]
    # restore the one-by-one position into a batched pipeline's input: same continuation
    state = one.get_state()
    rest = _one_by_one(one)
    resumed = iter(_pipeline(pattern))
    resumed.set_state(state)
    assert _one_by_one(resumed) == rest


def test_corrupt_record_mid_block(tmp_path, small_chunks):
    pattern, _ = _write(tmp_path, per_file=(30, 30), fixed=True)
    path = tmp_path / "part-1.tfrecord"
    data = bytearray(path.read_bytes())
    data[5 * 44 + 20] ^= 0xFF  # record 5 of file 1: its data (records are 28 + 16 bytes)
    path.write_bytes(bytes(data))
    one_by_one = []
    with pytest.raises(CorruptRecordError, match="record 5 at byte offset 220"):
        for x in _pipeline(pattern, cycle=2, shuffle=False):
            one_by_one.append(x.item())
    assert sum(r.startswith(b"f01") for r in one_by_one) == 5  # those before the damaged one
    for size in (1, 4):
        batched = []
        with pytest.raises(CorruptRecordError, match="record 5 at byte offset 220"):
            for batch in _pipeline(pattern, cycle=2, shuffle=False).batch(size):
                batched.extend(batch.tolist())
        # every batch before the one holding the damaged record came out, in the same order
        assert batched == one_by_one[: len(one_by_one) // size * size]

    def skipping():
        files = Dataset.list_files(pattern, shuffle=True, seed=4)
        ds = files.interleave(
            lambda n: TFRecordDataset(n, skip_corrupt=True), cycle_length=2, block_length=1
        )
        return ds.shuffle(8, seed=1)

    want = _one_by_one(skipping())
    assert len(want) == 59 and b"f01-r005".ljust(28, b"\x00") not in want
    assert _batched(skipping(), 10) == want


def test_parse_example_of_block_batches(tmp_path):
    """The README pipeline end to end: parsed batches equal those of one-by-one reading."""
    rng = np.random.default_rng(0)
    images = rng.random((300, 12), dtype=np.float32)
    for f in range(3):
        with TFRecordWriter(tmp_path / f"ex-{f}.tfrecord") as w:
            for i in range(f, 300, 3):
                w.write(serialize_example({"image": images[i], "label": np.int64(i)}))
    spec = {"image": FixedLenFeature([12], np.float32), "label": FixedLenFeature([], np.int64)}

    def make():
        files = Dataset.list_files(str(tmp_path / "ex-*.tfrecord"), shuffle=True, seed=0)
        ds = files.interleave(TFRecordDataset, cycle_length=4, block_length=1)
        return ds.shuffle(100, seed=1)

    order = [parse_example([r], spec)["label"][0] for r in _one_by_one(make())]
    labels, seen = [], []
    for batch in make().batch(64).map(lambda r: parse_example(r, spec)):
        labels.extend(batch["label"].tolist())
        seen.append(np.array_equal(batch["image"], images[batch["label"]]))
    assert labels == order and sorted(labels) == list(range(300)) and all(seen)


def test_inner_datasets_that_are_not_record_sources(tmp_path, small_chunks):
    """An inner dataset that is not a record source (a map, in-memory strings) turns the
    blocks off where it is met, mid-epoch too; the order stays the one-by-one order."""
    pattern, _ = _write(tmp_path)

    def make(kind):
        files = Dataset.list_files(pattern, shuffle=True, seed=4)

        def inner(name):
            ds = TFRecordDataset(name)
            if kind == "map":
                return ds.map(lambda r: r)
            if kind == "mixed" and name.item().endswith(b"part-3.tfrecord"):
                records = np.empty(len(_one_by_one(ds)), object)
                records[:] = _one_by_one(ds)
                return Dataset.from_tensor_slices(records)  # met after some blocks
            return ds

        return files.interleave(inner, cycle_length=2).shuffle(13, seed=3)

    for kind in ("map", "mixed"):
        want = _one_by_one(make(kind))
        assert len(want) == sum(PER_FILE)
        assert _batched(make(kind), 10) == want, kind
        it = iter(make(kind).batch(10))
        head = [r for _ in range(8) for r in next(it).tolist()]
        state = it.get_state()
        fresh = iter(make(kind).batch(10))
        fresh.set_state(state)
        assert head + [r for b in fresh for r in b.tolist()] == want, kind


def test_gzip_state_mid_block_resumes_exactly(tmp_path, small_chunks):
    """A compressed file restores by inflating up to the saved offset: mid-block too."""
    pattern, _ = _write(tmp_path, compression="GZIP")

    def make():
        return _pipeline(pattern, compression="GZIP").batch(11)

    want = [r for b in make() for r in b.tolist()]
    it = iter(make())
    head = [r for _ in range(6) for r in next(it).tolist()]
    fresh = iter(make())
    fresh.set_state(it.get_state())
    assert head + [r for b in fresh for r in b.tolist()] == want


@pytest.mark.parametrize("cycle,block", [(3, 1), (2, 3)])
def test_parallel_reads_in_blocks(tmp_path, small_chunks, cycle, block):
    """Reader threads hand records over in blocks: the sequential order, states and errors."""
    pattern, every = _write(tmp_path)

    def make(calls):
        files = Dataset.list_files(pattern, shuffle=True, seed=4)
        ds = files.interleave(
            TFRecordDataset, cycle_length=cycle, block_length=block, num_parallel_calls=calls
        )
        return ds.shuffle(17, seed=9)

    want = _one_by_one(make(None))
    assert sorted(want) == sorted(every)
    for _ in range(3):  # threads: repeat what could race
        assert _one_by_one(make(cycle)) == want
        assert _batched(make(cycle), 16) == want
    it = iter(make(cycle).batch(16))
    head = [r for _ in range(5) for r in next(it).tolist()]
    state = it.get_state()
    it.close()
    fresh = iter(make(cycle).batch(16))
    fresh.set_state(state)
    assert head + [r for b in fresh for r in b.tolist()] == want
    sequential = iter(make(None).batch(16))
    for _ in range(5):
        next(sequential)
    assert sequential.get_state()["node"] == state["node"]  # the same state as sequential


def test_parallel_reads_raise_a_corrupt_record_in_order(tmp_path, small_chunks):
    pattern, _ = _write(tmp_path, per_file=(30, 30), fixed=True)
    path = tmp_path / "part-1.tfrecord"
    data = bytearray(path.read_bytes())
    data[5 * 44 + 20] ^= 0xFF
    path.write_bytes(bytes(data))
    got = {}
    for calls in (None, 2):
        files = Dataset.list_files(pattern, shuffle=True, seed=4)
        ds = files.interleave(TFRecordDataset, cycle_length=2, num_parallel_calls=calls)
        got[calls] = []
        with pytest.raises(CorruptRecordError, match="record 5 at byte offset 220"):
            for batch in ds.batch(1):
                got[calls].extend(batch.tolist())
    assert got[2] == got[None] and sum(r.startswith(b"f01") for r in got[2]) == 5


@pytest.mark.parametrize("batched", [False, True])
def test_shuffle_state_restored_on_shorter_records_says_how_many(tmp_path, batched):
    """A shuffle state saved after 50 records, restored where the file holds 30: the
    replay (by blocks of records) says how far it got, as the one-by-one replay does."""
    path = tmp_path / "one.tfrecord"
    _write_n(path, 60)
    ds = TFRecordDataset(str(path)).shuffle(8, seed=1)
    ds = ds.batch(10) if batched else ds
    it = iter(ds)
    for _ in range(5 if batched else 50):
        next(it)
    state = it.get_state()
    _write_n(path, 30)
    with pytest.raises(IteratorStateError, match=r"saved after 50 elements of shuffle, .* only 30"):
        iter(ds).set_state(state)


def _write_n(path, n):
    with TFRecordWriter(path) as w:
        for r in range(n):
            w.write(b"r%03d" % r)
