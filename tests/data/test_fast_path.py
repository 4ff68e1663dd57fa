"""The vectorized batch path: used where it should be, and equal to the element-by-element path."""

import numpy as np
import pytest
from data_support import elements, same_elements

from phalanx.data import Dataset, TensorSpec
from phalanx.data._iterator import RandomAccess


class CountingAccess(RandomAccess):
    """Wraps an access to count per-element fetches."""

    def __init__(self, inner):
        self.inner, self.gets, self.gathers = inner, 0, 0
        self.materialized = True

    def __len__(self):
        return len(self.inner)

    def get(self, i):
        self.gets += 1
        return self.inner.get(i)

    def gather(self, idx):
        self.gathers += 1
        return self.inner.gather(idx)


def _counted(ds):
    counter = CountingAccess(ds._access)
    ds._access = counter
    return ds, counter


def test_chain_gathers_whole_batches_without_per_element_fetches():
    x = np.arange(200, dtype=np.float32).reshape(100, 2)
    src, counter = _counted(Dataset.from_tensor_slices((x, np.arange(100))))
    ds = (
        src.cache()
        .shuffle(100, seed=1)
        .repeat(2)
        .skip(3)
        .take(150)
        .batch(16)
        .map(lambda a, b: (a * 2, b))
    )
    out = list(ds)
    assert counter.gets == 0 and counter.gathers == len(out) == 10
    assert out[0][0].shape == (16, 2) and out[-1][0].shape == (6, 2)


def test_fast_and_slow_paths_agree():
    x = np.random.default_rng(0).random((37, 3)).astype(np.float32)
    y = np.arange(37)

    def slow_source():
        return Dataset.from_generator(
            lambda: iter(zip(x, y, strict=True)),
            output_signature=(TensorSpec((3,), np.float32), TensorSpec((), np.int64)),
        )

    def pipelines(src):
        return [
            src.batch(5),
            src.shuffle(10, seed=2).batch(4, drop_remainder=True),
            src.shuffle(37, seed=2).repeat(3).batch(8),
            src.repeat(2).shard(3, 1).batch(6),
            src.skip(4).take(20).repeat(2).batch(7),
            src.cache().shuffle(5, seed=9).repeat(2).batch(10),
        ]

    fast_src = Dataset.from_tensor_slices((x, y))
    for fast, slow in zip(pipelines(fast_src), pipelines(slow_source()), strict=True):
        a, b = list(fast), list(slow)
        assert len(a) == len(b) and all(same_elements(p, q) for p, q in zip(a, b, strict=True))


def test_zip_of_slices_and_range_are_vectorized():
    a, counter = _counted(Dataset.from_tensor_slices(np.arange(10)))
    ds = Dataset.zip((a, Dataset.range(10))).shuffle(10, seed=0).batch(5)
    out = elements(ds)
    assert counter.gets == 0
    assert [p[0] for p in out] == [p[1] for p in out]


def test_cache_of_generator_becomes_vectorized_after_first_epoch():
    gen = Dataset.from_generator(lambda: iter(range(10)), output_signature=TensorSpec((), np.int64))
    cached = gen.cache()
    ds = cached.shuffle(10, seed=0).repeat(3).batch(4)
    reference = elements(Dataset.range(10).shuffle(10, seed=0).repeat(3).batch(4))
    assert elements(ds) == reference
    assert cached._store is not None and len(cached._store) == 10


@pytest.mark.parametrize("workers", [None, 2])
def test_batched_map_path(workers):
    ds = Dataset.range(10).batch(4).map(lambda b: b * 10, num_parallel_calls=workers)
    assert elements(ds) == [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]]
