"""shuffle: buffer semantics, reproducibility, reshuffling, and the vectorized order = the buffer order."""

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, TensorSpec
from phalanx.data._shuffle import shuffle_order


def _buffer_reference(items, size, words):
    """The element-by-element algorithm of _shuffle.py, written independently."""
    from phalanx.data._shuffle import drain_permutation, draws

    buf, out, step = [], [], 0
    for x in items:
        if len(buf) < size:
            buf.append(x)
            continue
        j = int(draws(words, step, 1, size)[0])
        out.append(buf[j])
        buf[j] = x
        step += 1
    return out + [buf[p] for p in drain_permutation(words, len(buf))]


@pytest.mark.parametrize(
    "n,size", [(0, 3), (5, 10), (10, 10), (11, 10), (100, 7), (20000, 1000), (30, 1)]
)
def test_vectorized_order_equals_buffer_algorithm(n, size):
    words = (1, 42, 0)
    assert shuffle_order(n, size, words).tolist() == _buffer_reference(list(range(n)), size, words)


def _gen_range(n):
    return Dataset.from_generator(lambda: iter(range(n)), output_signature=TensorSpec((), np.int64))


@pytest.mark.parametrize("size", [1, 4, 30, 100])
def test_index_path_and_element_path_agree(size):
    fast = Dataset.range(50).shuffle(size, seed=7).repeat(3).batch(8)
    slow = _gen_range(50).shuffle(size, seed=7).repeat(3).batch(8)
    assert elements(fast) == elements(slow)


def test_is_a_permutation_and_reproducible_for_a_seed():
    a = elements(Dataset.range(100).shuffle(10, seed=3))
    assert sorted(a) == list(range(100)) and a != list(range(100))
    assert elements(Dataset.range(100).shuffle(10, seed=3)) == a
    assert elements(Dataset.range(100).shuffle(10, seed=4)) != a
    assert elements(Dataset.range(10).shuffle(1, seed=3)) == list(range(10))


def test_buffer_limits_how_far_elements_move():
    out = elements(Dataset.range(1000).shuffle(5, seed=0))
    # element i can only be emitted once i - 5 elements were read before it
    assert all(x <= k + 5 for k, x in enumerate(out))


def test_reshuffle_each_iteration():
    ds = Dataset.range(20).shuffle(20, seed=1)
    first, second = elements(ds), elements(ds)
    assert sorted(first) == sorted(second) and first != second
    epochs = elements(Dataset.range(20).shuffle(20, seed=1).repeat(2))
    assert epochs[:20] != epochs[20:] and sorted(epochs[:20]) == sorted(epochs[20:])
    fixed = Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=False)
    assert elements(fixed) == elements(fixed)
    once = elements(Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=False).repeat(2))
    assert once[:20] == once[20:]


def test_unseeded_shuffle_is_random_per_dataset():
    a = elements(Dataset.range(50).shuffle(50))
    b = elements(Dataset.range(50).shuffle(50))
    assert sorted(a) == sorted(b) == list(range(50)) and a != b


def test_shuffle_of_infinite_input():
    out = elements(Dataset.range(3).repeat().shuffle(4, seed=0), limit=30)
    assert sorted(set(out)) == [0, 1, 2]
