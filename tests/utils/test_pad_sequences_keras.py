"""``phalanx.utils.pad_sequences`` gives Keras 3's arrays, dtypes and errors, case by case."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import phalanx as px

CASES = [
    ([[1], [2, 3], [4, 5, 6]], {}),
    ([[1], [2, 3], [4, 5, 6]], {"maxlen": 2}),
    ([[1], [2, 3], [4, 5, 6]], {"maxlen": 2, "truncating": "post"}),
    ([[1], [2, 3], [4, 5, 6]], {"maxlen": 5, "padding": "post", "value": -1}),
    ([[1], [], [4, 5, 6]], {}),
    ([[], [1, 2]], {"padding": "post", "truncating": "post", "maxlen": 1}),
    ([[1.5, 2.5], [3.5]], {"dtype": "float32", "value": 0.5}),
    ([[1.5, 2.5], [3.5]], {}),  # int32: truncated as Keras
    ([["a", "b"], ["c"]], {"dtype": object, "value": "x"}),
    ([["ab", "b"], ["c"]], {"dtype": "<U2", "value": "pad"}),
    ([np.ones((2, 3)), np.zeros((1, 3))], {"dtype": "float64"}),
    ([[[1, 2]], [], [[3, 4], [5, 6]]], {"maxlen": 3, "padding": "post"}),
    ((np.arange(3), np.arange(5)), {"maxlen": 4}),
]


@pytest.mark.parametrize("sequences, kwargs", CASES)
def test_pad_sequences_matches_keras(sequences, kwargs):
    ours = px.utils.pad_sequences(sequences, **kwargs)
    theirs = keras.utils.pad_sequences(sequences, **kwargs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((5,), {}, "must be iterable"),
        (([[1], 2],), {}, "must be a list of iterables. Found non-iterable: 2"),
        (([[1]],), {"value": "x"}, "is not compatible with `value`'s type"),
        (([[1, 2]],), {"maxlen": 1, "truncating": "middle"}, 'Truncating type "middle"'),
        (([[1]],), {"padding": "middle"}, 'Padding type "middle"'),
        (([[[1, 2]], [[1, 2, 3]]],), {}, "is different from expected shape"),
    ],
)
def test_pad_sequences_refuses_what_keras_refuses(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        keras.utils.pad_sequences(*args, **kwargs)
    with pytest.raises(px.errors.UtilsArgumentError, match=match) as info:
        px.utils.pad_sequences(*args, **kwargs)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("args, kwargs", [(([],), {}), (([[1, 2, 3]],), {"maxlen": 0})])
def test_pad_sequences_fails_where_keras_fails(args, kwargs):
    """No sequences (numpy's max of nothing), maxlen=0 (``s[-0:]`` is all of ``s``)."""
    with pytest.raises(ValueError):
        keras.utils.pad_sequences(*args, **kwargs)
    with pytest.raises(ValueError):
        px.utils.pad_sequences(*args, **kwargs)
