"""``phalanx.utils.split_dataset``: Keras 3's splits (sizes, order, shuffle) and errors.

TensorFlow is not installed: Keras's own function runs with a stand-in ``tf`` whose
``from_tensor_slices`` keeps the stacked arrays, which are what its splits hold.
"""

from __future__ import annotations

import collections
import random

import keras
import numpy as np
import pytest
from keras.src.utils import module_utils

import phalanx as px


class _Slices:
    def __init__(self, value):
        self.value = value

    def prefetch(self, _):
        return self


class _Tf:
    class data:
        AUTOTUNE = -1

        class Dataset:
            from_tensor_slices = _Slices


def _keras(monkeypatch, *args, **kwargs):
    monkeypatch.setattr(module_utils, "tensorflow", _Tf)
    left, right = keras.utils.split_dataset(*args, **kwargs)
    return left.value, right.value


def _stacked(dataset):
    rows = list(dataset.as_numpy_iterator())
    if isinstance(rows[0], tuple):
        return tuple(np.stack(column) for column in zip(*rows, strict=True))
    return np.stack(rows)


def _assert_same(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_array_equal(ours, theirs)


X = np.arange(20).reshape(10, 2)
Y = np.arange(10) * 3
CASES = [
    (X, {"left_size": 0.8}),
    (X, {"right_size": 3}),
    (X, {"left_size": 4, "right_size": 3}),  # the 3 between are in neither
    (X, {"left_size": 0.25, "right_size": 0.25}),
    ((X, Y), {"left_size": 0.5}),
    ([X, Y], {"right_size": 0.3}),
    ((X, Y), {"left_size": 6, "shuffle": True, "seed": 7}),
    (X, {"left_size": 0.6, "shuffle": True, "seed": 42}),
]


@pytest.mark.parametrize("dataset, kwargs", CASES)
def test_splits_match_keras(monkeypatch, dataset, kwargs):
    left, right = px.utils.split_dataset(dataset, **kwargs)
    state = random.getstate()
    keras_left, keras_right = _keras(monkeypatch, dataset, **kwargs)
    random.setstate(state)
    _assert_same(_stacked(left), keras_left)
    _assert_same(_stacked(right), keras_right)


def test_a_batched_dataset_is_split_by_samples_and_batched_again():
    dataset = px.data.Dataset.from_tensor_slices((X, Y)).batch(3)
    left, right = px.utils.split_dataset(dataset, left_size=0.7)
    assert [b[0].shape[0] for b in left.as_numpy_iterator()] == [3, 3, 1]
    assert [b[0].shape[0] for b in right.as_numpy_iterator()] == [3]
    np.testing.assert_array_equal(np.concatenate([b[1] for b in right.as_numpy_iterator()]), Y[7:])


def test_a_dataset_of_dicts_keeps_its_structure():
    dataset = px.data.Dataset.from_tensor_slices({"x": X, "y": Y})
    left, right = px.utils.split_dataset(dataset, left_size=2, shuffle=True, seed=3)
    order = list(range(10))
    random.Random(3).shuffle(order)
    rows = list(left.as_numpy_iterator())
    assert [sorted(r) for r in rows] == [["x", "y"]] * 2
    np.testing.assert_array_equal([r["y"] for r in rows], Y[order[:2]])
    assert int(right.cardinality()) == 8


@pytest.mark.parametrize("structure", ["tuple", "dict", "OrderedDict"])
def test_keras_nested_structures_test(structure):
    """Keras's ``test_split_dataset_nested_structures``, on a ``phalanx.data.Dataset``."""
    rng = np.random.RandomState(0)
    f1, f2, labels = rng.rand(100, 2), rng.rand(100, 10, 2), rng.rand(100, 1)
    items = [("y", f2), ("x", f1), ("labels", labels)]
    element = {
        "tuple": ((f1, f2), labels),
        "dict": dict(items),
        "OrderedDict": collections.OrderedDict(items),
    }[structure]
    dataset = px.data.Dataset.from_tensor_slices(element)
    kind = type(next(iter(dataset.as_numpy_iterator())))
    left, right = px.utils.split_dataset(dataset, left_size=0.2, right_size=0.8)
    assert (int(left.cardinality()), int(right.cardinality())) == (20, 80)
    for sample in [*left.as_numpy_iterator(), *right.as_numpy_iterator()]:
        if structure == "tuple":
            (x, y), label = sample
        else:
            assert type(sample) is kind  # what the dataset yields
            x, y, label = sample["x"], sample["y"], sample["labels"]
        assert (x.shape, y.shape, label.shape) == ((2,), (10, 2), (1,))


def test_samples_of_different_shapes_are_refused_as_keras():
    ragged = px.data.Dataset.from_generator(
        lambda: iter([np.zeros(2), np.zeros(3)]),
        output_signature=px.data.TensorSpec((None,), "float64"),
    )
    with pytest.raises(px.errors.UtilsArgumentError, match="All `dataset` samples must have"):
        px.utils.split_dataset(ragged, left_size=1)


def test_an_unbatched_dataset_splits_like_its_arrays(monkeypatch):
    left, right = px.utils.split_dataset(px.data.Dataset.from_tensor_slices((X, Y)), right_size=4)
    keras_left, keras_right = _keras(monkeypatch, (X, Y), right_size=4)
    _assert_same(_stacked(left), keras_left)
    _assert_same(_stacked(right), keras_right)


@pytest.mark.parametrize(
    "dataset, kwargs, match",
    [
        (X, {}, "At least one of the `left_size` or `right_size` must be specified"),
        (X, {"left_size": "1"}, "Invalid `left_size` Type"),
        (X, {"right_size": [1]}, "Invalid `right_size` Type"),
        (X, {"left_size": "1", "right_size": "2"}, "Invalid `left_size` and `right_size` Types"),
        (X, {"left_size": 0, "right_size": 0}, "Both `left_size` and `right_size` are zero"),
        (X, {"left_size": 10}, "`left_size` should be either a positive integer"),
        (X, {"right_size": 1.5}, "`right_size` should be either a positive integer"),
        (X, {"left_size": 0.6, "right_size": 0.6}, "The sum of `left_size` and `right_size` is"),
        (X, {"left_size": 6, "right_size": 6}, "should be smaller than the 10"),
        (X, {"left_size": 0.01}, "Resulting left side dataset split will be empty"),
        ((), {"left_size": 1}, "Received an empty"),
        ((X, [1, 2]), {"left_size": 1}, "objects,Received|objects, Received"),
        ((X, Y[:5]), {"left_size": 1}, "NumPy arrays with different lengths"),
        ("abc", {"left_size": 1}, "Unsupported dataset type"),
    ],
)
def test_refuses_what_keras_refuses(monkeypatch, dataset, kwargs, match):
    monkeypatch.setattr(module_utils, "tensorflow", _Tf)
    with pytest.raises((ValueError, TypeError), match=match) as keras_error:
        keras.utils.split_dataset(dataset, **kwargs)
    with pytest.raises(px.errors.UtilsArgumentError, match=match) as ours:
        px.utils.split_dataset(dataset, **kwargs)
    assert isinstance(ours.value, type(keras_error.value))
