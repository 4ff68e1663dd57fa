"""tf.io.decode_csv, tf.data.experimental.CsvDataset and make_csv_dataset, case by case.

The cases are TensorFlow 2.21's (``decode_csv_op_test.py``, ``csv_dataset_test.py``,
``make_csv_dataset_test.py``) with TF's outputs recorded as constants; TF's
``_test_by_comparison`` cases (CsvDataset == TextLineDataset.map(decode_csv)) compare
phalanx's two readers the same way.
"""

from __future__ import annotations

import gzip
import uuid
import zlib

import numpy as np
import pytest
from data_support import assert_equal_output_after_checkpoint

import phalanx
from phalanx import data as pdata
from phalanx.data import AutoShardPolicy, auto_shard
from phalanx.data.experimental import CsvDataset, make_csv_dataset
from phalanx.errors import CsvParseError, DatasetArgumentError, DatasetTypeError
from phalanx.io import decode_csv, gfile


def _rows(ds):
    return [tuple(np.asarray(v).item() for v in row) for row in ds]


@pytest.fixture(params=["local", "memory"])
def folder(request, tmp_path):
    if request.param == "local":
        return str(tmp_path)
    return f"memory://phalanx-csv-{uuid.uuid4().hex}"


def _write(folder, inputs, linebreak="\n", compression_type=None):
    """TF's ``_setup_files``: one file per list of rows, joined by ``linebreak``."""
    names = []
    for i, rows in enumerate(inputs):
        name = f"{folder}/temp_{i}.csv"
        contents = linebreak.join(rows).encode("utf-8")
        if compression_type == "GZIP":
            contents = gzip.compress(contents)
        elif compression_type == "ZLIB":
            contents = zlib.compress(contents)
        with gfile.GFile(name, "wb") as f:
            f.write(contents)
        names.append(name)
    return names


# --- decode_csv (decode_csv_op_test.py) ---------------------------------------------------------

DECODE_CASES = [
    (dict(records=["1", "2", '"3"'], record_defaults=[[1]]), [[1, 2, 3]]),
    (dict(records=["1,4", "2,5", "3,6"], record_defaults=[1, 2]), [[1, 2, 3], [4, 5, 6]]),
    (
        dict(records=["1", "2", '"3"'], record_defaults=[[""]], use_quote_delim=False),
        [[b"1", b"2", b'"3"']],
    ),
    (dict(records='1,""', record_defaults=[[3], [4]]), [1, 4]),
    (dict(records=[["1", "2"], ['""', "4"]], record_defaults=[[5]]), [[[1, 2], [5, 4]]]),
    (
        dict(records=[["1", "2"], ['""', '"']], record_defaults=[[""]], use_quote_delim=False),
        [[[b"1", b"2"], [b'""', b'"']]],
    ),
    (
        dict(
            records=["1.0", "-1.79e+308", '"1.79e+308"'],
            record_defaults=[np.array([], dtype=np.double)],
        ),
        [[1.0, -1.79e308, 1.79e308]],
    ),
    (
        dict(records=["1", "2", '"2147483648"'], record_defaults=[np.array([], dtype=np.int64)]),
        [[1, 2, 2147483648]],
    ),
    (
        dict(records=['"1.0"', '"ab , c"', '"a\nbc"', '"ab""c"', " abc "], record_defaults=[["1"]]),
        [[b"1.0", b"ab , c", b"a\nbc", b'ab"c', b" abc "]],
    ),
    (
        dict(records=["1.0,4,aa", "0.2,5,bb", "3,6,cc"], record_defaults=[[1.0], [1], ["aa"]]),
        [[1.0, 0.2, 3], [4, 5, 6], [b"aa", b"bb", b"cc"]],
    ),
    (
        dict(
            records=["2.0,NA,aa", "NA,5,bb", "3,6,NA"],
            record_defaults=[[0.0], [0], [""]],
            na_value="NA",
        ),
        [[2.0, 0.0, 3], [0, 5, 6], [b"aa", b"bb", b""]],
    ),
    (
        dict(records=[",1,", "0.2,3,bcd", "3.0,,"], record_defaults=[[1.0], [0], ["a"]]),
        [[1.0, 0.2, 3.0], [1, 3, 0], [b"a", b"bcd", b"a"]],
    ),
    (
        dict(
            records=[",1,", "0.2,3,bcd", '3.0,,"'],
            record_defaults=[[1.0], [0], ["a"]],
            use_quote_delim=False,
        ),
        [[1.0, 0.2, 3.0], [1, 3, 0], [b"a", b"bcd", b'"']],
    ),
    (
        dict(records=["1\t1", "0.2\t3", "3.0\t"], record_defaults=[[1.0], [0]], field_delim="\t"),
        [[1.0, 0.2, 3.0], [1, 3, 0]],
    ),
    (
        dict(records=[",,", "4,5,6"], record_defaults=[[1], [2]], select_cols=[0, 1]),
        [[1, 4], [2, 5]],
    ),
    (
        dict(records=[",,", "4,5,6"], record_defaults=[[0], [1], [2]], select_cols=[0, 1, 2]),
        [[0, 4], [1, 5], [2, 6]],
    ),
    (dict(record_defaults=np.zeros(5), records="1,2,3,4,5"), [1, 2, 3, 4, 5]),
]


