"""s3:// through s3fs against a local S3-compatible server (moto in server mode).

The server runs in a thread of this process on a free loopback port, started
by the module's fixture and shut down at its end (joined with a deadline).
Skipped, with the reason, when moto's server or s3fs is not installed
(``pip install -e ".[dev]"`` installs both).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from io_support import data, model, scalars

from phalanx.callbacks import CSVLogger, TensorBoard
from phalanx.cli import main
from phalanx.data import Dataset, TFRecordDataset, auto_shard
from phalanx.io import _fs, gfile
from phalanx.io._tfrecord import TFRecordWriter

s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'phalanx[s3]')")
werkzeug_app = pytest.importorskip(
    "moto.moto_server.werkzeug_app",
    reason="moto's server is not installed (pip install 'moto[s3]' flask flask-cors)",
)
serving = pytest.importorskip("werkzeug.serving")

BUCKET = "phalanx-test"


@pytest.fixture(scope="module")
def s3():
    """``s3://phalanx-test``, served by moto on 127.0.0.1; fsspec's s3 defaults point there."""
    import fsspec

    app = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
    server = serving.make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    saved_env = {k: os.environ.get(k) for k in ("AWS_EC2_METADATA_DISABLED",)}
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    saved_conf = fsspec.config.conf.get("s3")
    fsspec.config.conf["s3"] = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": f"http://{host}:{port}", "region_name": "us-east-1"},
    }
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=f"http://{host}:{port}",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=BUCKET)
        yield f"s3://{BUCKET}"
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        if saved_conf is None:
            fsspec.config.conf.pop("s3", None)
        else:
            fsspec.config.conf["s3"] = saved_conf
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.shutdown()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the moto server thread did not stop within 10 s"


def test_records_list_shard_cache_and_verify_on_s3(s3, capsys):
    paths = []
    for f in range(4):
        paths.append(f"{s3}/data/train-{f:05d}.tfrecord")
        with TFRecordWriter(paths[-1]) as w:
            for r in range(5):
                w.write(b"file %d record %d" % (f, r))
    names = Dataset.list_files(f"{s3}/data/train-*.tfrecord", shuffle=False)
    assert [n.item().decode() for n in names] == paths
    got = [r.item() for r in TFRecordDataset(names, num_parallel_reads=4)]
    assert got == [b"file %d record %d" % (f, r) for r in range(5) for f in range(4)]

    ds = Dataset.list_files(f"{s3}/data/train-*.tfrecord", seed=3).interleave(
        TFRecordDataset, cycle_length=2, num_parallel_calls=2
    )
    shares = [[r.item() for r in auto_shard(ds, 2, i)[0]] for i in range(2)]
    assert sorted(shares[0] + shares[1]) == sorted(got) and not set(shares[0]) & set(shares[1])

    cached = TFRecordDataset(paths[:1]).cache(f"{s3}/cache/train")
    assert len(list(cached)) == 5 and gfile.exists(f"{s3}/cache/train.npz")

    assert main(["records", "verify", *paths]) == 0
    assert "4 OK, 0 damaged" in capsys.readouterr().out


def test_fit_logs_and_weights_on_s3(s3):
    x, y = data()
    trained = model()
    trained.fit(
        x,
        y,
        batch_size=8,
        epochs=2,
        verbose=0,
        callbacks=[TensorBoard(log_dir=f"{s3}/logs"), CSVLogger(f"{s3}/log.csv")],
    )
    assert [step for step, _ in scalars(f"{s3}/logs/train")["epoch_loss"]] == [0, 1]
    assert len(gfile.GFile(f"{s3}/log.csv").read().splitlines()) == 3
    trained.save_weights(f"{s3}/ckpt/weights.npz")
    fresh = model()
    fresh.load_weights(f"{s3}/ckpt/weights.npz")
    for a, b in zip(trained.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_reads_stream_in_large_ranged_requests(s3, monkeypatch):
    """The first record arrives after one ranged GET of the first block, not the whole object."""
    path = f"{s3}/big/records.tfrecord"
    record = bytes(range(256)) * (4 << 10)  # 1 MiB
    with TFRecordWriter(path) as w:
        for _ in range(40):
            w.write(record)
    size = gfile.stat(path).length
    fetched: list[tuple[int, int]] = []
    original = s3fs.core.S3File._fetch_range

    def spy(self, start, end):
        fetched.append((start, end))
        return original(self, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", spy)
    it = iter(TFRecordDataset(path))
    assert next(it).item() == record
    assert len(fetched) == 1 and fetched[0][0] == 0
    assert fetched[0][1] - fetched[0][0] >= _fs.READ_AHEAD_BYTES  # a large read-ahead
    assert fetched[0][1] < size  # not the whole object before the first record
    assert sum(1 for _ in it) == 39
    assert all(end - start >= 4 << 20 for start, end in fetched[:-1])  # few, large requests
