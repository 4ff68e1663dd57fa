"""Crafted files cannot exhaust memory: each case runs in a fresh process that reports its peak.

A TFRecord header can claim any length (its CRC is easy to forge); a GZIP stream
of 1 MB can inflate to 1 GiB. Reading such a file must end in phalanx's own
error with at most 200 MB of extra peak memory (``ru_maxrss``), not in a
``MemoryError`` or gigabytes of buffers.
"""

import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest

from phalanx.io._tfrecord import masked_crc32c

LIMIT_MB = 200
GIB = 1 << 30


def _header(length: int) -> bytes:
    head = struct.pack("<Q", length)
    return head + struct.pack("<I", masked_crc32c(head))


@pytest.fixture(scope="module")
def gzip_bomb(tmp_path_factory) -> str:
    """About 1 MB of GZIP whose one record claims 1 GiB and inflates to 1 GiB of zeros."""
    path = tmp_path_factory.mktemp("crafted") / "bomb.tfrecord.gz"
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(16 << 20)
    with open(path, "wb") as f:
        f.write(z.compress(_header(GIB)))
        for _ in range(GIB // len(zeros)):
            f.write(z.compress(zeros))
        f.write(z.compress(b"\0\0\0\0"))
        f.write(z.flush())
    assert os.path.getsize(path) < 2 << 20
    return str(path)


def _peak_extra_mb(code: str) -> dict:
    """Runs ``code`` (which sets ``result``) in a fresh process; its extra peak memory in MB."""
    script = textwrap.dedent(
        """
        import json, resource, sys
        import phalanx.data
        from phalanx.io._tfrecord import TFRecordReader
        from phalanx.cli import main
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = None
        try:
        {code}
        except BaseException as e:
            result = f"{{type(e).__name__}}: {{e}}"
        extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        print(json.dumps({{"extra_mb": extra, "result": str(result)}}))
        """
    ).format(code=textwrap.indent(textwrap.dedent(code), "    "))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    print(out)
    return out


@pytest.mark.timeout(150)
def test_a_gzip_record_claiming_1_gib_is_read_in_bounded_memory(gzip_bomb):
    out = _peak_extra_mb(
        f"""
        result = [len(r) for r in TFRecordReader({gzip_bomb!r}, "GZIP")]
        """
    )
    assert out["extra_mb"] < LIMIT_MB, out
    assert out["result"].startswith("CorruptRecordError: "), out
    assert "bomb.tfrecord.gz: record 0" in out["result"], out


@pytest.mark.timeout(150)
def test_tfrecord_dataset_on_the_gzip_bomb_stays_bounded(gzip_bomb):
    out = _peak_extra_mb(
        f"""
        ds = phalanx.data.TFRecordDataset({gzip_bomb!r}, compression_type="GZIP")
        result = sum(1 for _ in ds)
        """
    )
    assert out["extra_mb"] < LIMIT_MB, out
    assert out["result"].startswith("CorruptRecordError: "), out


@pytest.mark.timeout(150)
def test_records_verify_on_the_gzip_bomb_stays_bounded(gzip_bomb):
    out = _peak_extra_mb(
        f"""
        try:
            result = main(["records", "verify", {gzip_bomb!r}])
        except SystemExit as e:
            result = f"exit {{e.code}}"
        """
    )
    assert out["extra_mb"] < LIMIT_MB, out
    assert out["result"] in ("1", "exit 1"), out


@pytest.mark.parametrize("compression", ["", "GZIP"])
@pytest.mark.timeout(60)
def test_a_header_claiming_2_to_the_60_is_a_clear_error(tmp_path, compression):
    path = tmp_path / "huge.tfrecord"
    data = _header(1 << 60) + b"x" * 1000
    if compression:
        data = _gzip(data)
    path.write_bytes(data)
    out = _peak_extra_mb(
        f"""
        result = list(TFRecordReader({str(path)!r}, {compression!r}))
        """
    )
    assert out["extra_mb"] < LIMIT_MB, out
    assert out["result"].startswith("TruncatedRecordError: "), out
    assert "huge.tfrecord: truncated record 0" in out["result"], out
    assert str(1 << 60) in out["result"], out


def _gzip(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()


@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_records_longer_than_the_check_threshold_still_read_exactly(
    tmp_path, monkeypatch, compression
):
    from phalanx.io import _tfrecord as io

    monkeypatch.setattr(io, "_LARGE_RECORD", 100)
    records = [b"a" * 5000, b"small", bytes(range(256)) * 40, b""]
    path = tmp_path / "large.tfrecord"
    with io.TFRecordWriter(path, compression) as w:
        for r in records:
            w.write(r)
    reader = io.TFRecordReader(path, compression, buffer_size=1)
    assert list(reader) == records
    assert reader.position == (4, sum(len(r) + 16 for r in records))
    start = (1, len(records[0]) + 16)
    assert list(io.TFRecordReader(path, compression, start=start)) == records[1:]


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_a_corrupt_long_record_is_skipped_or_named(tmp_path, monkeypatch, compression):
    from phalanx.errors import CorruptRecordError, TruncatedRecordError
    from phalanx.io import _tfrecord as io

    monkeypatch.setattr(io, "_LARGE_RECORD", 100)
    good = io.frame_record(b"ok")
    bad = bytearray(io.frame_record(b"z" * 1000))
    bad[500] ^= 1
    raw = good + bytes(bad) + good
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(_gzip(raw) if compression else raw)
    reader = io.TFRecordReader(path, compression, skip_corrupt=True)
    assert list(reader) == [b"ok", b"ok"] and reader.damaged == [(1, 18, "data CRC")]
    with pytest.raises(CorruptRecordError, match="record 1 at byte offset 18"):
        list(io.TFRecordReader(path, compression))
    cut = good + bytes(bad)[:700]
    path.write_bytes(_gzip(cut) if compression else cut)
    with pytest.raises(TruncatedRecordError, match="claims 1000 bytes of data, and only 700"):
        list(io.TFRecordReader(path, compression))
    reader = io.TFRecordReader(path, compression, skip_corrupt=True)
    assert list(reader) == [b"ok"] and reader.damaged == [(1, 18, "truncated")]
