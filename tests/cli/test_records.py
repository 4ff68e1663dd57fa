"""``phalanx records inspect`` and ``phalanx records verify``."""

from __future__ import annotations

import numpy as np

from phalanx.cli import main
from phalanx.io._example import serialize_example
from phalanx.io._tfrecord import TFRecordWriter


def _write(path, n=5, compression=None, examples=True):
    with TFRecordWriter(path, compression) as w:
        for i in range(n):
            if examples:
                w.write(serialize_example({"image": np.float32([i, 0.5]), "label": np.array([i])}))
            else:
                w.write(b"raw-%d" % i)
    return path


def test_inspect_counts_guesses_and_decodes(tmp_path, capsys):
    path = _write(tmp_path / "a.tfrecord.gz", compression="GZIP")
    assert main(["records", "inspect", str(path), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "compression: GZIP" in out and "records:     5" in out
    assert "record 1:" in out and "record 2:" not in out
    assert "image  float[2] [1, 0.5]" in out and "label  int64[1] [1]" in out


def test_inspect_raw_records(tmp_path, capsys):
    path = _write(tmp_path / "r.tfrecord", n=2, compression="ZLIB", examples=False)
    assert main(["records", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "compression: ZLIB" in out and "not an Example" in out


def test_verify_ok_and_damaged_with_offsets(tmp_path, capsys):
    good = _write(tmp_path / "good.tfrecord")
    bad = _write(tmp_path / "bad.tfrecord")
    data = bytearray(bad.read_bytes())
    record_len = len(data) // 5
    data[2 * record_len + 20] ^= 0xFF  # the data of record 2
    bad.write_bytes(bytes(data[:-3]))  # and cut the last record short
    assert main(["records", "verify", str(good)]) == 0
    out = capsys.readouterr().out
    assert "OK       " in out and "verified 1 file (" in out
    assert main(["records", "verify", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "verified 2 files (" in out
    assert f"record 2 at byte offset {2 * record_len} (data CRC)" in out
    assert f"record 4 at byte offset {4 * record_len} (truncated)" in out
    assert "3 good records, 2 damaged" in out


def test_verify_counts_one_record_in_the_singular(tmp_path, capsys):
    one = _write(tmp_path / "one.tfrecord", n=1)
    assert main(["records", "verify", str(one)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"OK       {one}: 1 record (NONE)", lines
    assert lines[-1].startswith("verified 1 file (") and lines[-1].endswith("; 1 good record")


def test_verify_rejects_files_that_are_not_tfrecords(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a TFRecord file\n")
    assert main(["records", "verify", str(text), str(tmp_path / "missing")]) == 1
    out = capsys.readouterr().out
    assert "not a TFRecord file" in out and "MISSING" in out
