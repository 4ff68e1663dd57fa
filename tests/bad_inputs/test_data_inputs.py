"""Bad inputs to ``phalanx.data``: each raises a phalanx error naming what is wrong."""

import gzip

import numpy as np
import pytest
from catalog import Case, run

from phalanx import data as D
from phalanx.errors import (
    ComponentLengthError,
    CorruptRecordError,
    DataLossError,
    DatasetArgumentError,
    DatasetTypeError,
    ExampleInputError,
    ExampleParseError,
    IteratorStateError,
    StructureMismatchError,
    TruncatedRecordError,
)

R = D.Dataset.range


def _tfrecord(tmp_path, data: bytes, name="x.tfrecord"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _compressed_records(tmp_path, kind):
    path = tmp_path / f"{kind[0].lower()}.tfrecord"
    with D.TFRecordWriter(path, kind) as w:
        w.write(b"abc")
    return str(path)


def _state(ds, k=1):
    it = iter(ds)
    for _ in range(k):
        next(it)
    return it.get_state()


def _restore(ds, state):
    iter(ds).set_state(state)


def _tamper(path, value):
    state = _state(R(10).batch(3))
    node = state
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return state


_FEATURES = {"x": D.FixedLenFeature([], np.int64)}


def _record(**features):
    from phalanx.io._example import serialize_example

    return serialize_example(features)


CASES = [
    # Sources
    Case(
        "slices ragged list",
        lambda: D.Dataset.from_tensor_slices([[1, 2], [3]]),
        ComponentLengthError,
        r"\[\[1, 2\], \[3\]\].*different lengths",
    ),
    Case(
        "slices ragged components",
        lambda: D.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4))),
        ComponentLengthError,
        r"\(3,\).*\(4,\)",
    ),
    Case(
        "slices scalar",
        lambda: D.Dataset.from_tensor_slices(np.float32(1)),
        ComponentLengthError,
        r"scalar",
    ),
    Case(
        "slices dict ragged",
        lambda: D.Dataset.from_tensor_slices({"a": np.zeros(2), "b": np.zeros(5)}),
        ComponentLengthError,
        r"\(2,\).*\(5,\)",
    ),
    # Transformations' arguments
    Case(
        "batch 0",
        lambda: R(5).batch(0),
        DatasetArgumentError,
        r"batch_size must be a positive int, got 0",
    ),
    Case("batch -8", lambda: R(5).batch(-8), DatasetArgumentError, r"batch_size .* got -8"),
    Case("batch float", lambda: R(5).batch(2.5), DatasetArgumentError, r"batch_size .* got 2.5"),
    Case(
        "batch bool size", lambda: R(5).batch(True), DatasetArgumentError, r"batch_size .* got True"
    ),
    Case(
        "batch drop_remainder str",
        lambda: R(5).batch(2, drop_remainder="no"),
        DatasetArgumentError,
        r"drop_remainder must be True or False, got 'no'",
    ),
    Case(
        "batch drop_remainder int",
        lambda: R(5).batch(2, drop_remainder=1),
        DatasetArgumentError,
        r"drop_remainder .* got 1 of type int",
    ),
    Case(
        "padded_batch drop_remainder str",
        lambda: R(5).padded_batch(2, drop_remainder="yes"),
        DatasetArgumentError,
        r"padded_batch: drop_remainder .* 'yes'",
    ),
    Case(
        "rebatch drop_remainder None",
        lambda: R(6).batch(2).rebatch(3, drop_remainder=None),
        DatasetArgumentError,
        r"rebatch: drop_remainder .* None",
    ),
    Case(
        "shuffle 0",
        lambda: R(5).shuffle(0),
        DatasetArgumentError,
        r"buffer_size must be a positive int, got 0",
    ),
    Case("shuffle -1", lambda: R(5).shuffle(-1), DatasetArgumentError, r"buffer_size .* got -1"),
    Case("map not callable", lambda: R(5).map(3), DatasetTypeError, r"callable .*got int 3"),
    Case(
        "map one arg on tuples",
        lambda: list(D.Dataset.from_tensor_slices((np.zeros(3), np.zeros(3))).map(lambda x: x)),
        StructureMismatchError,
        r"tuples of 2 components.*<lambda>\(x\).*lambda x0, x1",
    ),
    Case(
        "map three args on pairs",
        lambda: list(
            D.Dataset.from_tensor_slices((np.zeros(3), np.zeros(3))).map(lambda a, b, c: a)
        ),
        StructureMismatchError,
        r"tuples of 2 components.*\(a, b, c\)",
    ),
    Case(
        "map changing structure",
        lambda: list(R(4).map(lambda x: (x, x) if x % 2 else x)),
        StructureMismatchError,
        r"returned .* earlier",
    ),
    # Iterator states
    Case(
        "state negative position",
        lambda: _restore(R(10).batch(3), _tamper(["node", "child", "i"], -7)),
        IteratorStateError,
        r"'i' \(position\) is -7",
    ),
    Case(
        "state past the end",
        lambda: _restore(R(10).batch(3), _tamper(["node", "child", "i"], 99)),
        IteratorStateError,
        r"is 99, outside \[0, 10\]",
    ),
    Case(
        "state other cardinality",
        lambda: _restore(R(4).batch(3), _state(R(10).batch(3), 2)),
        IteratorStateError,
        r"saved on data of 10 elements.*has 4",
    ),
    Case(
        "state other pipeline",
        lambda: _restore(R(10).batch(2), _state(R(10).shuffle(3).batch(2))),
        IteratorStateError,
        r"different pipeline.*Batch\(Shuffle\(Range\)\)",
    ),
    Case("state not a dict", lambda: _restore(R(3), [1, 2]), IteratorStateError, r"got list"),
    Case(
        "state missing node",
        lambda: _restore(
            R(10).batch(3), {k: v for k, v in _state(R(10).batch(3)).items() if k != "node"}
        ),
        IteratorStateError,
        r"no 'node'",
    ),
    Case(
        "state iteration str",
        lambda: _restore(R(10).batch(3), _tamper(["iteration"], "1")),
        IteratorStateError,
        r"'iteration' .* must be an int, got '1'",
    ),
    Case(
        "state batch count float",
        lambda: _restore(R(10).batch(3), _tamper(["node", "n"], 0.5)),
        IteratorStateError,
        r"'n' .* got 0.5",
    ),
    Case(
        "state shuffle k beyond",
        lambda: _restore(
            R(6).shuffle(3, seed=1), {**_state(R(6).shuffle(3, seed=1)), "node": {"k": 50}}
        ),
        IteratorStateError,
        r"'k' .* is 50",
    ),
    # TFRecord files
    Case(
        "tfrecord gzip read uncompressed",
        lambda p: list(D.TFRecordDataset(_compressed_records(p, "GZIP"))),
        CorruptRecordError,
        r"g.tfrecord.*starts like a GZIP stream.*compression_type='GZIP'",
    ),
    Case(
        "tfrecord zlib read uncompressed",
        lambda p: list(D.TFRecordDataset(_compressed_records(p, "ZLIB"))),
        CorruptRecordError,
        r"z.tfrecord.*starts like a ZLIB stream",
    ),
    Case(
        "tfrecord length claims 2^60",
        lambda p: list(D.TFRecordDataset(_tfrecord(p, _header(1 << 60) + b"x" * 20))),
        TruncatedRecordError,
        r"x.tfrecord: truncated record 0.*claims 1152921504606846976 bytes",
    ),
    Case(
        "tfrecord cut header",
        lambda p: list(D.TFRecordDataset(_tfrecord(p, _header(5)[:7]))),
        TruncatedRecordError,
        r"only 7 of its 12 header bytes",
    ),
    Case(
        "tfrecord bad length crc",
        lambda p: list(
            D.TFRecordDataset(_tfrecord(p, b"\x05" + b"\x00" * 11 + b"hello" + b"\x00" * 4))
        ),
        CorruptRecordError,
        r"record 0 at byte offset 0 is corrupted: the masked CRC-32C of its length",
    ),
    Case(
        "tfrecord bad data crc",
        lambda p: list(D.TFRecordDataset(_tfrecord(p, _header(5) + b"hello" + b"\x00" * 4))),
        CorruptRecordError,
        r"its data at byte 12",
    ),
    Case(
        "tfrecord gzip garbage",
        lambda p: list(
            D.TFRecordDataset(_tfrecord(p, b"\x1f\x8b" + b"\x00" * 30), compression_type="GZIP")
        ),
        DataLossError,
        r"x.tfrecord: the GZIP stream is corrupted",
    ),
    Case(
        "tfrecord truncated gzip",
        lambda p: list(
            D.TFRecordDataset(
                _tfrecord(p, gzip.compress(_header(5) + b"hello" + b"\x00" * 4)[:-12]),
                compression_type="GZIP",
            )
        ),
        TruncatedRecordError,
        r"x.tfrecord: truncated record 0",
    ),
    Case(
        "tfrecord compression typo",
        lambda p: D.TFRecordDataset(_compressed_records(p, "GZIP"), compression_type="GZ"),
        DatasetArgumentError,
        r"'GZ'",
    ),
    # Examples
    Case(
        "parse_example str",
        lambda: D.parse_example("abc", _FEATURES),
        ExampleInputError,
        r"got a str 'abc'",
    ),
    Case(  # a str is its UTF-8 bytes, as TF's tf.string; "abc" is no Example
        "parse_single_example str",
        lambda: D.parse_single_example("abc", _FEATURES),
        ExampleParseError,
        r"Could not parse a serialized tf.train.Example",
    ),
    Case(
        "parse_example one bytes",
        lambda: D.parse_example(b"abc", _FEATURES),
        ExampleInputError,
        r"one bytes object.*parse_single_example",
    ),
    Case(
        "parse_example S array",
        lambda: D.parse_example(np.array([b"a"]), _FEATURES),
        ExampleInputError,
        r"'S' array",
    ),
    Case(
        "parse_example int record",
        lambda: D.parse_example([b"", 5], _FEATURES),
        ExampleInputError,
        r"record 1 is int",
    ),
    Case(
        "parse missing feature",
        lambda: D.parse_single_example(_record(y=1), _FEATURES),
        ExampleParseError,
        r"'x'",
    ),
    Case(
        "parse wrong dtype",
        lambda: D.parse_single_example(_record(x=np.float32(1.5)), _FEATURES),
        ExampleParseError,
        r"'x'",
    ),
    Case(
        "parse wrong count",
        lambda: D.parse_single_example(_record(x=np.arange(3)), _FEATURES),
        ExampleParseError,
        r"'x'.*3",
    ),
    Case(
        "parse garbage bytes",
        lambda: D.parse_single_example(b"\xff\xff\xff", _FEATURES),
        ExampleParseError,
        r"Could not parse a serialized tf.train.Example",
    ),
]


def _header(length):
    import struct

    from phalanx.io._tfrecord import masked_crc32c

    head = struct.pack("<Q", length)
    return head + struct.pack("<I", masked_crc32c(head))


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_data_input(case, tmp_path):
    run(case, tmp_path)