@pytest.mark.parametrize("args, expected", DECODE_CASES)
def test_decode_csv_as_tensorflow(args, expected):
    out = decode_csv(**args)
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want)
        else:
            assert got.tolist() == want


def test_decode_csv_dtypes_and_shapes():
    a, b, c, d, e = decode_csv(
        np.array([["1,2,3,4,x"]]), [np.int32, "int64", [0.5], np.float64, "string"]
    )
    assert [x.dtype for x in (a, b, c, d, e)] == [
        np.int32,
        np.int64,
        np.float32,
        np.float64,
        object,
    ]
    assert a.shape == (1, 1) and e.tolist() == [[b"x"]]
    (f,) = decode_csv(["  12 ", "\t-3"], [[0]])  # spaces around numbers, as TF's safe_strto32
    assert f.tolist() == [12, -3]
    (g,) = decode_csv(["1e3", " inf", "NaN", "0x10", ".5"], [[0.0]])
    np.testing.assert_equal(g, np.float32([1000, np.inf, np.nan, 16, 0.5]))


def test_a_dtype_name_is_a_dtype_and_a_listed_one_a_default():
    required, default = decode_csv(["a,"], ["string", ["string"]])
    assert required.tolist() == [b"a"] and default.tolist() == [b"string"]
    with pytest.raises(CsvParseError, match="Field 0 is required but missing"):
        decode_csv([","], ["float32", ["float32"]])


def test_decode_csv_defaults_that_print_alike_stay_apart():
    a, b = np.array([0.123456789012]), np.array([0.123456789013])  # one repr, two values
    assert decode_csv(['""'], [a])[0].tolist() == [0.123456789012]
    assert decode_csv(['""'], [b])[0].tolist() == [0.123456789013]


DECODE_ERRORS = [
    (
        dict(records=[",1", "0.2,3", "3.0,"], record_defaults=[[1.0], np.array([], np.int32)]),
        "Field 1 is required but missing in record 2",
    ),
    (
        dict(records=[",1", "0.2,234a", "3.0,2"], record_defaults=[[1.0], np.array([], np.int32)]),
        "Field 1 is not a valid int32: '234a' in record 1",
    ),
    (
        dict(records=["1", "9999999999999999999999999", "3"], record_defaults=[[1]]),
        "Field 0 is not a valid int32: .* in record 1",
    ),
    (
        dict(records=[",1", "0.2,2", "3.0adf,3"], record_defaults=[[1.0], [0]]),
        "Field 0 is not a valid float: '3.0adf' in record 2",
    ),
    (
        dict(records=['"1,a,"', "0.22", 'a"bc'], record_defaults=[["a"]]),
        "Unquoted fields cannot have quotes/CRLFs inside in record 2",
    ),
    (
        dict(records=[",1", "0.2,2", "3.0adf,3"], record_defaults=[[1.0]]),
        "Expect 1 fields but have 2 in record 0",
    ),
    (dict(records=['"'], record_defaults=[["default"]]), "Quoted field has to end with quote"),
    (
        dict(records=[",,", "4,5,6"], record_defaults=[[0], [1], [2]], select_cols=[0, 1, 3]),
        "Expect 3 fields but have 2 in record 0",
    ),
    (
        dict(records=["1,2,3"], record_defaults=[[0], [1]], select_cols=[0, 3]),
        "Expect 2 fields but have 1 in record 0",
    ),
    (dict(records=['"a"b"'], record_defaults=[[""]]), "has to be escaped by another quote"),
]


@pytest.mark.parametrize("args, match", DECODE_ERRORS)
def test_decode_csv_errors_name_the_record_and_field(args, match):
    with pytest.raises(CsvParseError, match=match):
        decode_csv(**args)


@pytest.mark.parametrize(
    "args, error, match",
    [
        (dict(select_cols=[0]), DatasetArgumentError, "Length of select_cols and record_defaults"),
        (dict(select_cols=[1, 0, 2]), DatasetArgumentError, "not strictly increasing"),
        (dict(select_cols=[-1, 0, 1]), DatasetArgumentError, "contains negative values"),
        (dict(record_defaults=[[[0]]]), DatasetArgumentError, "at most rank 1"),
        (dict(record_defaults=[[0, 1]]), DatasetArgumentError, "only be 1 default per field"),
        (dict(record_defaults=[[True]]), DatasetTypeError, "float32, float64, int32, int64"),
        (dict(record_defaults=["complex64"]), DatasetTypeError, "of type complex64"),
        (dict(record_defaults=[]), DatasetArgumentError, "record_defaults is empty"),
        (dict(field_delim="::"), DatasetArgumentError, "field_delim should be only 1 char"),
        (dict(records=[1]), CsvParseError, "records must be strings"),
    ],
)
def test_decode_csv_bad_arguments(args, error, match):
    call = dict(records=["1,2,3"], record_defaults=[[0], [0], [0]]) | args
    with pytest.raises(error, match=match):
        decode_csv(**call)


