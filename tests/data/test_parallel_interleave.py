"""``interleave(num_parallel_calls=...)``: reader threads, the sequential order, errors, cleanup."""

import gc
import itertools
import threading
import time

import numpy as np
import pytest
from data_support import elements

from phalanx.data import AUTOTUNE, Dataset
from phalanx.errors import DatasetArgumentError


def _inner(x):
    """Inner datasets of lengths 0..4 (x % 5): uneven, and some empty."""
    return Dataset.range(100 * x, 100 * x + x % 5)


@pytest.mark.parametrize("deterministic", [None, True, False])
def test_same_order_as_the_sequential_interleave(deterministic):
    for n, cycle, block in itertools.product([0, 1, 4, 11], [1, 2, 3, 5], [1, 2, 3]):

        def make(calls, n=n, cycle=cycle, block=block):
            return Dataset.range(n).interleave(
                _inner,
                cycle_length=cycle,
                block_length=block,
                num_parallel_calls=calls,
                deterministic=None if calls is None else deterministic,
            )

        want = elements(make(None))
        assert len(want) == sum(x % 5 for x in range(n))
        for calls in (1, 2, AUTOTUNE):
            assert elements(make(calls)) == want, (n, cycle, block, calls)


def test_record_datasets_with_num_parallel_reads_keep_the_order(tmp_path):
    from phalanx.data import TextLineDataset

    files = []
    for i, lines in enumerate([3, 0, 5, 1, 2]):
        files.append(str(tmp_path / f"f{i}.txt"))
        (tmp_path / f"f{i}.txt").write_text("".join(f"{i}-{j}\n" for j in range(lines)))
    want = elements(Dataset.from_tensor_slices(files).interleave(TextLineDataset, cycle_length=3))
    assert elements(TextLineDataset(files, num_parallel_reads=3)) == want
    assert len(want) == 11


def test_open_inner_datasets_are_read_at_the_same_time():
    # Each inner dataset's first element waits until all 3 readers arrive: only concurrent
    # readers pass (read in the consumer thread, the barrier would break).
    barrier = threading.Barrier(3, timeout=10)

    def slow(x):
        return Dataset.range(2).map(lambda i: (barrier.wait() if i == 0 else 0, x * 10 + i)[1])

    ds = Dataset.range(3).interleave(slow, cycle_length=3, num_parallel_calls=3)
    assert elements(ds) == [0, 10, 20, 1, 11, 21]


def test_state_is_the_sequential_interleaves():
    def make(calls):
        return Dataset.range(9).interleave(
            _inner, cycle_length=3, block_length=2, num_parallel_calls=calls
        )

    it = iter(make(2))
    head = elements(it, limit=7)
    state = it.get_state()
    sequential = iter(make(None))
    elements(sequential, limit=7)
    assert state["node"] == sequential.get_state()["node"]
    resumed = iter(make(None))
    resumed.set_state(state)
    assert head + elements(resumed) == elements(make(None))


def test_inner_error_is_raised_at_its_position():
    def inner(x):
        if x == 2:
            return Dataset.range(3).map(
                lambda i: 1 // (int(i) - 1) + 20
            )  # fails at its 2nd element
        return Dataset.range(10 * x, 10 * x + 3)

    it = iter(Dataset.range(4).interleave(inner, cycle_length=3, num_parallel_calls=3))
    assert elements(it, limit=4) == [0, 10, 19, 1]
    assert elements(it, limit=1) == [11]
    with pytest.raises(ZeroDivisionError):
        next(it)


def test_map_func_error_is_raised_when_the_cycle_reaches_it():
    def inner(x):
        if x == 3:
            raise ValueError("bad element 3")
        return Dataset.range(10 * x, 10 * x + 2)

    it = iter(Dataset.range(5).interleave(inner, cycle_length=2, num_parallel_calls=2))
    assert elements(it, limit=4) == [0, 10, 1, 11]
    assert elements(it, limit=1) == [20]
    with pytest.raises(ValueError, match="bad element 3"):
        next(it)


def _settle(count, seconds=3.0):
    """Wait until at most ``count`` threads are alive (stopped threads wake every 0.1 s)."""
    deadline = time.monotonic() + seconds
    while threading.active_count() > count and time.monotonic() < deadline:
        time.sleep(0.05)
    return threading.active_count()


def test_abandoned_and_closed_iterators_stop_their_threads():
    gc.collect()
    start = _settle(1)  # the threads of earlier tests' iterators, if any, end first
    ds = Dataset.range(6).interleave(
        lambda x: Dataset.range(1000), cycle_length=4, num_parallel_calls=4
    )
    for _ in range(5):
        it = iter(ds)
        next(it)
        assert threading.active_count() > start
        del it
    it = iter(ds)
    next(it)
    it.close()
    del it
    gc.collect()
    assert _settle(start) == start


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_num_parallel_calls_must_be_positive_or_autotune(bad):
    with pytest.raises(DatasetArgumentError, match="num_parallel_calls must be a positive int"):
        Dataset.range(3).interleave(lambda x: Dataset.range(x), num_parallel_calls=bad)


def test_deterministic_must_be_a_bool_or_none():
    with pytest.raises(DatasetArgumentError, match="deterministic must be None, True or False"):
        Dataset.range(3).interleave(lambda x: Dataset.range(x), deterministic="yes")


def test_element_dtypes_are_kept():
    ds = Dataset.range(3).interleave(
        lambda x: Dataset.from_tensor_slices(np.full([2, 2], x, np.float32)),
        cycle_length=2,
        num_parallel_calls=2,
    )
    out = list(ds)
    assert len(out) == 6 and all(e.dtype == np.float32 and e.shape == (2,) for e in out)
