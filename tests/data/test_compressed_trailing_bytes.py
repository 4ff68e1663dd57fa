"""GZIP/ZLIB TFRecord files with bytes after the stream, and cut streams (issue 29 item 8).

Seven records ``record-0`` .. ``record-6`` written compressed, then bytes appended
(or the file cut). The expected counts and outcomes are TensorFlow 2.21's
(``tf.data.TFRecordDataset(path, kind)`` over the same bytes): every intact
record comes before the error, GZIP trailing garbage that inflate rejects is a
``DataLossError``, a trailing GZIP member too short to be rejected and anything
after a ZLIB stream end without an error. A stream cut before its end marker
after whole records is where phalanx deliberately differs (TF ends silently;
phalanx names the cut: docs/input_pipelines.md).
"""

import pytest

from phalanx.data import TFRecordDataset, TFRecordWriter
from phalanx.errors import DataLossError, TruncatedRecordError

RECORDS = [b"record-%d" % i for i in range(7)]
GARBAGE = {
    "text": b"this is trailing garbage, not a stream",
    "zeros": b"\0" * 40,
    "one": b"x",
    "gzipmagic": b"\x1f\x8b\x08\x00garbage",
}
# (kind, garbage): TF 2.21's records read and whether it then raised DataLossError
TF = {
    ("GZIP", "text"): (7, True),
    ("GZIP", "zeros"): (7, True),
    ("GZIP", "one"): (7, False),
    ("GZIP", "gzipmagic"): (7, False),
    ("ZLIB", "text"): (7, False),
    ("ZLIB", "zeros"): (7, False),
    ("ZLIB", "one"): (7, False),
    ("ZLIB", "gzipmagic"): (7, False),
}


def _file(tmp_path, kind, name="f"):
    path = str(tmp_path / f"{name}.tfrecord")
    with TFRecordWriter(path, kind) as w:
        for r in RECORDS:
            w.write(r)
    with open(path, "rb") as f:
        return path, f.read()


def _read(path, kind):
    out = []
    try:
        for r in TFRecordDataset(path, kind):
            out.append(r.item() if hasattr(r, "item") else r)
    except DataLossError as e:
        return out, e
    return out, None


@pytest.mark.parametrize("kind, garbage", list(TF))
def test_trailing_bytes_yield_every_record_then_the_error_as_tf(tmp_path, kind, garbage):
    path, raw = _file(tmp_path, kind)
    with open(path, "wb") as f:
        f.write(raw + GARBAGE[garbage])
    got, error = _read(path, kind)
    count, raises = TF[(kind, garbage)]
    assert got == RECORDS[:count]
    assert (error is not None) == raises, error
    if raises:
        assert f"{kind} stream is corrupted" in str(error)
        assert "every record before the damage was read" in str(error)


def test_two_gzip_members_are_read_and_a_zlib_file_is_one_stream_as_tf(tmp_path):
    # TF 2.21: GZIP file + itself -> 14 records; ZLIB file + itself -> 7 records, no error.
    for kind, want in (("GZIP", RECORDS * 2), ("ZLIB", RECORDS)):
        path, raw = _file(tmp_path, kind, kind)
        with open(path, "wb") as f:
            f.write(raw + raw)
        assert _read(path, kind) == (want, None)


def test_damage_inside_a_large_gzip_stream_keeps_the_records_before_it(tmp_path):
    # One 4 MiB read chunk holds all of it: the records before the damaged byte come out.
    path = str(tmp_path / "big.tfrecord")
    records = [b"%06d" % i * 20 for i in range(20000)]
    with TFRecordWriter(path, "GZIP") as w:
        for r in records:
            w.write(r)
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    raw[len(raw) // 2] ^= 0xFF
    with open(path, "wb") as f:
        f.write(bytes(raw))
    got, error = _read(path, "GZIP")
    assert error is not None
    assert 0 < len(got) < len(records) and got == records[: len(got)]


@pytest.mark.parametrize("kind, cut, tf_records", [("GZIP", 4, 7), ("ZLIB", 4, 7), ("GZIP", 42, 2)])
def test_a_cut_stream_yields_every_whole_record_then_names_the_cut(tmp_path, kind, cut, tf_records):
    # TF 2.21 yields the same records; it ends silently on GZIP/ZLIB cut 4 (the stream's
    # trailer) and raises DataLossError('truncated record') on GZIP cut 42.
    path, raw = _file(tmp_path, kind)
    with open(path, "wb") as f:
        f.write(raw[:-cut])
    got, error = _read(path, kind)
    assert got == RECORDS[:tf_records]
    assert isinstance(error, TruncatedRecordError)
