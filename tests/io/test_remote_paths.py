"""memory:// and file:// URLs through the whole path: records, listing, sharding, cache, weights, logs.

Each test runs once on fsspec's in-memory file system (an object store's
semantics: no folders, objects published when closed) and once on ``file://``
URLs of a temporary folder, through the public API a user calls.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from io_support import data, model, scalars

from phalanx.callbacks import CSVLogger, LambdaCallback, TensorBoard
from phalanx.cli import main
from phalanx.data import (
    AutoShardPolicy,
    Dataset,
    FixedLengthRecordDataset,
    TextLineDataset,
    TFRecordDataset,
    auto_shard,
)
from phalanx.errors import IteratorStateError
from phalanx.io import gfile
from phalanx.io._tfrecord import TFRecordWriter

FILES, RECORDS = 4, 6


@pytest.fixture(params=["memory", "file"])
def base(request, tmp_path):
    """A folder URL: ``memory://<unique>`` or ``file://<tmp_path>``."""
    if request.param == "memory":
        url = f"memory://phalanx-test-{uuid.uuid4().hex}"
        yield url
        if gfile.exists(url):
            gfile.rmtree(url)
    else:
        yield f"file://{tmp_path}"


def _write_parts(base: str, files: int = FILES, records: int = RECORDS) -> list[str]:
    gfile.makedirs(f"{base}/data")  # as on a local disk (object stores need none)
    paths = []
    for f in range(files):
        path = f"{base}/data/train-{f:05d}.tfrecord"
        with TFRecordWriter(path) as w:
            for r in range(records):
                w.write(b"file %d record %d" % (f, r))
        paths.append(path)
    return paths


def _values(ds) -> list[bytes]:
    # A filled cache gives the bytes themselves, a record file 0-d object arrays holding them.
    return [r if isinstance(r, bytes) else r.item() for r in ds]


def test_written_listed_and_read_with_parallel_reads(base):
    paths = _write_parts(base)
    names = Dataset.list_files(f"{base}/data/train-*.tfrecord", shuffle=False)
    assert [n.item().decode() for n in names] == paths
    assert all(p.startswith(base.split("://")[0] + "://") for p in paths)
    got = _values(TFRecordDataset(names, num_parallel_reads=FILES))
    # tf.data's order: one record from each open file in turn.
    assert got == [b"file %d record %d" % (f, r) for r in range(RECORDS) for f in range(FILES)]


def test_file_auto_shard_splits_a_remote_glob(base):
    _write_parts(base)
    ds = (
        Dataset.list_files(f"{base}/data/train-*.tfrecord", seed=7)
        .interleave(TFRecordDataset, cycle_length=2, num_parallel_calls=2)
        .batch(3)
    )
    shares = []
    for i in range(2):
        mine, used, reason = auto_shard(ds, 2, i)
        assert used == AutoShardPolicy.FILE, reason
        assert "4 files over 2 input pipelines" in reason
        shares.append([r for batch in mine for r in batch.tolist()])
    files = [{r.split(b" record")[0] for r in share} for share in shares]
    assert len(files[0]) == len(files[1]) == 2 and not files[0] & files[1]
    everything = sorted(r for share in shares for r in share)
    assert everything == sorted(b"file %d record %d" % (f, r) for f in range(4) for r in range(6))


def _pipeline(base: str) -> Dataset:
    names = Dataset.list_files(f"{base}/data/train-*.tfrecord", shuffle=False)
    return TFRecordDataset(names, num_parallel_reads=2).batch(5)


def test_iterator_checkpoint_resumes_at_the_remote_offset(base):
    _write_parts(base)
    whole = [b.tolist() for b in _pipeline(base)]
    it = iter(_pipeline(base))
    seen = [next(it).tolist() for _ in range(2)]
    state = json.loads(json.dumps(it.get_state()))
    assert f"{base}/data/train-00000.tfrecord" in json.dumps(state)  # the slots name their files
    again = iter(_pipeline(base))
    again.set_state(state)
    assert seen + [b.tolist() for b in again] == whole

    # A new file listed before the saved ones moves them: the state is refused, not misread.
    with TFRecordWriter(f"{base}/data/train-00000a.tfrecord") as w:
        w.write(b"new")
    moved = iter(_pipeline(base))
    with pytest.raises(IteratorStateError, match="the files changed since the checkpoint"):
        moved.set_state(state)
        next(moved)


