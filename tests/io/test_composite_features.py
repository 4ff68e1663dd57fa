"""``SparseFeature`` and ``RaggedFeature`` in ``parse_example``/``parse_single_example``.

Every expected value below is what TensorFlow 2.21 gives for the same records and specs
(``tf.io.parse_example`` / ``parse_single_example``, recorded by running it; TF is not a
test dependency). A SparseTensor is compared as ``(indices, values, dense_shape)``, a
RaggedTensor as ``(to_list(), row_splits dtypes, shape)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.errors import ExampleParseError
from phalanx.io import (
    FixedLenFeature,
    RaggedFeature,
    RaggedTensor,
    SparseFeature,
    SparseTensor,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from phalanx.io._example import serialize_example

R = RaggedFeature


def ex(**features) -> bytes:
    return serialize_example({k: np.asarray(v) for k, v in features.items()})


def sparse(st: SparseTensor) -> tuple:
    assert isinstance(st, SparseTensor)
    return st.indices.tolist(), st.values.tolist(), st.dense_shape.tolist()


def ragged(rt: RaggedTensor) -> tuple:
    assert isinstance(rt, RaggedTensor)
    return rt.to_list(), [s.dtype.name for s in rt.nested_row_splits], rt.shape


EMPTY = serialize_example({})
A = ex(val=np.float32([0.5, -1.0]), ix0=[3, 20], ix1=[1, 0])
B = ex(val=np.float32([2.0]), ix0=[5], ix1=[2])
U = ex(val=np.float32([1, 2, 3]), ix=[7, 2, 5])
SF2 = {
    "sp": SparseFeature(index_key=["ix0", "ix1"], value_key="val", dtype="float32", size=[100, 3])
}
SF1 = {"sp": SparseFeature(index_key="ix", value_key="val", dtype="float32", size=10)}


# -- SparseFeature ---------------------------------------------------------------------------


def test_sparse_feature_two_index_keys_as_tf():
    assert sparse(parse_single_example(A, SF2)["sp"]) == ([[3, 1], [20, 0]], [0.5, -1.0], [100, 3])
    assert sparse(parse_example([A, B, EMPTY], SF2)["sp"]) == (
        [[0, 3, 1], [0, 20, 0], [1, 5, 2]],
        [0.5, -1.0, 2.0],
        [3, 100, 3],
    )


def test_sparse_feature_sorts_unless_already_sorted_as_tf():
    assert sparse(parse_single_example(U, SF1)["sp"]) == ([[2], [5], [7]], [2.0, 3.0, 1.0], [10])
    assert sparse(parse_example([U, EMPTY], SF1)["sp"]) == (
        [[0, 2], [0, 5], [0, 7]],
        [2.0, 3.0, 1.0],
        [2, 10],
    )
    as_is = {"sp": SparseFeature("ix", "val", "float32", 10, already_sorted=True)}
    assert sparse(parse_single_example(U, as_is)["sp"]) == ([[7], [2], [5]], [1.0, 2.0, 3.0], [10])


def test_sparse_feature_strings_and_a_shared_value_key_as_tf():
    rec = ex(w=np.array([b"x", b"y"], object), i=[1, 0])
    out = parse_example([rec], {"s": SparseFeature("i", "w", "string", 2)})
    assert sparse(out["s"]) == ([[0, 0], [0, 1]], [b"y", b"x"], [1, 2])
    both = parse_single_example(U, {**SF1, "val": VarLenFeature("float32")})
    assert sparse(both["sp"]) == ([[2], [5], [7]], [2.0, 3.0, 1.0], [10])
    assert sparse(both["val"]) == ([[0], [1], [2]], [1.0, 2.0, 3.0], [3])
    assert set(both) == {"sp", "val"}  # the index key is read, not returned (TF)


def test_sparse_feature_index_out_of_size_parses_and_to_dense_raises_as_tf():
    # TF 2.21: parse gives indices [[12]] with dense_shape [10]; tf.sparse.to_dense raises
    # InvalidArgumentError "indices[0] = [12] is out of bounds: need 0 <= index < [10]"
    st = parse_single_example(ex(val=np.float32([1]), ix=[12]), SF1)["sp"]
    assert sparse(st) == ([[12]], [1.0], [10])
    with pytest.raises(ValueError, match=r"indices\[0\] = \[12\] is out of bounds"):
        st.to_dense()


def test_sparse_feature_refusals_as_tf():
    # TF: TypeError "vocab_size has to be a Tensor or Python int. Found <class 'list'>"
    with pytest.raises(TypeError, match="vocab_size has to be a Tensor or Python int"):
        parse_single_example(U, {"sp": SparseFeature("ix", "val", "float32", [10])})
    # TF: TypeError "vocab_size has to be a list of Tensors or Python ints. Found <class 'int'>"
    with pytest.raises(TypeError, match="vocab_size has to be a list of Tensors or Python ints"):
        parse_single_example(U, {"sp": SparseFeature(["ix"], "val", "float32", 10)})
    # TF: ValueError "sp_ids and vocab_size have to have equal lengths."
    with pytest.raises(ValueError, match="sp_ids and vocab_size have to have equal lengths"):
        parse_single_example(A, {"sp": SparseFeature(["ix0", "ix1"], "val", "float32", [10])})
    # TF: ValueError "Missing index_key for SparseFeature SparseFeature(index_key=[], ..."
    with pytest.raises(ValueError, match="Missing index_key for SparseFeature"):
        parse_single_example(U, {"sp": SparseFeature([], "val", "float32", [])})
    # TF: ValueError "Dense and sparse keys must not intersect; ... intersection: {'val'}"
    with pytest.raises(ValueError, match=r"Dense and sparse keys must not intersect.*'val'"):
        parse_single_example(U, {**SF1, "val": FixedLenFeature([3], "float32")})
    # TF: InvalidArgumentError "Key: ix.  Data types don't match. Expected type: int64"
    with pytest.raises(ExampleParseError, match="data types don't match"):
        parse_single_example(ex(val=np.float32([1]), ix=np.float32([1])), SF1)


def test_sparse_feature_value_and_index_counts_must_match_as_tf():
    # TF 2.21: ValueError "Dimensions 2 and 3 are not compatible" (single and batch)
    mismatch = ex(val=np.float32([1, 2, 3]), ix=[7, 2])
    with pytest.raises(ValueError, match="index feature 'ix' has 2 values but value feature"):
        parse_single_example(mismatch, SF1)
    with pytest.raises(ValueError, match="in record 1: index feature 'ix' has 2 values"):
        parse_example([U, mismatch], SF1)


# -- RaggedFeature ---------------------------------------------------------------------------

V = [3, 1, 4, 1, 5, 9]
TF_DOC = [
    ex(v=[3, 1, 4, 1, 5, 9], s1=[0, 2, 3, 3, 6], s2=[0, 2, 3, 4]),
    ex(v=[2, 7, 1, 8, 2, 8, 1], s1=[0, 3, 4, 5, 7], s2=[0, 1, 1, 4]),
]
DOC_FEATURES = {
    "f1": R(value_key="v", dtype="int64"),
    "f2": R(value_key="v", dtype="int64", partitions=[R.RowSplits("s1")]),
    "f3": R(value_key="v", dtype="int64", partitions=[R.RowSplits("s2"), R.RowSplits("s1")]),
}


def test_ragged_feature_tf_docstring_example():
    one = parse_single_example(TF_DOC[0], DOC_FEATURES)
    assert isinstance(one["f1"], np.ndarray) and one["f1"].tolist() == V
    assert one["f2"].to_list() == [[3, 1], [4], [], [1, 5, 9]]
    assert one["f3"].to_list() == [[[3, 1], [4]], [[]], [[1, 5, 9]]]
    batch = parse_example(TF_DOC, DOC_FEATURES)
    assert ragged(batch["f1"]) == ([V, [2, 7, 1, 8, 2, 8, 1]], ["int32"], (2, None))
    assert batch["f2"].to_list() == [[[3, 1], [4], [], [1, 5, 9]], [[2, 7, 1], [8], [2], [8, 1]]]
    assert batch["f3"].to_list() == [
        [[[3, 1], [4]], [[]], [[1, 5, 9]]],
        [[[2, 7, 1]], [], [[8], [2], [8, 1]]],
    ]
    assert ragged(batch["f3"])[1:] == (["int32"] * 3, (2, None, None, None))


R1 = ex(v=[1, 2, 3, 4, 5, 6], l=[2, 0, 4], st=[0, 2, 2], lim=[2, 2, 6], ids=[0, 0, 2, 2, 2, 2])
R2 = ex(v=[7], l=[1], st=[0], lim=[1], ids=[1])
ROWS = [[1, 2], [], [3, 4, 5, 6]]


@pytest.mark.parametrize(
    "partition,second",
    [
        (R.RowLengths("l"), [[7]]),
        (R.RowStarts("st"), [[7]]),
        (R.RowLimits("lim"), [[7]]),
        (R.ValueRowIds("ids"), [[], [7]]),  # TF: nrows = last id + 1 per example
    ],
)
def test_ragged_feature_partitions_as_tf(partition, second):
    features = {"r": R("int64", value_key="v", partitions=[partition])}
    assert ragged(parse_single_example(R1, features)["r"]) == (ROWS, ["int32"], (3, None))
    assert ragged(parse_example([R1, R2, EMPTY], features)["r"]) == (
        [ROWS, second, []],
        ["int32", "int32"],
        (3, None, None),
    )


def test_ragged_feature_uniform_row_length_as_tf():
    inner = {"r": R("int64", value_key="v", partitions=[R.UniformRowLength(2)])}
    out = parse_single_example(R1, inner)["r"]  # TF: a dense (3, 2) tensor
    assert isinstance(out, np.ndarray) and out.tolist() == [[1, 2], [3, 4], [5, 6]]
    # TF: InvalidArgumentError "Input to reshape is a tensor with 7 values, but the requested
    # shape requires a multiple of 2"
    with pytest.raises(ExampleParseError, match="do not split into rows of 2"):
        parse_example([R1, R2, EMPTY], inner)
    rec = ex(v=[1, 2, 3, 4, 5, 6], l2=[1, 0, 2])
    both = {"r": R("int64", value_key="v", partitions=[R.RowLengths("l2"), R.UniformRowLength(2)])}
    assert ragged(parse_single_example(rec, both)["r"]) == (
        [[[1, 2]], [], [[3, 4], [5, 6]]],
        ["int32"],
        (3, None, 2),
    )
    assert ragged(parse_example([rec, EMPTY], both)["r"]) == (
        [[[[1, 2]], [], [[3, 4], [5, 6]]], []],
        ["int32", "int32"],
        (2, None, None, 2),
    )
    outer = {"r": R("int64", value_key="v", partitions=[R.UniformRowLength(3), R.RowLengths("l")])}
    assert ragged(parse_single_example(R1, outer)["r"]) == (
        [[[1, 2], [], [3, 4, 5, 6]]],
        ["int32", "int32"],
        (1, 3, None),
    )


def test_ragged_feature_defaults_missing_and_strings_as_tf():
    out = parse_example([R1, EMPTY], {"v": R("int64", row_splits_dtype="int64")})
    assert ragged(out["v"]) == ([[1, 2, 3, 4, 5, 6], []], ["int64"], (2, None))
    assert ragged(parse_example([EMPTY, EMPTY], {"v": R("float32")})["v"]) == (
        [[], []],
        ["int32"],
        (2, None),
    )
    single = parse_single_example(EMPTY, {"v": R("float32")})["v"]
    assert single.tolist() == [] and single.dtype == np.float32
    strings = parse_example([ex(w=np.array([b"a", b"bc"], object)), EMPTY], {"w": R("string")})
    assert ragged(strings["w"]) == ([[b"a", b"bc"], []], ["int32"], (2, None))


def test_ragged_feature_key_conflicts_as_tf():
    # TF: ValueError "Ragged and sparse keys must not intersect; ... intersection: {'v'}"
    with pytest.raises(ValueError, match="Ragged and sparse keys must not intersect"):
        parse_single_example(R1, {"r": R("int64", value_key="v"), "v": VarLenFeature("int64")})
    # TF: ValueError "Dense and ragged keys must not intersect; ..."
    with pytest.raises(ValueError, match="Dense and ragged keys must not intersect"):
        parse_single_example(
            R1, {"r": R("int64", value_key="v"), "v": FixedLenFeature([6], "int64")}
        )
    # TF: ValueError "Conflicting type <dtype: 'float32'> vs <dtype: 'int64'> for feature v."
    with pytest.raises(ValueError, match="Conflicting type .* for feature v"):
        parse_single_example(R1, {"r": R("int64", value_key="v"), "q": R("float32", value_key="v")})


def test_ragged_feature_partitions_are_always_checked():
    # TF 2.21 with validate=False returns [[1], [2]] for 3 values and lengths [1, 1] (an
    # invalid RaggedTensor); with validate=True it raises InvalidArgumentError. phalanx always
    # checks (documented), also lengths [2, 0, 4] over 3 rows of UniformRowLength(2).
    over = {"r": R("int64", value_key="v", partitions=[R.RowLengths("l"), R.UniformRowLength(2)])}
    with pytest.raises(ExampleParseError, match="end at len\\(values\\) = 3"):
        parse_single_example(R1, over)
    bad = ex(v=[1, 2, 3], l=[1, 1])
    for validate in (False, True):
        features = {
            "r": R("int64", value_key="v", partitions=[R.RowLengths("l")], validate=validate)
        }
        with pytest.raises(ExampleParseError, match="RowLengths.*does not fit its values"):
            parse_single_example(bad, features)
        with pytest.raises(ExampleParseError, match="in record 0: partition"):
            parse_example([bad], features)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        # TF: ValueError "Argument `dtype` must be int64, float32, or bytes; got tf.int32"
        ({"dtype": "int32"}, ValueError, "Argument `dtype` must be int64, float32, or bytes"),
        # TF: ValueError "Argument `row_splits_dtype` must be int32 or int64; got tf.float32"
        ({"row_splits_dtype": "float32"}, ValueError, "Argument `row_splits_dtype` must be int32"),
        # TF: TypeError "Argument `partitions` must be a list or tuple. Received partitions=x"
        ({"partitions": "x"}, TypeError, "Argument `partitions` must be a list or tuple"),
        # TF: TypeError "Argument `partitions` cannot be cast to any of the partition types"
        ({"partitions": ["x"]}, TypeError, "Argument `partitions` must hold"),
        # TF: TypeError "Argument `validate` must be a bool; got 1"
        ({"validate": 1}, TypeError, "Argument `validate` must be a bool; got 1"),
        # TF: ValueError "Argument `value_key` must not be empty" / "must be a string; got 3"
        ({"value_key": ""}, ValueError, "Argument `value_key` must be a non-empty string"),
        ({"value_key": 3}, ValueError, "Argument `value_key` must be a non-empty string"),
    ],
)
def test_ragged_feature_constructor_refusals_as_tf(kwargs, error, message):
    with pytest.raises(error, match=message):
        R(**{"dtype": "int64", **kwargs})


def test_plain_features_are_unchanged_beside_composite_ones():
    rec = ex(v=[1, 2], d=np.float32([0.5]))
    out = parse_example(
        [rec, rec], {"r": R("int64", value_key="v"), "d": FixedLenFeature([], "float32")}
    )
    assert out["d"].tolist() == [0.5, 0.5] and out["r"].to_list() == [[1, 2], [1, 2]]
