"""tf.data methods the guides' readers reach for around the seeds' pipelines, ported with
``tf.data`` -> ``phalanx.data``: ``flat_map``, ``reduce``, ``get_single_element``
(AttributeError in phalanx before). Expected values from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx


def _pairs():
    return phalanx.data.Dataset.from_tensor_slices((np.arange(4.0), np.arange(4)))


def test_flat_map_reads_each_inner_dataset_in_turn():
    ds = _pairs().flat_map(lambda a, b: phalanx.data.Dataset.from_tensors((a, b)).repeat(2))
    got = [(float(a), int(b)) for a, b in ds.as_numpy_iterator()]
    assert got == [(0.0, 0), (0.0, 0), (1.0, 1), (1.0, 1), (2.0, 2), (2.0, 2), (3.0, 3), (3.0, 3)]
    assert ds.cardinality() == phalanx.data.UNKNOWN_CARDINALITY  # TF 2.21: -2


def test_reduce_folds_whole_elements():
    assert _pairs().reduce(np.float64(0), lambda s, e: s + e[0]) == 6.0
    assert phalanx.data.Dataset.range(5).reduce(np.int64(0), lambda s, v: s + v) == 10
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        _pairs().reduce(np.float64(0), lambda s, a, b: s + a)  # as TF: not unpacked
    with pytest.raises(phalanx.errors.DatasetArgumentError, match="infinite dataset"):
        phalanx.data.Dataset.range(3).repeat().reduce(0, lambda s, v: s)


def test_get_single_element():
    a, b = _pairs().take(1).get_single_element()
    assert (float(a), int(b)) == (0.0, 0)
    with pytest.raises(ValueError, match="more than one element"):
        _pairs().get_single_element()
    with pytest.raises(ValueError, match="was empty"):
        _pairs().take(0).get_single_element()