# --- CsvDataset (csv_dataset_test.py) -----------------------------------------------------------

COMPARISON_CASES = [
    (dict(record_defaults=[[]] * 4), [["1,2,3,4"]]),
    (dict(record_defaults=[[0]] * 4), [["1,2,3,4", "5,6,7,8"]]),
    (dict(record_defaults=[[0.0]] * 4), [["1.0,2.1,3.2,4.3", "5.4,6.5,7.6,8.7"]]),
    (dict(record_defaults=[[""]] * 4), [["1.0,2.1,hello,4.3", "5.4,6.5,goodbye,8.7"]]),
    (dict(record_defaults=[[""]] * 3, use_quote_delim=False), [['1,2"3,4']]),
    (
        dict(record_defaults=[np.array([], np.int32), [0.0], "string", np.float64]),
        [["1,2.1,3.2,4.3", "5,6.5,7.6,8.7"]],
    ),
    (dict(record_defaults=[[""]] * 4, use_quote_delim=False), [['1,2,"3,4"', '"5,6",7,8']]),
    (dict(record_defaults=[[0]] * 4, field_delim=":"), [["1:2:3:4", "5:6:7:8"]]),
    (dict(record_defaults=[[0]] * 4, na_value="NA"), [["1,NA,3,4", "NA,6,7,8"]]),
    (dict(record_defaults=[[""]] * 2, select_cols=[1, 2]), [["1,2,3,4", '"5","6","7","8"']]),
    (dict(record_defaults=[[0]] * 4), [["1,2,3,4", "5,6,7,8"], ["5,6,7,8"]]),
    (dict(record_defaults=[[""]] * 4), [['"a","b","c :)","d"', '"e","f","g :(","h"']]),
    (
        dict(record_defaults=[[""]] * 4),
        [['1.0,2.1,"she said: ""hello""",4.3', "5.4,6.5,goodbye,8.7"]],
    ),
]


@pytest.mark.parametrize("kwargs, inputs", COMPARISON_CASES)
def test_csv_dataset_equals_text_lines_decoded(folder, kwargs, inputs):
    names = _write(folder, inputs)
    got = _rows(CsvDataset(names, **kwargs))
    lines = pdata.TextLineDataset(names).map(lambda line: tuple(decode_csv(line, **kwargs)))
    assert got == _rows(lines)
    assert len(got) == sum(len(rows) for rows in inputs)


DATASET_CASES = [
    (
        dict(record_defaults=[[0]] * 4),
        [[",,,", "1,1,1,", ",2,2,2"]],
        [(0, 0, 0, 0), (1, 1, 1, 0), (0, 2, 2, 2)],
    ),
    (dict(record_defaults=[["NA"]]), [["0", "", "2"]], [(b"0",), (b"NA",), (b"2",)]),
    (dict(record_defaults=[[0.0]] * 4), [["0, 1, 2, 3"]], [(0.0, 1.0, 2.0, 3.0)]),
    (dict(record_defaults=[[0]] * 2, header=True), [["col1,col2", "1,2"]], [(1, 2)]),
    (dict(record_defaults=[[0]] * 2, header=True), [["col1,col2"]], []),
    (dict(record_defaults=[[""]] * 2), [[""]], []),
    (dict(record_defaults=["float32", [0.0]]), [["1.0,2.0", "3.0,4.0"]], [(1.0, 2.0), (3.0, 4.0)]),
    (dict(record_defaults=[[""]]), [['"0"', '"1"', '"2"']], [(b"0",), (b"1",), (b"2",)]),
    (
        dict(record_defaults=[[""]] * 4),
        [['a,b,"""c""\n0","d\ne"', "f,g,h,i"]],
        [(b"a", b"b", b'"c"\n0', b"d\ne"), (b"f", b"g", b"h", b"i")],
    ),
    (dict(record_defaults=[[""]], select_cols=[0]), [['1,"2\n3",4', "5,6,7"]], [(b"1",), (b"5",)]),
    (dict(record_defaults=[[""]], exclude_cols=[1, 2]), [["1,2,3", "5,6,7"]], [(b"1",), (b"5",)]),
    (
        dict(record_defaults=[[""]] * 4),
        [['a,"b\n\nx","""c""\n \n0","d\ne"', "f,g,h,i"]],
        [(b"a", b"b\n\nx", b'"c"\n \n0', b"d\ne"), (b"f", b"g", b"h", b"i")],
    ),
    (
        dict(record_defaults=[np.int64(0)] * 4),
        [[",,,", "1,1,1,", ",2,2,2"]],
        [(0, 0, 0, 0), (1, 1, 1, 0), (0, 2, 2, 2)],
    ),
]


