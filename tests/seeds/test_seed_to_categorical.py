"""Seed 004's preprocessing: ``to_categorical`` on MNIST's labels, and what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px


def test_seed_004_one_hot_labels():
    y_train = np.array([5, 0, 4, 1, 9], np.uint8)  # mnist.load_data()'s dtype
    one_hot = px.utils.to_categorical(y_train, 10)
    assert one_hot.shape == (5, 10) and one_hot.dtype == np.float32
    np.testing.assert_array_equal(one_hot.argmax(1), y_train)
    np.testing.assert_array_equal(px.utils.to_categorical([1.0, 2.0], 3).argmax(1), [1, 2])


@pytest.mark.parametrize(
    "y, num_classes, match",
    [
        ([1, 5], 3, r"label 5 outside \[0, 3\)"),
        ([1.5, 2], 3, r"label 1.5, which is not a class index"),
        ([np.nan], 3, r"label nan, which is not a class index"),
        (["cat", "dog"], None, r"dtype <U3 \(e.g. 'cat'\).*np.unique"),
        ([1, 2], "3", r"num_classes must be a positive int.*got str '3'"),
        ([1, 2], 0, r"num_classes must be a positive int.*got int 0"),
        ([1, 2], True, r"num_classes must be a positive int.*got bool True"),
    ],
)
def test_bad_labels_raise_a_phalanx_error(y, num_classes, match):
    with pytest.raises(px.errors.LabelOutOfRangeError, match=match):
        px.utils.to_categorical(y, num_classes)
