"""TFRecord framing: writer, reader, CRC checks, skipping, resuming, text and fixed-length files."""

from __future__ import annotations

import gzip
import os
import zlib

import pytest

from phalanx.errors import CorruptRecordError, DataLossError, TruncatedRecordError
from phalanx.io._lines_and_records import FixedLengthRecordReader, TextLineReader
from phalanx.io._tfrecord import (
    TFRecordOptions,
    TFRecordReader,
    TFRecordWriter,
    frame_record,
    masked_crc32c,
    tf_record_iterator,
)

RECORDS = [b"", b"a", os.urandom(7), os.urandom(300), os.urandom(70000), b"end"]
COMPRESSIONS = [None, "", "GZIP", "ZLIB"]


def _write(path, records=RECORDS, options=None):
    with TFRecordWriter(path, options) as w:
        for r in records:
            w.write(r)
    return path


def test_masked_crc_matches_tensorflow_constants():
    # crc32c::Mask(crc32c::Value("")) and the framing of b"a", as TensorFlow writes them.
    assert masked_crc32c(b"") == 0xA282EAD8
    assert frame_record(b"a")[:12] == (1).to_bytes(8, "little") + masked_crc32c(
        (1).to_bytes(8, "little")
    ).to_bytes(4, "little")


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_every_compression(tmp_path, compression):
    path = _write(tmp_path / "x", options=TFRecordOptions(compression))
    assert list(TFRecordReader(path, compression)) == RECORDS
    assert list(tf_record_iterator(path, compression)) == RECORDS


def test_compressed_files_are_standard_streams(tmp_path):
    plain = _write(tmp_path / "plain").read_bytes()
    assert gzip.decompress(_write(tmp_path / "g", options="GZIP").read_bytes()) == plain
    assert zlib.decompress(_write(tmp_path / "z", options="ZLIB").read_bytes()) == plain


def test_flush_makes_records_readable_before_close(tmp_path):
    for compression in ("", "GZIP"):
        path = tmp_path / f"f{compression}"
        w = TFRecordWriter(path, compression)
        w.write(b"first")
        w.flush()
        got = []
        with pytest.raises(TruncatedRecordError) if compression else _nothing():
            got.extend(TFRecordReader(path, compression))
        assert got == [b"first"]
        w.close()
        w.close()  # idempotent
        with pytest.raises(ValueError, match="closed"):
            w.write(b"x")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_bad_compression_type_is_named():
    with pytest.raises(ValueError, match="'BZ2'.*ZLIB.*GZIP"):
        TFRecordOptions("BZ2")
    assert TFRecordOptions.get_compression_type_string(TFRecordOptions("gzip")) == "GZIP"


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_resume_from_every_position(tmp_path, compression):
    path = _write(tmp_path / "x", options=compression)
    reader = TFRecordReader(path, compression)
    positions = [reader.position]
    for _ in reader:
        positions.append(reader.position)
    assert positions[-1][0] == len(RECORDS)
    for k, position in enumerate(positions):
        assert position[0] == k
        assert list(TFRecordReader(path, compression, start=position)) == RECORDS[k:]


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_corrupt_data_names_file_index_and_offset(tmp_path):
    path = _write(tmp_path / "x")
    offset3 = sum(16 + len(r) for r in RECORDS[:3])
    _flip(path, offset3 + 12 + 5)
    got = []
    with pytest.raises(CorruptRecordError, match=rf"x: record 3 at byte offset {offset3}\b.*data"):
        got.extend(TFRecordReader(path))
    assert got == RECORDS[:3]
    reader = TFRecordReader(path, skip_corrupt=True)
    assert list(reader) == RECORDS[:3] + RECORDS[4:]
    assert reader.corrupt_count == 1 and reader.damaged == [(3, offset3, "data CRC")]


def test_corrupt_length_is_skipped_by_resynchronizing(tmp_path):
    path = _write(tmp_path / "x")
    offset2 = sum(16 + len(r) for r in RECORDS[:2])
    _flip(path, offset2 + 1)
    with pytest.raises(CorruptRecordError, match="record 2 .*length"):
        list(TFRecordReader(path))
    reader = TFRecordReader(path, skip_corrupt=True)
    assert list(reader) == RECORDS[:2] + RECORDS[3:]
    assert reader.corrupt_count == 1


@pytest.mark.parametrize("cut", [1, 4, 5, 13, 18])  # the last record is 19 bytes
def test_truncation_raises_after_every_complete_record(tmp_path, cut):
    path = _write(tmp_path / "x")
    data = path.read_bytes()
    path.write_bytes(data[:-cut])
    got = []
    with pytest.raises(TruncatedRecordError, match="truncated record 5"):
        got.extend(TFRecordReader(path))
    assert got == RECORDS[:5]


def test_truncated_gzip_stream(tmp_path):
    path = _write(tmp_path / "x", options="GZIP")
    path.write_bytes(path.read_bytes()[:-6])
    got = []
    with pytest.raises(DataLossError):
        got.extend(TFRecordReader(path, "GZIP"))
    assert got == RECORDS


def test_empty_files_hold_no_records(tmp_path):
    for compression in COMPRESSIONS:
        path = tmp_path / "empty"
        path.write_bytes(b"")
        assert list(TFRecordReader(path, compression)) == []


def test_text_lines_follow_tensorflow(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\r\n\nb\rc\n\r\nlast\r")
    # TensorFlow drops every '\r', keeps empty lines, and a last line without '\n'.
    assert list(TextLineReader(path)) == [b"a", b"", b"bc", b"", b"last"]
    path.write_bytes(b"x\n\r")
    assert list(TextLineReader(path)) == [b"x"]
    gz = tmp_path / "t.gz"
    gz.write_bytes(gzip.compress(b"one\ntwo\nthree"))
    reader = TextLineReader(gz, "GZIP")
    it = iter(reader)
    assert next(it) == b"one"
    assert list(TextLineReader(gz, "GZIP", start=reader.position)) == [b"two", b"three"]


def test_fixed_length_records(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"HDR" + b"".join(bytes([i]) * 4 for i in range(5)) + b"FT")
    want = [bytes([i]) * 4 for i in range(5)]
    assert list(FixedLengthRecordReader(path, 4, header_bytes=3, footer_bytes=2)) == want
    with pytest.raises(ValueError, match="body is 20 bytes.*record_bytes=3"):
        list(FixedLengthRecordReader(path, 3, header_bytes=3, footer_bytes=2))
    for kind, data in (
        ("GZIP", gzip.compress(path.read_bytes())),
        ("ZLIB", zlib.compress(path.read_bytes())),
    ):
        packed = tmp_path / f"f.{kind}"
        packed.write_bytes(data)
        reader = FixedLengthRecordReader(
            packed, 4, header_bytes=3, footer_bytes=2, compression_type=kind
        )
        it = iter(reader)
        assert [next(it), next(it)] == want[:2]
        resumed = FixedLengthRecordReader(
            packed, 4, header_bytes=3, footer_bytes=2, compression_type=kind, start=reader.position
        )
        assert list(resumed) == want[2:]
        got = []
        with pytest.raises(DataLossError, match="not a multiple"):
            got.extend(
                FixedLengthRecordReader(
                    packed, 3, header_bytes=3, footer_bytes=2, compression_type=kind
                )
            )
        assert len(got) == 6