@pytest.mark.parametrize("kwargs, inputs, expected", DATASET_CASES)
def test_csv_dataset_as_tensorflow(folder, kwargs, inputs, expected):
    assert _rows(CsvDataset(_write(folder, inputs), **kwargs)) == expected


DATASET_ERRORS = [
    (dict(record_defaults=[[""]] * 3), [['1,2"3,4']], "Unquoted fields cannot have quotes inside"),
    (dict(record_defaults=[[""]] * 3), [['"a"b","c","d"']], "has to be escaped by another quote"),
    (
        dict(record_defaults=[[0]] * 2, select_cols=[3, 4]),
        [["1,2,3,4"]],
        "Expect 2 fields but have 1",
    ),
    (dict(record_defaults=[[]] * 2), [["0,"]], "Field 1 is required but missing in record 0"),
    (dict(record_defaults=[[0.0]] * 2), [["0,1,2,3"]], "Expect 2 fields but have more"),
    (dict(record_defaults=[[0.0]] * 5), [["0,1,2,3"]], "Expect 5 fields but have 4"),
    (dict(record_defaults=[[0]] * 2, header=True), [[]], "Can't read header of file"),
    (dict(record_defaults=[[""]] * 2), [["", "1,2"]], "Expect 2 fields but have 1 in record 0"),
    (dict(record_defaults=[[""]], exclude_cols=[0]), [["1,2,3"]], "Expect 1 fields but have more"),
    (dict(record_defaults=[[""]] * 3, exclude_cols=[0]), [["1,2,3"]], "Expect 3 fields but have 2"),
    (dict(record_defaults=[[""]] * 4), [['a,b,c,"a']], "end of file without closing quoted field"),
    (
        dict(record_defaults=[[0]] * 2),
        [["1,2", "3,x"]],
        "Field 1 is not a valid int32: 'x' in record 1",
    ),
]


@pytest.mark.parametrize("kwargs, inputs, match", DATASET_ERRORS)
def test_csv_dataset_errors(folder, kwargs, inputs, match):
    with pytest.raises(CsvParseError, match=match) as raised:
        list(CsvDataset(_write(folder, inputs), **kwargs))
    assert "temp_0.csv" in str(raised.value)  # the file is named


@pytest.mark.parametrize(
    "rows",
    [
        ['1,"2"3",4', '1,"2"3",4",5,5', 'a,b,"c"d"', "e,f,g"],
        ['1,2"3,4', 'a,b,c"d', '9,8"7,6,5', "e,f,g"],
    ],
)
def test_ignore_errors_drops_only_the_bad_records(folder, rows):
    ds = CsvDataset(_write(folder, [rows]), [[""]] * 3).ignore_errors()
    assert _rows(ds) == [(b"e", b"f", b"g")]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(buffer_size=0), "buffer_size should be positive"),
        (dict(select_cols=[0], exclude_cols=[1, 2]), "Either select_cols or exclude_cols"),
        (dict(select_cols=[1, 0]), "strictly increasing"),
        (dict(exclude_cols=[-1]), "non-negative"),
        (dict(select_cols=[0, 1]), "select_cols should match output size"),
        (dict(record_defaults=[[[0]]]), "at most rank 1"),
        (dict(compression_type="BZ2"), "Unsupported compression_type"),
        (dict(field_delim=""), "field_delim should be only 1 char"),
        (dict(header="yes"), "header must be a bool"),
    ],
)
def test_csv_dataset_bad_arguments(tmp_path, kwargs, match):
    call = dict(filenames=str(tmp_path / "x.csv"), record_defaults=[[""]]) | kwargs
    with pytest.raises(DatasetArgumentError, match=match):
        CsvDataset(**call)


INPUTS = [['"\n\n\n","\r\r\r","abc"', '"0","1","2"', '"","",""']]
EXPECTED = [(b"\n\n\n", b"\r\r\r", b"abc"), (b"0", b"1", b"2"), (b"NA", b"NA", b"NA")]


