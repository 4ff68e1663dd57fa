"""``group_by_window`` and ``bucket_by_sequence_length`` (and their ``tf.data.experimental``
spellings), the tf.data grouping a reader of seed 002's "optimize the input pipeline" advice
meets for variable-length data, ported with ``tf.data`` -> ``phalanx.data``: AttributeError
before. Expected values from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset

E = phalanx.data.experimental


def _lists(ds):
    return [e.tolist() for e in ds.as_numpy_iterator()]


def test_group_by_window_as_tf():
    by_parity = Dataset.range(10).group_by_window(lambda x: x % 2, lambda k, d: d.batch(2), 2)
    assert _lists(by_parity) == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    assert by_parity.cardinality() == phalanx.data.UNKNOWN_CARDINALITY
    assert by_parity.element_spec == phalanx.data.TensorSpec((None,), np.int64)
    # Windows left at the end come out in ascending key order.
    flushed = Dataset.range(10).group_by_window(lambda x: 2 - x % 3, lambda k, d: d.batch(4), 4)
    assert _lists(flushed) == [[0, 3, 6, 9], [2, 5, 8], [1, 4, 7]]
    keyed = Dataset.range(10).group_by_window(
        lambda x: x % 3, lambda k, d: d.batch(2).map(lambda b: b + k * 100), window_size=2
    )
    assert _lists(keyed) == [[0, 3], [101, 104], [202, 205], [6, 9], [107], [208]]
    sized = Dataset.range(10).apply(
        E.group_by_window(
            lambda x: x % 2, lambda k, d: d.batch(5), window_size_func=lambda k: k + 2
        )
    )
    assert _lists(sized) == [[0, 2], [1, 3, 5], [4, 6], [8], [7, 9]]
    with pytest.raises(ValueError, match="exactly one of window_size and window_size_func"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, d: d)


ELEMENTS = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20], [21, 22]]


def _sequences():
    return Dataset.from_generator(
        lambda: (np.array(e, np.int64) for e in ELEMENTS),
        output_signature=phalanx.data.TensorSpec([None], np.int64),
    )


def test_bucket_by_sequence_length_as_tf():
    buckets = _sequences().bucket_by_sequence_length(
        element_length_func=lambda elem: len(elem),
        bucket_boundaries=[3, 5],
        bucket_batch_sizes=[2, 2, 2],
    )
    assert _lists(buckets) == [
        [[1, 2, 3, 4], [5, 6, 7, 0]],
        [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],
        [[0, 0], [21, 22]],
    ]
    assert buckets.element_spec == phalanx.data.TensorSpec((None, None), np.int64)
    padded = _sequences().apply(
        E.bucket_by_sequence_length(
            lambda elem: len(elem), [3, 5], [2, 2, 2], padding_values=np.int64(-1)
        )
    )
    assert _lists(padded)[0] == [[1, 2, 3, 4], [5, 6, 7, -1]]
    to_boundary = _sequences().bucket_by_sequence_length(
        lambda elem: len(elem), [3, 7], [2, 2, 2], pad_to_bucket_boundary=True
    )
    assert _lists(to_boundary)[0] == [[1, 2, 3, 4, 0, 0], [5, 6, 7, 0, 0, 0]]


def test_grouping_iterators_checkpoint():
    def make():
        return (
            Dataset.range(12)
            .shuffle(12, seed=5)
            .group_by_window(lambda x: x % 3, lambda k, d: d.batch(2), window_size=2)
        )

    whole = _lists(make())
    for cut in range(len(whole) + 1):
        it = iter(make())
        head = [next(it).tolist() for _ in range(cut)]
        rest = iter(make())
        rest.set_state(it.get_state())
        assert head + [b.tolist() for b in rest] == whole
