"""Two iterators writing one file cache at once: the second raises ``AlreadyExistsError``.

As TensorFlow 2.21 (cache_test.py ``testConcurrentWriters``, and the same with one
dataset iterated twice, an abandoned writer, and readers of a complete cache), whose
results were recorded here; TensorFlow is not imported.
"""

import gc
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from phalanx.data import Dataset
from phalanx.errors import AlreadyExistsError

COMPONENTS = (np.array([1, 2, 3, 4]), np.array([5, 6, 7, 8]), np.array([9.0, 10.0, 11.0, 12.0]))


def _row(e):
    return tuple(x.item() for x in e)


def test_concurrent_writers(tmp_path):
    # TF 2.21: next(it1) -> (1, 5, 9.0); next(it2) -> AlreadyExistsError ("There appears to be
    # a concurrent caching iterator running - cache lockfile already exists"), again on a second
    # call; it1 goes on: (2, 6, 10.0), (3, 7, 11.0), (4, 8, 12.0).
    prefix = os.fspath(tmp_path / "cache")
    it1 = iter(Dataset.from_tensor_slices(COMPONENTS).cache(prefix))
    it2 = iter(Dataset.from_tensor_slices(COMPONENTS).cache(prefix))
    assert _row(next(it1)) == (1, 5, 9.0)
    with pytest.raises(AlreadyExistsError, match="is writing this cache now") as e:
        next(it2)
    assert "lock file" in str(e.value) and "tf.data raises AlreadyExistsError" in str(e.value)
    assert isinstance(e.value, FileExistsError)
    with pytest.raises(AlreadyExistsError):
        next(it2)
    assert _row(next(it1)) == (2, 6, 10.0)
    assert [_row(x) for x in it1] == [(3, 7, 11.0), (4, 8, 12.0)]
    assert not os.path.exists(prefix + ".npz.lockfile")  # released when the file is complete
    readers = [iter(Dataset.from_tensor_slices(COMPONENTS).cache(prefix)) for _ in range(2)]
    assert [_row(next(r)) for r in readers] == [(1, 5, 9.0), (1, 5, 9.0)]


def test_one_dataset_two_iterators(tmp_path):
    # TF 2.21: a = iter(ds); next(a) -> 0; b = iter(ds); next(b) -> AlreadyExistsError. The
    # writer is whichever iterator calls next first.
    ds = Dataset.range(4).cache(os.fspath(tmp_path / "same"))
    a, b = iter(ds), iter(ds)
    assert int(next(b)) == 0
    with pytest.raises(AlreadyExistsError):
        next(a)
    assert [int(x) for x in b] == [1, 2, 3]
    # complete: concurrent readers are fine (TF: 0 0 [1, 2, 3] [1, 2, 3])
    r1, r2 = iter(ds), iter(ds)
    assert (int(next(r1)), int(next(r2))) == (0, 0)
    assert [int(x) for x in r1] == [int(x) for x in r2] == [1, 2, 3]


def test_abandoned_writer_releases_the_lock(tmp_path):
    # TF 2.21: del the first iterator after one element -> its lock file is gone and a new
    # iterator writes the cache: [0, 1, 2, 3].
    path = os.fspath(tmp_path / "abandon")
    ds = Dataset.range(4).cache(path)
    a = iter(ds)
    next(a)
    assert os.path.exists(path + ".npz.lockfile")
    del a
    gc.collect()
    assert not os.path.exists(path + ".npz.lockfile")
    assert [int(x) for x in ds] == [0, 1, 2, 3]
    c = iter(Dataset.range(4).cache(os.fspath(tmp_path / "closed")))
    next(c)
    c.close()
    assert [int(x) for x in Dataset.range(4).cache(os.fspath(tmp_path / "closed"))] == [0, 1, 2, 3]


def test_memory_caches_and_take_then_iterate_again(tmp_path):
    # TF 2.21: two iterators of a memory cache: 0 and 0, no error.
    ds = Dataset.range(3).cache()
    m1, m2 = iter(ds), iter(ds)
    assert (int(next(m1)), int(next(m2))) == (0, 0)
    # a finished loop over a partial pass frees the lock for the next one
    fc = Dataset.range(5).cache(os.fspath(tmp_path / "partial"))
    assert [int(x) for x in fc.take(2)] == [0, 1]
    assert [int(x) for x in fc] == [0, 1, 2, 3, 4]


def test_a_writer_in_another_process_is_refused_and_a_dead_ones_lock_taken_over(tmp_path):
    path = os.fspath(tmp_path / "shared")
    lockfile = path + ".npz.lockfile"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(lockfile, "w") as f:
            f.write(f"Created at: 0 by process {child.pid} on {socket.gethostname()}")
        with pytest.raises(AlreadyExistsError, match="delete the lock file") as e:
            next(iter(Dataset.range(3).cache(path)))
        assert f"by process {child.pid}" in str(e.value)
    finally:
        child.kill()
        child.wait()
    # that process is gone: its lock file is stale and taken over
    assert [int(x) for x in Dataset.range(3).cache(path)] == [0, 1, 2]
    assert not os.path.exists(lockfile)