@pytest.mark.parametrize("linebreak", ["\n", "\r", "\r\n"])
@pytest.mark.parametrize("compression_type", [None, "GZIP", "ZLIB"])
@pytest.mark.parametrize("buffer_size", [1, 2, 7, None])
def test_line_breaks_quotes_compression_and_buffer_sizes(
    folder, linebreak, compression_type, buffer_size
):
    names = _write(folder, INPUTS, linebreak, compression_type)
    ds = CsvDataset(names, [["NA"]] * 3, compression_type, buffer_size)
    assert _rows(ds) == EXPECTED
    plain = _write(folder, [["abc,def,ghi", "0,1,2", ",,"]], linebreak, compression_type)
    got = _rows(CsvDataset(plain, [["NA"]] * 3, compression_type, buffer_size))
    assert got == [(b"abc", b"def", b"ghi"), (b"0", b"1", b"2"), (b"NA", b"NA", b"NA")]


def test_records_longer_than_the_read_buffer(tmp_path):
    long = "x" * (5 << 20)  # > phalanx's 4 MiB reads: a record is re-read across buffers
    path = tmp_path / "long.csv"
    path.write_text(f'1,"{long}\n{long}"\n2,b\n')
    rows = _rows(CsvDataset(str(path), [[0], [""]]))
    assert [r[0] for r in rows] == [1, 2] and rows[0][1] == f"{long}\n{long}".encode()


def test_element_spec_and_repeat():
    ds = CsvDataset("unused.csv", [np.int32, [0.0], ["a"], "float64", np.int64(1)])
    assert ds.element_spec == (
        pdata.TensorSpec((), np.int32),
        pdata.TensorSpec((), np.float32),
        pdata.TensorSpec((), object),
        pdata.TensorSpec((), np.float64),
        pdata.TensorSpec((), np.int64),
    )


def test_a_dataset_of_names(folder):
    _write(folder, [["1,2", "3,4"], ["5,6"]])
    names = pdata.Dataset.list_files(f"{folder}/*.csv", shuffle=False)
    assert _rows(CsvDataset(names, [[0], [0]])) == [(1, 2), (3, 4), (5, 6)]


def test_chained_ops_make_many_iterators(folder):
    names = _write(folder, [["1,,3,4", "5,6,,8"]])
    ds = CsvDataset(names, [[0]] * 4).repeat(5).prefetch(1)
    assert _rows(ds) == [(1, 0, 3, 4), (5, 6, 0, 8)] * 5


@pytest.mark.parametrize("compression_type", [None, "GZIP"])
def test_checkpoint_at_every_row(folder, compression_type):
    """TF's CsvDatasetCheckpointTest: 7 columns, 10 rows, 14 epochs, buffer_size=2."""
    rows = [",".join(str(7 * j + i) for i in range(7)) for j in range(10)]
    names = _write(folder, [rows], compression_type=compression_type)

    def make():
        return CsvDataset(names, [[0]] * 7, compression_type, buffer_size=2, header=True).repeat(3)

    assert_equal_output_after_checkpoint(make)


