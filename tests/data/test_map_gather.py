"""``map`` over in-memory arrays, then ``batch``: batches gathered with less work per element.

The function must still run once per element, in the dataset's order, on the
same values, and the batches, dtypes and errors must be those of the
element-by-element path (a ``from_generator`` source, which has no indices).
"""

import numpy as np
import pytest

from phalanx.data import Dataset, TensorSpec
from phalanx.data import _structure as st
from phalanx.errors import BatchShapeError, StructureMismatchError

N = 50


def _sources():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (N, 4, 3), dtype=np.uint8)
    y = rng.integers(0, 10, N)
    fast = Dataset.from_tensor_slices((x, y))
    slow = Dataset.from_generator(
        lambda: iter(zip(x, y, strict=True)),
        output_signature=(TensorSpec((4, 3), np.uint8), TensorSpec((), np.int64)),
    )
    return fast, slow


def _assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        assert st.treedef(u) == st.treedef(v)
        for p, q in zip(st.flatten(u), st.flatten(v), strict=True):
            assert p.dtype == q.dtype and p.shape == q.shape
            np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: (x.astype(np.float32).reshape(12) / np.float32(255.0), y),  # the seeds'
        lambda x, y: x.sum() + y,  # one value
        lambda x, y: (float(x[0, 0]), int(y)),  # Python numbers: float32 and int64
        lambda x, y: {"image": x, "label": y},  # a dict
        lambda x, y: (x, y) if y % 2 else (x, np.float32(y)),  # dtypes mix in a column
    ],
)
def test_batches_and_calls_equal_the_element_path(fn):
    fast, slow = _sources()
    calls_fast, calls_slow = [], []

    def counted(calls):
        def f(x, y):
            calls.append(int(y) * 1000 + int(x.sum()))
            return fn(x, y)

        return f

    def pipeline(ds, calls):
        return ds.map(counted(calls)).shuffle(20, seed=1).batch(8)

    _assert_same(list(pipeline(fast, calls_fast)), list(pipeline(slow, calls_slow)))
    assert len(calls_fast) == N


def test_the_function_runs_once_per_element_in_order():
    fast, _ = _sources()
    seen = []

    def f(x, y):
        seen.append(int(y) * 1000 + int(x.sum()))
        return x, y

    batches = list(fast.map(f).shuffle(N, seed=2).batch(16))
    order = [int(b) * 1000 + int(a.sum()) for x, y in batches for a, b in zip(x, y, strict=True)]
    assert seen == order


def test_a_changed_structure_and_a_bad_shape_raise_as_before():
    fast, _ = _sources()

    def changes(x, y):
        return (x, y) if int(y) != 3 else (x, y, y)

    with pytest.raises(StructureMismatchError, match="earlier it returned"):
        list(fast.map(changes).batch(N))

    def grows(x, y):
        return np.zeros(int(y) % 2 + 1), y

    with pytest.raises(BatchShapeError, match="cannot stack elements of different shapes"):
        list(fast.map(grows).batch(N))
