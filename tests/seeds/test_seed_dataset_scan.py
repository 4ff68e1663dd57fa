"""``Dataset.scan`` and ``Dataset.counter``, tf.data methods a reader of seed 002's pipeline
section reaches for (running statistics, step numbers), ported with ``tf.data`` ->
``phalanx.data``: AttributeError before. Expected values from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset


def test_scan_as_tf():
    running = Dataset.range(5).scan(np.int64(0), lambda s, x: (s + x, s))
    assert list(running.as_numpy_iterator()) == [0, 0, 1, 3, 6]
    assert running.cardinality() == 5
    assert running.element_spec == phalanx.data.TensorSpec((), np.int64)
    # A tuple element is passed whole (TF: a lambda s, a, b is missing an argument).
    pairs = Dataset.from_tensor_slices((np.arange(4), np.arange(4) * 10))
    got = list(pairs.scan(np.int64(0), lambda s, e: (s + e[1], (s, e[0]))).as_numpy_iterator())
    assert got == [(0, 0), (0, 1), (10, 2), (30, 3)]
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        list(pairs.scan(np.int64(0), lambda s, a, b: (s + b, s)))
    nested = Dataset.range(4).scan(
        (np.int64(0), np.int64(1)), lambda st, x: ((st[0] + x, st[1] * 2), st[1])
    )
    assert list(nested.as_numpy_iterator()) == [1, 2, 4, 8]
    with pytest.raises(TypeError, match="new state must match the initial state"):
        list(Dataset.range(4).scan(np.int64(0), lambda s, x: (s.astype(np.float32), s)))


def test_scan_iterator_checkpoints():
    def make():
        return Dataset.range(6).shuffle(6, seed=3).scan(np.int64(0), lambda s, x: (s + x, s + x))

    whole = [int(x) for x in make()]
    assert whole[-1] == 15
    for cut in range(len(whole) + 1):
        it = iter(make())
        head = [int(next(it)) for _ in range(cut)]
        state = it.get_state()
        rest = iter(make())
        rest.set_state(state)
        assert head + [int(x) for x in rest] == whole


def test_counter_as_tf():
    counter = Dataset.counter()
    assert counter.cardinality() == phalanx.data.INFINITE_CARDINALITY
    assert counter.element_spec == phalanx.data.TensorSpec((), np.int64)
    assert list(Dataset.counter(10, -2).take(3).as_numpy_iterator()) == [10, 8, 6]
    small = Dataset.counter(3, 2, dtype=np.int32).take(3)
    assert [x.dtype for x in small] == [np.int32] * 3
    steps = Dataset.zip((Dataset.counter(), Dataset.range(10, 13)))
    assert [(int(a), int(b)) for a, b in steps] == [(0, 10), (1, 11), (2, 12)]