def test_state_offsets_seek_past_the_header(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text('"a\nb",c\n1,2\n3,4\n')
    it = iter(CsvDataset(str(path), [[0]] * 2, header=True))
    next(it)
    state = it.get_state()
    assert state["node"]["record"] == 1 and state["node"]["offset"] == len('"a\nb",c\n1,2\n')
    it2 = iter(CsvDataset(str(path), [[0]] * 2, header=True))
    it2.set_state(state)
    assert _rows(it2) == [(3, 4)]


def test_auto_shard_by_files(tmp_path):
    names = _write(str(tmp_path), [[f"{f},{r}" for r in range(2)] for f in range(4)])
    ds = CsvDataset(names, [[0], [0]]).batch(2)
    shares = []
    for i in range(2):
        mine, used, _ = auto_shard(ds, 2, i, AutoShardPolicy.FILE)
        assert used == AutoShardPolicy.FILE
        shares.append([row.tolist() for b in mine for row in b[0:1]])
    assert shares == [[[0, 0], [2, 2]], [[1, 1], [3, 3]]]


# --- make_csv_dataset (make_csv_dataset_test.py, the Load CSV data tutorial) --------------------

TITANIC = [
    "survived,sex,age,n_siblings_spouses,fare,class",
    "0,male,22.0,1,7.25,Third",
    "1,female,38.0,1,71.2833,First",
    "1,female,26.0,0,7.925,Third",
    "1,female,35.0,1,53.1,First",
    "0,male,,0,8.4583,Third",
]


def test_infers_names_and_types_as_tensorflow(folder):
    (name,) = _write(folder, [TITANIC])
    ds = make_csv_dataset(name, 5, label_name="survived", num_epochs=1, shuffle=False)
    features, label = next(iter(ds))
    # TF 2.21: int32 for survived and n_siblings_spouses, float32 for age and fare, string else.
    assert {k: v.dtype for k, v in features.items()} == {
        "sex": object,
        "age": np.float32,
        "n_siblings_spouses": np.int32,
        "fare": np.float32,
        "class": object,
    }
    assert label.dtype == np.int32 and label.tolist() == [0, 1, 1, 1, 0]
    assert features["age"].tolist() == [22.0, 38.0, 26.0, 35.0, 0.0]  # missing: default 0
    assert features["sex"].tolist() == [b"male", b"female", b"female", b"female", b"male"]


def test_inference_widens_types():
    from phalanx.data._csv import _infer_type

    assert _infer_type("1", "", None) == "int32"
    assert _infer_type("2147483648", "", "int32") == "int64"
    assert _infer_type("1.5", "", "int64") == "float32"
    assert _infer_type("1e39", "", "float32") == "float64"
    assert _infer_type("abc", "", "float64") == "string"
    assert _infer_type("1", "", "string") == "string"
    assert _infer_type("NA", "NA", "int32") == "int32"
    assert _infer_type("nan", "", None) == "string"  # np.float32('nan') < inf is False, as TF


def test_select_columns_by_name_and_index_keep_the_argument(folder):
    (name,) = _write(folder, [["a,b,c", "1,2,3", "4,5,6"]])
    select = ["c", 0]
    ds = make_csv_dataset(name, 2, select_columns=select, num_epochs=1, shuffle=False)
    (batch,) = list(ds)
    assert select == ["c", 0]  # TF's testImmutableParams
    assert sorted(batch) == ["a", "c"] and batch["c"].tolist() == [3, 6]


def test_column_names_defaults_and_no_header(folder):
    (name,) = _write(folder, [["1,x", "2,y", "3,z"]])
    ds = make_csv_dataset(
        name, 2, column_names=["n", "s"], column_defaults=[np.int64, [""]], header=False,
        num_epochs=1, shuffle=False,
    )  # fmt: skip
    batches = list(ds)
    assert [b["n"].tolist() for b in batches] == [[1, 2], [3]]
    assert batches[0]["n"].dtype == np.int64


def test_batches_repeat_forever_and_drop_the_remainder(folder):
    names = _write(folder, [TITANIC, TITANIC])
    ds = make_csv_dataset(names, 3, shuffle=True, shuffle_seed=1, num_parallel_reads=2)
    it = iter(ds)
    assert [next(it)["fare"].shape for _ in range(5)] == [(3,)] * 5  # 10 rows: repeated
    assert ds.element_spec["fare"].shape == (3,)  # num_epochs=None: drop_remainder, a static batch


def test_ignore_errors_and_compression(folder):
    (name,) = _write(folder, [["a,b", "1,2", "3,x,9", "5,6"]], compression_type="GZIP")
    ds = make_csv_dataset(
        name, 4, column_defaults=[[0], [0]], num_epochs=1, shuffle=False,
        compression_type="GZIP", ignore_errors=True,
    )  # fmt: skip
    (batch,) = list(ds)
    assert batch["a"].tolist() == [1, 5] and batch["b"].tolist() == [2, 6]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(label_name="nope"), "`label_name` provided must be one of the columns"),
        (dict(select_columns=["zz"]), "not a valid column index or name"),
        (dict(select_columns=[7]), "Column index 7 specified in select_columns out of valid"),
        (dict(select_columns=["a", 0]), "select_columns contains duplicate columns"),
        (dict(select_columns=["a"], column_defaults=[[0], [0]]), "must have the same length"),
        (dict(column_names=["a", "a", "b"]), "duplicate column names"),
        (dict(header=False), "Expected `column_names` or `header` arguments"),
        (dict(file_pattern="nothing*.csv"), "No files match"),
        (dict(file_pattern=[]), "should not be empty"),
        (dict(column_names=["a", "b"], num_rows_for_inference=None), "different number of fields"),
    ],
)
def test_make_csv_dataset_errors(tmp_path, kwargs, match):
    (name,) = _write(str(tmp_path), [["a,b,c", "1,2,3"]])
    call = dict(file_pattern=name, batch_size=2) | kwargs
    if call["file_pattern"] == "nothing*.csv":
        call["file_pattern"] = str(tmp_path / "nothing*.csv")
    with pytest.raises(DatasetArgumentError, match=match):
        make_csv_dataset(**call)


def test_different_headers_are_refused(tmp_path):
    names = _write(str(tmp_path), [["a,b", "1,2"], ["a,c", "1,2"]])
    with pytest.raises(DatasetArgumentError, match="Files have different column names"):
        make_csv_dataset(names, 2)


def test_fit_on_a_make_csv_dataset_pipeline(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.float32([1.0, -2.0, 0.5]) > 0).astype(int)
    rows = ["a,b,c,label"] + [f"{a},{b},{c},{t}" for (a, b, c), t in zip(x, y, strict=True)]
    (name,) = _write(str(tmp_path), [rows])
    ds = make_csv_dataset(name, 16, label_name="label", num_epochs=1, shuffle_seed=0)
    ds = ds.map(lambda f, label: (np.stack([f["a"], f["b"], f["c"]], axis=1), label))
    model = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(1, "sigmoid")])
    model.compile(optimizer=phalanx.optimizers.Adam(0.05), loss="binary_crossentropy")
    history = model.fit(ds.repeat(), epochs=5, steps_per_epoch=4, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]


