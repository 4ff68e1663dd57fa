"""``Dataset.window`` and ``Dataset.unique`` as a reader ports tf.data code: the same
elements in the same order as TensorFlow 2.21 (printed there: the lists below), the same
cardinality, checkpointable iterators, and phalanx errors for bad arguments."""

from __future__ import annotations

import json

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.errors import DatasetArgumentError, DatasetTypeError

# (input length, window arguments) -> (cardinality, windows), as TF 2.21 prints them
WINDOWS = [
    (7, {"size": 3}, 3, [[0, 1, 2], [3, 4, 5], [6]]),
    (7, {"size": 3, "shift": 1}, 7, [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6], [5, 6], [6]]),
    (7, {"size": 3, "shift": 1, "drop_remainder": True}, 5, [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]),
    (7, {"size": 2, "shift": 3}, 3, [[0, 1], [3, 4], [6]]),
    (7, {"size": 2, "shift": 3, "drop_remainder": True}, 2, [[0, 1], [3, 4]]),
    (10, {"size": 3, "shift": 2, "stride": 2}, 5, [[0, 2, 4], [2, 4, 6], [4, 6, 8], [6, 8], [8]]),
    (10, {"size": 3, "shift": 2, "stride": 2, "drop_remainder": True}, 3, [[0, 2, 4], [2, 4, 6], [4, 6, 8]]),
    (0, {"size": 3}, 0, []),
    (2, {"size": 3, "drop_remainder": True}, 0, []),
    (7, {"size": 1, "shift": 4, "stride": 5}, 2, [[0], [4]]),
]  # fmt: skip


@pytest.mark.parametrize(("n", "kwargs", "cardinality", "windows"), WINDOWS)
def test_window_elements_and_cardinality_as_tf(n, kwargs, cardinality, windows):
    ds = Dataset.range(n).window(**kwargs)
    assert ds.cardinality() == cardinality
    assert [[int(x) for x in window] for window in ds] == windows
    batched = ds.flat_map(lambda w: w.batch(kwargs["size"]))
    assert [b.tolist() for b in batched] == windows


def test_window_cardinality_unknown_or_infinite_as_tf():
    assert Dataset.range(7).filter(lambda x: x > 0).window(2).cardinality() == -2
    assert Dataset.range(7).repeat().window(2).cardinality() == -1


def test_window_of_tuples_is_a_tuple_of_datasets():
    x, y = np.arange(5), np.arange(5) * 10
    ds = Dataset.from_tensor_slices((x, y)).window(2)
    spec = ds.element_spec
    assert isinstance(spec, tuple) and len(spec) == 2
    assert spec[0].element_spec == phalanx.data.TensorSpec((), "int64")
    pairs = ds.flat_map(lambda a, b: Dataset.zip((a.batch(2), b.batch(2))))
    got = [(a.tolist(), b.tolist()) for a, b in pairs]
    assert got == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4], [40])]
    (window,) = Dataset.from_tensor_slices({"a": np.arange(3)}).window(3)
    assert list(window) == ["a"] and [int(v) for v in window["a"]] == [0, 1, 2]


def test_time_series_windows_train_a_model():
    """The time-series recipe: windows of 5 steps, the first 4 as inputs, the last as target."""
    series = np.sin(np.arange(64, dtype=np.float32) / 4)
    ds = (
        Dataset.from_tensor_slices(series)
        .window(5, shift=1, drop_remainder=True)
        .flat_map(lambda w: w.batch(5))
        .map(lambda w: (w[:4], w[4:]))
        .batch(20)
    )
    model = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    first = next(iter(ds))
    np.testing.assert_allclose(first[0][1], series[1:5])
    np.testing.assert_allclose(first[1][1], series[5:6])


def _restored_at_every_step(make_dataset):
    """For each k, the state after k elements (through JSON) restores the rest exactly."""
    it = iter(make_dataset())
    states, full = [json.loads(json.dumps(it.get_state()))], []
    for x in it:
        full.append(x)
        states.append(json.loads(json.dumps(it.get_state())))
    for k, state in enumerate(states):
        again = iter(make_dataset())
        again.set_state(state)
        rest = list(again)
        assert len(rest) == len(full) - k, f"restored at step {k}"
        for a, b in zip(rest, full[k:], strict=True):
            np.testing.assert_array_equal(a, b)
    return full


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 3, "shift": 1},
        {"size": 2, "shift": 3},
        {"size": 3, "shift": 2, "stride": 2, "drop_remainder": True},
    ],
)
def test_window_iterator_checkpoints(kwargs):
    def make():
        return (
            Dataset.range(11)
            .shuffle(4, seed=7)
            .window(**kwargs)
            .flat_map(lambda w: w.batch(kwargs["size"]))
        )

    full = _restored_at_every_step(make)
    assert len(full) == make().cardinality() or make().cardinality() == -2


def test_window_iterator_state_mid_window():
    """A state taken inside a window (flat_map reading it element by element) restores there."""

    def make():
        return Dataset.range(9).window(4, shift=2).flat_map(lambda w: w)

    full = _restored_at_every_step(make)
    assert [int(x) for x in full] == [0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 8]


def test_unique_as_tf():
    ds = Dataset.from_tensor_slices(np.array([1, 37, 2, 37, 2, 1], np.int32)).unique()
    assert [int(x) for x in ds] == [1, 37, 2]
    assert ds.cardinality() == -2
    assert ds.element_spec == phalanx.data.TensorSpec((), "int32")
    words = Dataset.from_tensor_slices(np.array([b"a", b"b", b"a"], object))
    assert list(words.unique().as_numpy_iterator()) == [b"a", b"b"]
    applied = Dataset.from_tensor_slices(np.array([1, 37, 2, 37])).apply(
        phalanx.data.experimental.unique()
    )
    assert [int(x) for x in applied] == [1, 37, 2]
    rows = Dataset.from_tensor_slices(np.array([[1, 2], [1, 2], [2, 1]])).unique()
    assert [r.tolist() for r in rows] == [[1, 2], [2, 1]]


def test_unique_iterator_checkpoints():
    def make():
        return Dataset.range(30).map(lambda x: x % 7).shuffle(10, seed=3).unique()

    full = _restored_at_every_step(make)
    assert sorted(int(x) for x in full) == list(range(7))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda ds: ds.window(0), DatasetArgumentError, r"window: size must be a positive int, got 0"),
        (lambda ds: ds.window(-1), DatasetArgumentError, r"size must be a positive int, got -1"),
        (lambda ds: ds.window(2.0), DatasetArgumentError, r"size must be a positive int, got 2.0"),
        (lambda ds: ds.window(2, shift=0), DatasetArgumentError, r"shift must be a positive int"),
        (lambda ds: ds.window(2, stride=0), DatasetArgumentError, r"stride must be a positive int"),
        (lambda ds: ds.window(2, drop_remainder="yes"), DatasetArgumentError, r"drop_remainder must be True or False"),
        (lambda ds: ds.map(lambda x: x * 0.5).unique(), DatasetTypeError, r"unique: elements of dtype float64"),
        (lambda ds: ds.map(lambda x: x.astype(np.uint8)).unique(), DatasetTypeError, r"dtype uint8 are not supported"),
        (lambda ds: ds.map(lambda x: (x, x)).unique(), DatasetTypeError, r"must be a single component"),
    ],
)  # fmt: skip
def test_bad_arguments_are_phalanx_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(Dataset.range(5))


def test_experimental_unique_refuses_a_non_dataset():
    with pytest.raises(DatasetTypeError, match=r"unique\(\) transforms a phalanx.data.Dataset"):
        phalanx.data.experimental.unique()([1, 2, 1])
