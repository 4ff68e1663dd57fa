"""``tf.data.experimental.cardinality(dataset)``, as the guides' older programs spell it, after
the rename ``tf.data`` -> ``phalanx.data`` (AttributeError before). TF 2.21 gives 3, -1, -2."""

from __future__ import annotations

import pytest

import phalanx


def test_cardinality_spelled_experimental():
    Dataset = phalanx.data.Dataset
    experimental = phalanx.data.experimental
    assert experimental.cardinality(Dataset.range(10).batch(4)) == 3
    assert experimental.cardinality(Dataset.range(3).repeat()) == experimental.INFINITE_CARDINALITY
    filtered = Dataset.range(3).filter(lambda x: x > 0)
    assert experimental.cardinality(filtered) == experimental.UNKNOWN_CARDINALITY == -2
    with pytest.raises(TypeError, match="expects a phalanx.data.Dataset, got list"):
        experimental.cardinality([1, 2])
