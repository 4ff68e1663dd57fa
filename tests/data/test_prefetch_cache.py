"""prefetch (threads end, errors surface) and cache (memory, files, no partial reuse)."""

import gc
import os
import threading
import time

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, TensorSpec


def _threads():
    return {t for t in threading.enumerate() if t.name.startswith("phalanx-")}


def _wait_for(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_prefetch_elements_and_abandoned_iterators_end_their_threads():
    before = _threads()
    ds = Dataset.range(1000).map(lambda x: x + 1, num_parallel_calls=2).prefetch(4)
    assert elements(Dataset.range(10).prefetch(3)) == list(range(10))
    for _ in range(5):
        it = iter(ds)
        assert int(next(it)) == 1
        del it
    gc.collect()
    assert _wait_for(lambda: not (_threads() - before)), f"threads left: {_threads() - before}"


def test_prefetch_infinite_producer_blocks_bounded_then_stops():
    before = _threads()
    it = iter(Dataset.range(5).repeat().prefetch(2))
    assert elements(it, limit=7) == [0, 1, 2, 3, 4, 0, 1]
    it.close()
    assert _wait_for(lambda: not (_threads() - before))


def test_prefetch_reraises_producer_errors_in_the_consumer():
    def boom(x):
        if x == 2:
            raise KeyError("element two")
        return x

    it = iter(Dataset.range(5).map(boom).prefetch(2))
    assert [int(next(it)), int(next(it))] == [0, 1]
    with pytest.raises(KeyError, match="element two"):
        next(it)
    # TF 2.21 (the same pipeline with a failing py_function): 0, 1, error, 3, 4, end
    assert [int(next(it)), int(next(it))] == [3, 4]
    with pytest.raises(StopIteration):
        next(it)


def _counting_gen(counter, n=6):
    def gen():
        counter.append(1)
        yield from range(n)

    return Dataset.from_generator(gen, output_signature=TensorSpec((), np.int64))


def test_memory_cache_reads_input_once():
    calls = []
    ds = _counting_gen(calls).map(lambda x: x * 2).cache().repeat(3)
    assert elements(ds) == [0, 2, 4, 6, 8, 10] * 3
    assert len(calls) == 1


def test_memory_cache_of_partial_pass_is_not_kept():
    calls = []
    ds = _counting_gen(calls).cache()
    assert elements(ds.take(2)) == [0, 1]
    assert elements(ds) == list(range(6))
    assert elements(ds) == list(range(6))
    assert len(calls) == 2


def test_file_cache_is_reused_by_a_second_run(tmp_path):
    path = str(tmp_path / "c" / "train")
    calls = []
    first = _counting_gen(calls).map(lambda x: (x, np.full(2, x, np.float32))).cache(path)
    assert elements(first) == [(i, [i, i]) for i in range(6)]
    assert os.path.exists(path + ".npz") and len(calls) == 1
    assert not [f for f in os.listdir(tmp_path / "c") if ".tmp" in f]
    second = _counting_gen(calls).map(lambda x: (x, np.full(2, x, np.float32))).cache(path)
    assert elements(second.shuffle(6, seed=0)) == elements(
        Dataset.zip((Dataset.range(6), Dataset.range(6)))
        .shuffle(6, seed=0)
        .map(lambda a, b: (a, np.full(2, b, np.float32)))
    )
    assert len(calls) == 1  # read from the file


def test_file_cache_of_unlike_shapes_and_partial_runs(tmp_path):
    path = str(tmp_path / "ragged.npz")
    calls = []
    ds = _counting_gen(calls, 4).map(lambda x: np.arange(x))
    assert elements(ds.cache(path).take(2)) == [[], [0]]
    assert not os.path.exists(path)  # a partial pass writes nothing
    assert elements(ds.cache(path)) == [[], [0], [0, 1], [0, 1, 2]]
    assert elements(ds.cache(path)) == [[], [0], [0, 1], [0, 1, 2]]
    assert len(calls) == 2


def test_damaged_cache_file_is_ignored_and_rewritten(tmp_path):
    path = tmp_path / "bad.npz"
    path.write_bytes(b"not a zip file")
    with pytest.warns(UserWarning, match="not a complete phalanx cache"):
        assert elements(Dataset.range(3).map(lambda x: x + 1).cache(str(path))) == [1, 2, 3]
    assert elements(Dataset.range(3).cache(str(path))) == [1, 2, 3]  # now the rewritten cache


def test_cache_refuses_object_arrays(tmp_path):
    ds = Dataset.from_tensors(np.array([1], dtype=np.int64)).map(
        lambda x: np.array([None, 1], dtype=object)
    )
    with pytest.raises(TypeError, match="object"):
        list(ds.cache(str(tmp_path / "o")))