# --- make_csv_dataset_test.py's cases -----------------------------------------------------------

COLS = [f"col{i}" for i in range(5)]
FIVE = [
    [",".join(COLS), "0,1,2,3,4", "5,6,7,8,9"],
    [",".join(COLS), "10,11,12,13,14", "15,16,17,18,19"],
]
FIVE_OUT = [
    [0, 1, 2, 3, b"4"],
    [5, 6, 7, 8, b"9"],
    [10, 11, 12, 13, b"14"],
    [15, 16, 17, 18, b"19"],
]
FIVE_TYPES = [np.array([], np.int32), np.array([], np.int64), np.array([], np.float32),
              np.array([], np.float64), "string"]  # fmt: skip


def _expected_batches(rows, keys, batch_size, num_epochs):
    """TF's ``_next_expected_batch``."""
    features = {k: [] for k in keys}
    for _ in range(num_epochs):
        for values in rows:
            for n, key in enumerate(keys):
                features[key].append(values[n])
            if len(features[keys[0]]) == batch_size:
                yield features
                features = {k: [] for k in keys}
    if features[keys[0]]:
        yield features


def _check(folder, inputs, expected, keys, batch_size=1, num_epochs=1, label_name=None, **kw):
    names = _write(folder, inputs, compression_type=kw.get("compression_type"))
    ds = make_csv_dataset(
        names, batch_size=batch_size, num_epochs=num_epochs, label_name=label_name, **kw
    )
    got = list(ds)
    want = list(_expected_batches(expected, keys, batch_size, num_epochs))
    assert len(got) == len(want)
    for actual, wanted in zip(got, want, strict=True):
        if label_name is not None:
            actual, label = actual
            assert label.tolist() == wanted.pop(label_name)
        assert list(actual) == list(wanted)  # the columns, in column order
        for k in wanted:
            assert actual[k].tolist() == wanted[k]
    return got


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(column_names=COLS, label_name="col0", column_defaults=FIVE_TYPES),
        dict(
            column_names=COLS,
            label_name="col0",
            column_defaults=FIVE_TYPES,
            batch_size=3,
            num_epochs=10,
        ),
        dict(
            column_names=COLS,
            label_name="col0",
            column_defaults=FIVE_TYPES,
            compression_type="GZIP",
        ),
        dict(
            column_names=COLS,
            label_name="col0",
            column_defaults=FIVE_TYPES,
            compression_type="ZLIB",
        ),
        dict(column_names=COLS, column_defaults=FIVE_TYPES),
        dict(
            column_names=COLS,
            label_name="col0",
            column_defaults=[np.int32, np.int64, np.float32, np.float64, str],
        ),
        dict(label_name="col0", column_defaults=FIVE_TYPES),
    ],
)
def test_make_csv_dataset_cases(folder, kwargs):
    got = _check(folder, FIVE, FIVE_OUT, COLS, shuffle=False, header=True, **kwargs)
    features = got[0][0] if "label_name" in kwargs else got[0]
    assert features["col1"].dtype == np.int64 and features["col3"].dtype == np.float64


def test_make_csv_dataset_without_header(folder):
    inputs = [["0,1,2,3,4", "5,6,7,8,9"], ["10,11,12,13,14", "15,16,17,18,19"]]
    _check(
        folder, inputs, FIVE_OUT, COLS, column_names=COLS, label_name="col0",
        column_defaults=FIVE_TYPES, shuffle=False, header=False,
    )  # fmt: skip


BIG = str(2**33)


def test_type_inference(folder):
    inputs = [[",".join(COLS), f"0,{BIG},2.0,3e50,rabbit"]]
    (got,) = _check(
        folder, inputs, [[0, 2**33, 2.0, 3e50, b"rabbit"]], COLS, column_names=COLS,
        label_name="col0", shuffle=False, header=True,
    )  # fmt: skip
    features, label = got
    assert label.dtype == np.int32
    assert [features[c].dtype for c in COLS[1:]] == [np.int64, np.float32, np.float64, object]


def test_type_inference_fallthrough(folder):
    inputs = [[",".join(COLS), ",,,,", "0,0,0.0,0.0,0.0", f"0,{BIG},2.0,3e50,rabbit", ",,,,"]]
    expected = [
        [0, 0, 0, 0, b""],
        [0, 0, 0, 0, b"0.0"],
        [0, 2**33, 2.0, 3e50, b"rabbit"],
        [0, 0, 0, 0, b""],
    ]
    _check(
        folder,
        inputs,
        expected,
        COLS,
        column_names=COLS,
        label_name="col0",
        shuffle=False,
        header=True,
    )