def test_text_fixed_length_and_compressed_records(base):
    with gfile.GFile(f"{base}/lines.txt", "w") as f:
        f.write("one\r\ntwo\nthree")
    assert _values(TextLineDataset(f"{base}/lines.txt")) == [b"one", b"two", b"three"]
    with gfile.GFile(f"{base}/fixed.bin", "wb") as f:
        f.write(b"HDaabbccFT")
    ds = FixedLengthRecordDataset(f"{base}/fixed.bin", 2, header_bytes=2, footer_bytes=2)
    assert _values(ds) == [b"aa", b"bb", b"cc"]
    with TFRecordWriter(f"{base}/z.tfrecord.gz", "GZIP") as w:
        for i in range(3):
            w.write(b"%d" % i)
    assert _values(TFRecordDataset(f"{base}/z.tfrecord.gz", "GZIP")) == [b"0", b"1", b"2"]


def test_cache_file_is_written_there_and_read_back(base):
    paths = _write_parts(base, files=2)
    first = TFRecordDataset(paths).cache(f"{base}/cache/train")
    records = _values(first)
    assert gfile.exists(f"{base}/cache/train.npz")
    assert not [p for p in gfile.listdir(f"{base}/cache") if "tmp" in p]
    for p in paths:
        gfile.remove(p)
    # A new pipeline reads the cache: the record files are gone.
    assert _values(TFRecordDataset(paths).cache(f"{base}/cache/train")) == records


def test_weights_save_and_load(base):
    x, y = data()
    trained = model()
    trained.fit(x, y, batch_size=8, epochs=1, verbose=0)
    trained.save_weights(f"{base}/ckpt/weights.npz")
    fresh = model()
    fresh.load_weights(f"{base}/ckpt/weights.npz")
    for a, b in zip(trained.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(trained.predict(x, verbose=0), fresh.predict(x, verbose=0))
    with pytest.raises(FileNotFoundError, match="No weights file"):
        fresh.load_weights(f"{base}/ckpt/missing.npz")


def test_fit_writes_tensorboard_and_csv_logs_each_epoch(base):
    x, y = data()
    uploaded = []

    def after_epoch(epoch, logs):  # runs after TensorBoard's and CSVLogger's epoch ends
        uploaded.append(
            (
                len(gfile.glob(f"{base}/logs/train/events.out.tfevents.*")),
                gfile.GFile(f"{base}/log.csv").read().count("\n"),
            )
        )

    model().fit(
        x,
        y,
        batch_size=8,
        epochs=2,
        validation_data=(x, y),
        verbose=0,
        callbacks=[
            TensorBoard(log_dir=f"{base}/logs"),
            CSVLogger(f"{base}/log.csv"),
            LambdaCallback(on_epoch_end=after_epoch),
        ],
    )
    assert uploaded == [(1, 2), (1, 3)]  # there after each epoch, not only at the end
    train = scalars(f"{base}/logs/train")
    val = scalars(f"{base}/logs/validation")
    assert [step for step, _ in train["epoch_loss"]] == [0, 1]
    assert [step for step, _ in val["epoch_accuracy"]] == [0, 1]
    rows = gfile.GFile(f"{base}/log.csv").read().splitlines()
    assert rows[0].split(",")[:2] == ["epoch", "accuracy"] and len(rows) == 3


def test_records_cli_verifies_and_inspects_remote_files(base, capsys):
    paths = _write_parts(base, files=2)
    assert main(["records", "verify", *paths]) == 0
    out = capsys.readouterr().out
    assert f"OK       {paths[0]}: 6 records (NONE)" in out
    assert main(["records", "inspect", paths[1], "--limit", "1"]) == 0
    assert "records:     6" in capsys.readouterr().out
    assert main(["records", "verify", f"{base}/data/nothing.tfrecord"]) == 1
    assert "MISSING" in capsys.readouterr().out


def test_an_interrupted_weights_write_leaves_the_previous_file(base, monkeypatch):
    first = model()
    first.save_weights(f"{base}/ckpt/weights.npz")
    before = gfile.GFile(f"{base}/ckpt/weights.npz", "rb").read()

    def crash(file, **arrays):  # a writer that dies half-way through the archive
        file.write(b"PK\x03\x04 half an archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        model().save_weights(f"{base}/ckpt/weights.npz")
    assert gfile.GFile(f"{base}/ckpt/weights.npz", "rb").read() == before
    assert gfile.listdir(f"{base}/ckpt") == ["weights.npz"]  # no temporary file left behind


def test_csv_logger_appends_to_a_remote_log(base):
    x, y = data()
    net = model()
    for _ in range(2):
        logger = CSVLogger(f"{base}/append.csv", append=True)
        net.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[logger])
    rows = gfile.GFile(f"{base}/append.csv").read().splitlines()
    assert rows[0].startswith("epoch,") and [r.split(",")[0] for r in rows[1:]] == list("0101")
