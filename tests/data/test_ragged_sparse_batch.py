"""``ragged_batch``, ``sparse_batch``, ``experimental.dense_to_ragged_batch`` /
``dense_to_sparse_batch``, ``batch`` of sparse and ragged values, and what ``fit`` and
``experimental_distribute_dataset`` say about them.

Every expected batch and element spec is what TensorFlow 2.21 gives for the same pipeline
(``tf.data.Dataset.range(1, 6).map(lambda x: tf.range(x))`` where phalanx maps to
``np.arange``), recorded by running it; TF is not a test dependency. Specs are compared as
``(kind, shape, dtype, ragged_rank, row_splits_dtype)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px
from phalanx.data import Dataset, RaggedTensor, SparseTensor
from phalanx.data import experimental as exp
from phalanx.errors import (
    BatchShapeError,
    DatasetArgumentError,
    DatasetTypeError,
    DistributedValueError,
    FitInputError,
)


def conv(v):
    if isinstance(v, SparseTensor):
        return ("sparse", v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist())
    if isinstance(v, RaggedTensor):
        return ("ragged", v.to_list(), [s.dtype.name for s in v.nested_row_splits])
    if isinstance(v, tuple):
        return tuple(conv(x) for x in v)
    if isinstance(v, dict):
        return {k: conv(x) for k, x in v.items()}
    return v.tolist()


def spec(s):
    if isinstance(s, tuple):
        return tuple(spec(x) for x in s)
    if isinstance(s, dict):
        return {k: spec(x) for k, x in s.items()}
    kind = type(s).__name__
    extra = (s.ragged_rank, s.row_splits_dtype.name) if kind == "RaggedTensorSpec" else ()
    return (kind, s.shape, s.dtype.name, *extra)


def rng():
    return Dataset.range(1, 6).map(lambda x: np.arange(x))


def run(ds):
    return spec(ds.element_spec), [conv(b) for b in ds]


R = "RaggedTensorSpec"
S = "SparseTensorSpec"
T = "TensorSpec"
FIVE = [("ragged", [[0], [0, 1]], ["int64"]), ("ragged", [[0, 1, 2], [0, 1, 2, 3]], ["int64"])]
LAST = ("ragged", [[0, 1, 2, 3, 4]], ["int64"])


def test_ragged_batch_of_vectors_as_tf():
    assert run(rng().ragged_batch(2)) == ((R, (None, None), "int64", 1, "int64"), [*FIVE, LAST])
    assert run(rng().ragged_batch(2, drop_remainder=True)) == (
        (R, (2, None), "int64", 1, "int64"),
        FIVE,
    )
    got = run(rng().ragged_batch(2, row_splits_dtype="int32"))
    assert got[0] == (R, (None, None), "int64", 1, "int32")
    assert [b[2] for b in got[1]] == [["int32"]] * 3
    assert run(rng().apply(exp.dense_to_ragged_batch(2))) == run(rng().ragged_batch(2))
    assert [rng().ragged_batch(2).cardinality(), rng().ragged_batch(2, True).cardinality()] == [
        3,
        2,
    ]


def test_ragged_batch_keeps_fixed_shapes_dense_as_tf():
    ds = Dataset.range(1, 4).map(
        lambda x: (np.arange(x), x, {"s": np.array([b"a"] * int(x), object)})
    )
    assert run(ds.ragged_batch(2)) == (
        (
            (R, (None, None), "int64", 1, "int64"),
            (T, (None,), "int64"),
            {"s": (R, (None, None), "object", 1, "int64")},
        ),
        [
            (
                ("ragged", [[0], [0, 1]], ["int64"]),
                [1, 2],
                {"s": ("ragged", [[b"a"], [b"a", b"a"]], ["int64"])},
            ),
            (
                ("ragged", [[0, 1, 2]], ["int64"]),
                [3],
                {"s": ("ragged", [[b"a", b"a", b"a"]], ["int64"])},
            ),
        ],
    )
    fixed = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).ragged_batch(2)
    assert run(fixed) == ((T, (None, 2), "int64"), [[[0, 1], [2, 3]], [[4, 5]]])
    assert run(Dataset.range(3).ragged_batch(2)) == ((T, (None,), "int64"), [[0, 1], [2]])


def ones(shape):
    return Dataset.range(1, 4).map(lambda x: np.ones(shape(int(x)), np.int32))


def test_ragged_batch_of_matrices_as_tf():
    assert run(ones(lambda x: (x, 2)).ragged_batch(2)) == (
        (R, (None, None, 2), "int32", 1, "int64"),
        [
            ("ragged", [[[1, 1]], [[1, 1], [1, 1]]], ["int64"]),
            ("ragged", [[[1, 1], [1, 1], [1, 1]]], ["int64"]),
        ],
    )
    assert run(ones(lambda x: (2, x)).ragged_batch(2)) == (
        (R, (None, 2, None), "int32", 2, "int64"),
        [
            ("ragged", [[[1], [1]], [[1, 1], [1, 1]]], ["int64", "int64"]),
            ("ragged", [[[1, 1, 1], [1, 1, 1]]], ["int64", "int64"]),
        ],
    )
    assert run(ones(lambda x: (x, x)).ragged_batch(2)) == (
        (R, (None, None, None), "int32", 2, "int64"),
        [
            ("ragged", [[[1]], [[1, 1], [1, 1]]], ["int64", "int64"]),
            ("ragged", [[[1, 1, 1], [1, 1, 1], [1, 1, 1]]], ["int64", "int64"]),
        ],
    )


def test_batching_ragged_and_sparse_values_as_tf():
    twice = [
        ("ragged", [[[0], [0, 1]], [[0, 1, 2], [0, 1, 2, 3]]], ["int64", "int64"]),
        ("ragged", [[[0, 1, 2, 3, 4]]], ["int64", "int64"]),
    ]
    assert run(rng().ragged_batch(2).ragged_batch(2)) == (
        (R, (None, None, None), "int64", 2, "int64"),
        twice,
    )
    assert run(rng().ragged_batch(2).batch(2)) == (
        (R, (None, None, None), "int64", 2, "int64"),
        twice,
    )
    rows = Dataset.range(1, 4).map(lambda x: RaggedTensor.from_row_lengths(np.arange(x), [x]))
    expected = (
        (R, (None, 1, None), "int64", 2, "int64"),
        [
            ("ragged", [[[0]], [[0, 1]]], ["int64", "int64"]),
            ("ragged", [[[0, 1, 2]]], ["int64", "int64"]),
        ],
    )
    assert run(rows.ragged_batch(2)) == expected
    assert run(rows.batch(2)) == expected
    sparse = Dataset.range(1, 4).map(
        lambda x: SparseTensor(np.arange(1, x)[:, None], np.arange(1, x), [x])
    )  # tf.sparse.from_dense(tf.range(x)): the nonzero values
    assert run(sparse.batch(2)) == (
        (S, (None, None), "int64"),
        [("sparse", [[1, 1]], [1], [2, 2]), ("sparse", [[0, 1], [0, 2]], [1, 2], [1, 3])],
    )


def test_unbatch_of_ragged_and_sparse_batches_as_tf():
    rows = [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4]]
    # TF: RaggedTensorSpec(TensorShape([None]), tf.int64, 0, tf.int64), its values dense tensors
    got = run(rng().ragged_batch(2).unbatch())
    assert got == ((T, (None,), "int64"), rows)
    nested = rng().ragged_batch(2).ragged_batch(2).unbatch()
    assert run(nested) == ((R, (None, None), "int64", 1, "int64"), [*FIVE, LAST])
    pairs = Dataset.range(1, 4).map(lambda x: (np.arange(x), x)).ragged_batch(2).unbatch()
    assert run(pairs) == (
        ((T, (None,), "int64"), (T, (), "int64")),
        [([0], 1), ([0, 1], 2), ([0, 1, 2], 3)],
    )
    sparse = run(rng().sparse_batch(2, [5]).unbatch())
    assert sparse[0] == (S, (5,), "int64")
    assert sparse[1] == [
        ("sparse", [[j] for j in range(k)], list(range(k)), [5]) for k in range(1, 6)
    ]


def test_a_dense_guess_that_later_elements_break_is_a_clear_error():
    # phalanx infers a map's shape from its first element; the first batch (two 3-vectors)
    # agrees, the second does not: TF (tracing) would have batched ragged.
    ds = Dataset.from_tensor_slices(np.array([3, 3, 4])).map(lambda n: np.arange(n))
    with pytest.raises(BatchShapeError, match="component 0 has shapes .*took it as dense"):
        list(ds.ragged_batch(2))


def test_ragged_batch_refusals():
    # TF: InvalidArgumentError "Batch size must be greater than zero."
    with pytest.raises(DatasetArgumentError, match="batch_size must be a positive int, got 0"):
        rng().ragged_batch(0)
    with pytest.raises(DatasetArgumentError, match="row_splits_dtype must be int32 or int64"):
        rng().ragged_batch(2, row_splits_dtype="float32")
    with pytest.raises(DatasetArgumentError, match="drop_remainder must be True or False"):
        rng().ragged_batch(2, drop_remainder="no")


SB5 = [
    ("sparse", [[0, 0], [1, 0], [1, 1]], [0, 0, 1], [2, 5]),
    (
        "sparse",
        [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [1, 3]],
        [0, 1, 2, 0, 1, 2, 3],
        [2, 5],
    ),
    ("sparse", [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4]], [0, 1, 2, 3, 4], [1, 5]),
]


def test_sparse_batch_as_tf():
    assert run(rng().sparse_batch(2, [5])) == ((S, (None, 5), "int64"), SB5)
    assert run(rng().apply(exp.dense_to_sparse_batch(2, [5]))) == ((S, (None, 5), "int64"), SB5)
    widest = [b[:3] + ([b[3][0], w],) for b, w in zip(SB5, [2, 4, 5], strict=True)]
    assert run(rng().sparse_batch(2, [None])) == ((S, (None, None), "int64"), widest)
    matrices = Dataset.range(1, 4).map(lambda x: np.arange(2 * x).reshape(x, 2))
    assert run(matrices.sparse_batch(2, [3, 2])) == (
        (S, (None, 3, 2), "int64"),
        [
            (
                "sparse",
                [[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1]],
                [0, 1, 0, 1, 2, 3],
                [2, 3, 2],
            ),
            (
                "sparse",
                [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 2, 0], [0, 2, 1]],
                [0, 1, 2, 3, 4, 5],
                [1, 3, 2],
            ),
        ],
    )
    assert run(Dataset.range(3).sparse_batch(2, [])) == (
        (S, (None,), "int64"),
        [("sparse", [[0], [1]], [0, 1], [2]), ("sparse", [[0]], [2], [1])],
    )
    zeros = Dataset.from_tensor_slices(np.array([[0, 1], [2, 0]], np.int32)).sparse_batch(2, [2])
    assert run(zeros) == (  # every value, zeros too
        (S, (None, 2), "int32"),
        [("sparse", [[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 2, 0], [2, 2])],
    )
    assert rng().sparse_batch(2, [5]).cardinality() == 3


def test_sparse_batch_refusals_as_tf():
    # TF: DataLossError "Input element had shape ([4]) that is larger than the row shape ([3])."
    with pytest.raises(
        BatchShapeError, match=r"had shape \(4,\) that is larger than the row shape"
    ):
        list(rng().sparse_batch(2, [3]))
    # TF: InvalidArgumentError "Input element had shape ([1]) that is incompatible with the row
    # shape ([5,5])."
    with pytest.raises(
        BatchShapeError, match=r"had shape \(1,\) that is incompatible with the row"
    ):
        list(rng().sparse_batch(2, [5, 5]))
    # TF: ValueError "Dimension -1 must be >= 0"
    with pytest.raises(DatasetArgumentError, match="Dimension -1 must be >= 0"):
        rng().sparse_batch(2, [-1])
    # TF: TypeError "`dense_to_sparse_batch` requires an input dataset whose elements have a
    # single component, but the given dataset has the following component types: ..."
    with pytest.raises(
        DatasetTypeError, match="requires an input dataset whose elements have a single"
    ):
        Dataset.range(1, 3).map(lambda x: (np.arange(x), x)).sparse_batch(2, [3])
    # TF: InvalidArgumentError "Batch size must be greater than zero."
    with pytest.raises(DatasetArgumentError, match="batch_size must be a positive int"):
        rng().sparse_batch(0, [5])


def test_checkpoint_resumes_a_ragged_batch_exactly():
    ds = rng().ragged_batch(2)
    it = iter(ds)
    next(it)
    state = it.get_state()
    rest = [b.to_list() for b in it]
    again = iter(ds)
    again.set_state(state)
    assert [b.to_list() for b in again] == rest == [[[0, 1, 2], [0, 1, 2, 3]], [[0, 1, 2, 3, 4]]]


def test_fit_and_distribute_refuse_ragged_and_sparse_batches_saying_how_to_pad():
    ds = Dataset.range(1, 6).map(lambda x: (np.arange(x).astype(np.float32), np.float32(x)))
    ragged = ds.ragged_batch(2)
    model = px.Sequential([px.layers.Dense(1)])
    model.compile(loss="mse", optimizer="sgd")
    with pytest.raises(
        FitInputError, match=r"takes dense batches.*\[0\]: RaggedTensorSpec.*to_tensor"
    ):
        model.fit(ragged, epochs=1, verbose=0)
    strategy = px.MirroredStrategy()
    with pytest.raises(
        DistributedValueError, match=r"experimental_distribute_dataset\) takes dense"
    ):
        next(iter(strategy.experimental_distribute_dataset(ragged)))
    sparse = Dataset.range(1, 6).map(lambda x: np.arange(x).astype(np.float32)).sparse_batch(2, [5])
    with pytest.raises(FitInputError, match="SparseTensorSpec.*to_dense"):
        model.fit(sparse, epochs=1, verbose=0)
    padded = ragged.map(lambda x, y: (x.to_tensor(shape=[None, 5])[:, :5], y))
    history = model.fit(padded, epochs=1, verbose=0)  # what the message says works
    assert len(history.history["loss"]) == 1


@pytest.mark.parametrize(
    "apply,method",
    [
        (lambda ds, tmp: list(ds.rebatch(1)), "rebatch"),
        (lambda ds, tmp: ds.padded_batch(2), "padded_batch"),
        (lambda ds, tmp: list(ds.cache(str(tmp / "c"))), r"cache\(filename\)"),
        (lambda ds, tmp: ds.save(str(tmp / "s")), "save"),
        (lambda ds, tmp: Dataset.from_tensor_slices(next(iter(ds))), "from_tensor_slices"),
    ],
)
def test_what_takes_dense_components_only_says_so(apply, method, tmp_path):
    # tf.data takes sparse and ragged components in each of these (a documented difference)
    with pytest.raises(DatasetTypeError, match=f"{method} takes dense"):
        apply(rng().ragged_batch(2), tmp_path)
    assert next(b.to_list() for b in rng().ragged_batch(2).cache()) == [[0], [0, 1]]  # in memory
