"""Property-based fuzzing: random and mutated inputs to the parsers end in phalanx's own errors.

The TFRecord reader, the Example decoder, the CSV parsers, the TF_CONFIG and Slurm parsers and
iterator-state restore take data from outside (files, environment variables,
checkpoints). Whatever they are given, they either work or raise a
``PhalanxError`` (never an ``IndexError``, ``struct.error``, ``MemoryError`` ...),
within a bounded number of examples (CI on 2 cores: a few seconds each).
"""

import contextlib
import csv
import io
import json
import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.cluster import SlurmClusterResolver, TFConfigClusterResolver, expand_hostlist
from phalanx.data import Dataset, FixedLenFeature, VarLenFeature, parse_single_example
from phalanx.data.experimental import CsvDataset
from phalanx.errors import PhalanxError
from phalanx.io import decode_csv
from phalanx.io._example import serialize_example
from phalanx.io._tfrecord import TFRecordReader, frame_record

FAST = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


def _mutate(data: bytes, edits) -> bytes:
    out = bytearray(data)
    for position, value in edits:
        if out:
            out[position % len(out)] = value
    return bytes(out)


edits = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6)
_RECORDS = b"".join(frame_record(bytes([i]) * (i * 7)) for i in range(6))


def _read_all(path, compression):
    try:
        return list(TFRecordReader(path, compression))
    except PhalanxError:
        return None


@FAST
@given(data=st.binary(max_size=300))
def test_tfrecord_reader_on_random_bytes(tmp_path, data):
    path = tmp_path / "r.tfrecord"
    path.write_bytes(data)
    for compression in ("", "GZIP", "ZLIB"):
        _read_all(path, compression)


@FAST
@given(edits=edits, cut=st.integers(0, len(_RECORDS)), gz=st.booleans())
def test_tfrecord_reader_on_mutated_files(tmp_path, edits, cut, gz):
    data = _mutate(_RECORDS, edits)[:cut]
    if gz:
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        data = _mutate(z.compress(data) + z.flush(), edits[:1])
    path = tmp_path / "m.tfrecord"
    path.write_bytes(data)
    _read_all(path, "GZIP" if gz else "")
    reader = TFRecordReader(path, "GZIP" if gz else "", skip_corrupt=True)
    with contextlib.suppress(PhalanxError):
        list(reader)


_FEATURES = {
    "i": FixedLenFeature([2], np.int64, default_value=[0, 0]),
    "f": VarLenFeature(np.float32),
    "s": FixedLenFeature([], np.bytes_, default_value=b""),
}
_EXAMPLE = serialize_example({"i": np.arange(2), "f": np.float32([1.5, 2.5]), "s": b"hello"})


@FAST
@given(data=st.one_of(st.binary(max_size=200), edits.map(lambda e: _mutate(_EXAMPLE, e))))
def test_example_decoder(data):
    with contextlib.suppress(PhalanxError):
        parse_single_example(data, _FEATURES)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
tf_configs = st.fixed_dictionaries(
    {},
    optional={
        "cluster": st.one_of(
            json_values,
            st.dictionaries(
                st.sampled_from(["chief", "worker", "ps", "evaluator", "x"]),
                st.lists(
                    st.sampled_from(["a:1", "b:2", "c", "[::1]:3", "d:99999", ""]), max_size=3
                ),
                max_size=3,
            ),
        ),
        "task": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["chief", "worker", "ps", "evaluator", 3]),
                    "index": json_values,
                }
            ),
        ),
        "environment": json_values,
    },
)


@FAST
@given(config=st.one_of(tf_configs.map(json.dumps), st.text(max_size=40)))
def test_tf_config_parser(config):
    with contextlib.suppress(PhalanxError):
        TFConfigClusterResolver(tf_config=config)


hostlists = st.text(alphabet="ab01239[]-,x", max_size=30)


@FAST
@given(
    hostlist=hostlists,
    procid=st.text("0123-x", max_size=3),
    ntasks=st.text("0123-x", max_size=3),
    per_node=st.text("0123(x),", max_size=12),
)
def test_slurm_parsers(hostlist, procid, ntasks, per_node):
    try:
        hosts = expand_hostlist(hostlist)
        assert len(hosts) <= 65536
    except PhalanxError:
        pass
    env = {
        "SLURM_JOB_NODELIST": hostlist,
        "SLURM_PROCID": procid,
        "SLURM_NTASKS": ntasks,
        "SLURM_TASKS_PER_NODE": per_node,
        "SLURM_JOB_ID": "7",
    }
    with contextlib.suppress(PhalanxError):
        SlurmClusterResolver(environ=env)


_PIPELINES = [
    lambda: Dataset.range(10).batch(3),
    lambda: Dataset.range(10).shuffle(4, seed=1).batch(2),
    lambda: Dataset.from_tensor_slices(np.arange(8)).map(lambda x: x * 2).repeat(2).batch(3),
    lambda: Dataset.range(7).shuffle(3, seed=2).take(5),
]


def _mutate_state(state, choice, value):
    """Replaces one leaf (chosen by ``choice``) of the nested state with ``value``."""
    leaves = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        else:
            leaves.append(path)

    walk(state, ())
    path = leaves[choice % len(leaves)]
    node = state
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return state


@FAST
@given(
    which=st.integers(0, len(_PIPELINES) - 1),
    steps=st.integers(0, 4),
    choice=st.integers(0, 50),
    value=st.one_of(
        st.integers(-(2**70), 2**70),
        st.text(max_size=4),
        st.none(),
        st.floats(),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_iterator_state_restore(which, steps, choice, value):
    make = _PIPELINES[which]
    it = iter(make())
    for _ in range(steps):
        next(it, None)
    state = _mutate_state(it.get_state(), choice, value)
    fresh = iter(make())
    try:
        fresh.set_state(state)
    except PhalanxError:
        return
    valid = {int(x) for x in np.concatenate([np.ravel(e) for e in make()] or [np.zeros(0)])}
    for element, _ in zip(fresh, range(40), strict=False):
        assert set(np.ravel(element).tolist()) <= valid, (state, element)


@FAST
@given(data=st.binary(max_size=200), quote=st.booleans())
def test_csv_parsers_on_random_bytes(tmp_path, data, quote):
    with contextlib.suppress(PhalanxError):
        decode_csv([data], [[""], [0], [0.0]], use_quote_delim=quote)
    path = tmp_path / "f.csv"
    path.write_bytes(data)
    rows = CsvDataset(str(path), [[""], [0], [0.0]], use_quote_delim=quote).ignore_errors()
    for row in rows:
        assert len(row) == 3


@FAST
@given(
    table=st.lists(st.lists(st.text(max_size=8), min_size=3, max_size=3), max_size=6),
    delim=st.sampled_from([",", ";", "\t"]),
)
def test_csv_dataset_reads_back_what_pythons_csv_writes(tmp_path, table, delim):
    """Rows written by ``csv.writer`` (quotes, delimiters and line breaks inside fields)
    come back field for field, as UTF-8 bytes."""
    text = io.StringIO()
    csv.writer(text, delimiter=delim).writerows(table)
    path = tmp_path / "t.csv"
    path.write_bytes(text.getvalue().encode("utf-8"))
    rows = [
        tuple(v.item() for v in row) for row in CsvDataset(str(path), [[""]] * 3, field_delim=delim)
    ]
    assert rows == [tuple(f.encode("utf-8") for f in r) for r in table]