def test_type_inference_mismatch(tmp_path):
    names = _write(str(tmp_path), FIVE)
    with pytest.raises(DatasetArgumentError, match="different number of fields"):
        make_csv_dataset(names, 2, column_names=[*COLS, "extra_name"], num_epochs=10)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(
            column_names=COLS,
            column_defaults=[FIVE_TYPES[i] for i in (1, 3, 4)],
            select_columns=[1, 3, 4],
        ),
        dict(column_names=COLS, select_columns=[1, 3, 4]),
        dict(select_columns=[1, 3, 4]),
        dict(column_names=COLS, select_columns=["col1", "col3", "col4"]),
    ],
)
def test_select_columns_cases(folder, kwargs):
    inputs = [[",".join(COLS), f"0,{BIG},2.0,3e50,rabbit"]]
    keys = [COLS[i] for i in (1, 3, 4)]
    _check(folder, inputs, [[2**33, 3e50, b"rabbit"]], keys, shuffle=False, header=True, **kwargs)


def test_select_columns_errors(tmp_path):
    names = _write(str(tmp_path), [[",".join(COLS), f"0,{BIG},2.0,3e50,rabbit"]])
    with pytest.raises(DatasetArgumentError, match="must have the same length"):
        make_csv_dataset(
            names, 1, column_defaults=FIVE_TYPES, column_names=COLS, select_columns=[1, 3, 4]
        )
    with pytest.raises(DatasetArgumentError, match="not a valid column index or name"):
        make_csv_dataset(
            names, 1, column_defaults=[[0]], column_names=COLS, select_columns=["invalid_col_name"]
        )


def _series(start):
    return ",".join(str(i) for i in range(start, start + 5))


@pytest.mark.parametrize("batch_size", [1, 2])
def test_shuffle_seeds(tmp_path, batch_size):
    inputs = [
        [",".join(COLS)] + [_series(5 * i) for i in range(15)],
        [",".join(COLS)] + [_series(5 * i) for i in range(15, 20)],
    ]
    names = _write(str(tmp_path), inputs)

    def run(seed):
        ds = make_csv_dataset(
            names, batch_size, column_names=COLS, column_defaults=FIVE_TYPES, header=True,
            shuffle=True, shuffle_seed=seed, num_epochs=2,
        )  # fmt: skip
        return [b["col0"].tolist() for b in ds]

    first = run(5)
    assert first == run(5) and first != run(6)
    assert sorted(v for b in first for v in b) == sorted(list(range(0, 100, 5)) * 2)


def test_indefinite_repeat_shape_inference(tmp_path):
    ds = make_csv_dataset(_write(str(tmp_path), FIVE), batch_size=32, num_epochs=None)
    assert all(spec.shape == (32,) for spec in ds.element_spec.values())


def test_make_csv_dataset_auto_shards_by_file(tmp_path):
    inputs = [[",".join(COLS)] + [_series(100 * f + 5 * r) for r in range(2)] for f in range(4)]
    names = _write(str(tmp_path), inputs)
    ds = make_csv_dataset(names, 2, num_epochs=1, shuffle=True, shuffle_seed=3)
    firsts = []
    for i in range(2):
        mine, used, _ = auto_shard(ds, 2, i, AutoShardPolicy.FILE)
        assert used == AutoShardPolicy.FILE
        firsts.append(sorted({v // 100 for b in mine for v in b["col0"].tolist()}))
    assert sorted(firsts[0] + firsts[1]) == [0, 1, 2, 3] and all(len(f) == 2 for f in firsts)


def test_make_csv_dataset_checkpoints_at_every_batch(tmp_path):
    names = _write(str(tmp_path), FIVE)

    def make():
        return make_csv_dataset(
            names, 3, label_name="col0", num_epochs=2, shuffle=True, shuffle_seed=1
        )

    assert_equal_output_after_checkpoint(make)


def test_fit_a_functional_model_on_the_features_dict(tmp_path):
    """The tutorial's form: one named Input per column, concatenated inside the model."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.float32([1.0, -2.0, 0.5]) > 0).astype(int)
    rows = ["a,b,c,label"] + [f"{a},{b},{c},{t}" for (a, b, c), t in zip(x, y, strict=True)]
    (name,) = _write(str(tmp_path), [rows])
    ds = make_csv_dataset(name, 16, label_name="label", num_epochs=1, shuffle_seed=0)
    inputs = {n: phalanx.layers.Input((), name=n) for n in "abc"}
    columns = [phalanx.layers.Reshape((1,))(inputs[n]) for n in "abc"]
    out = phalanx.layers.Dense(1, "sigmoid")(phalanx.layers.Concatenate()(columns))
    model = phalanx.Model(inputs, out)
    model.compile(optimizer=phalanx.optimizers.Adam(0.05), loss="binary_crossentropy")
    losses = model.fit(ds.repeat(), epochs=5, steps_per_epoch=4, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
