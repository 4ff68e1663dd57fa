"""Errors in user functions, as tf.data (issue 28 item 3).

The expected sequences are TensorFlow 2.21's: ``Dataset.range(1, 6).map(f)`` with
``f`` a ``tf.py_function`` raising on 4 (or raising ``StopIteration`` on 3), read
with ``next`` 12 times, each error recorded as its class name.
"""

import numpy as np
import pytest

from phalanx.data import Dataset, experimental
from phalanx.errors import DatasetFunctionError, DatasetTypeError


def _bad(x):
    if x == 4:
        raise ValueError("four")
    return x


def _stop(x):
    if x == 3:
        raise StopIteration
    return x


def _run(ds):
    it, out = iter(ds), []
    for _ in range(12):
        try:
            out.append(int(next(it)))
        except StopIteration:
            out.append("end")
            break
        except Exception as e:
            out.append(type(e).__name__)
    return out


BASE = Dataset.range(1, 6)


@pytest.mark.parametrize(
    "name, make",
    [
        ("map", lambda: BASE.map(_bad)),
        ("map(num_parallel_calls=2)", lambda: BASE.map(_bad, num_parallel_calls=2)),
        ("map().prefetch(2)", lambda: BASE.map(_bad).prefetch(2)),
    ],
)
def test_an_elements_error_is_raised_at_its_position_and_the_next_elements_follow(name, make):
    # TF 2.21: [1, 2, 3, 'InvalidArgumentError', 5, 'end'] for all three
    assert _run(make()) == [1, 2, 3, "ValueError", 5, "end"]


def test_stop_iteration_in_a_function_is_an_error_not_the_end():
    # TF 2.21: [1, 2, 'InvalidArgumentError', 4, 5, 'end']
    assert _run(BASE.map(_stop)) == [1, 2, "DatasetFunctionError", 4, 5, "end"]
    with pytest.raises(DatasetFunctionError, match="<lambda> raised StopIteration"):
        list(BASE.filter(lambda x: _stop(x) > 0))


def test_ignore_errors_drops_the_failing_elements():
    # TF 2.21: [1, 2, 3, 5, 'end']; its docstring's example: [1.0, 0.5, 0.25]
    assert _run(BASE.map(_bad).ignore_errors()) == [1, 2, 3, 5, "end"]
    assert _run(BASE.map(_bad).apply(experimental.ignore_errors())) == [1, 2, 3, 5, "end"]
    assert _run(BASE.map(_bad, num_parallel_calls=2).ignore_errors(log_warning=True)) == [
        1,
        2,
        3,
        5,
        "end",
    ]

    def inv(x):
        if x == 0:
            raise ZeroDivisionError
        return np.float32(1) / x

    ds = Dataset.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(inv).ignore_errors()
    assert [float(x) for x in ds] == [1.0, 0.5, 0.25]


def test_ignore_errors_checkpoints_and_rejects_a_non_bool():
    ds = BASE.map(_bad).ignore_errors()
    it = iter(ds)
    assert [int(next(it)) for _ in range(3)] == [1, 2, 3]
    state = it.get_state()
    rest = iter(ds)
    rest.set_state(state)
    assert [int(x) for x in rest] == [5]
    with pytest.raises(DatasetTypeError, match="log_warning"):
        BASE.ignore_errors(log_warning="yes")


def test_reduce_state_changing_dtype_is_a_type_error_as_tf():
    # TF 2.21: Dataset.range(3).reduce(0, lambda s, x: s + x) -> TypeError (int32 state, int64 x)
    with pytest.raises(DatasetTypeError, match="int32"):
        Dataset.range(3).reduce(0, lambda s, x: s + x)
    assert int(Dataset.range(3).reduce(np.int64(0), lambda s, x: s + x)) == 3


def test_stop_iteration_in_scan_and_reduce_is_an_error():
    # TF 2.21's ScanDatasetOp turns the function's OutOfRange into InvalidArgumentError for
    # that element and keeps its state; the next element follows
    def step(state, x):
        if x == 3:
            raise StopIteration
        return state + x, state + x

    assert _run(BASE.scan(np.int64(0), step)) == [1, 3, "DatasetFunctionError", 7, 12, "end"]
    with pytest.raises(DatasetFunctionError, match="<lambda> raised StopIteration"):
        BASE.reduce(np.int64(0), lambda s, x: step(s, x)[0])
