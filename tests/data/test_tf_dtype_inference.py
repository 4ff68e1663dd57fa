"""TensorFlow's dtype inference for Python values, source by source (issue 28 item 1).

Python int -> int32 (int64 when a value does not fit in int32), float -> float32,
bool -> bool, str/bytes -> string; numpy values keep their dtype. Every expected
spec and element below is what TensorFlow 2.21 gave for the same pipeline
(``tf.data.Dataset.<same calls>``, printed ``element_spec`` and elements).
"""

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, TensorSpec
from phalanx.data import _structure as st

I32, I64, F32 = np.int32, np.int64, np.float32

# (pipeline, TF 2.21's element_spec, TF 2.21's elements)
CASES = {
    "from_tensor_slices ints": (
        lambda: Dataset.from_tensor_slices([1, 2, 3]),
        TensorSpec((), I32),
        [1, 2, 3],
    ),
    "from_tensor_slices past int32": (
        lambda: Dataset.from_tensor_slices([1, 2**40]),
        TensorSpec((), I64),
        [1, 2**40],
    ),
    "from_tensor_slices nested lists": (
        lambda: Dataset.from_tensor_slices([[1, 2], [3, 4]]),
        TensorSpec((2,), I32),
        [[1, 2], [3, 4]],
    ),
    "from_tensor_slices dict": (
        lambda: Dataset.from_tensor_slices({"a": [1, 2], "b": [1.0, 2.0]}),
        {"a": TensorSpec((), I32), "b": TensorSpec((), F32)},
        [{"a": 1, "b": 1.0}, {"a": 2, "b": 2.0}],
    ),
    "from_tensors 42": (lambda: Dataset.from_tensors(42), TensorSpec((), I32), [42]),
    "from_tensors 2**31": (lambda: Dataset.from_tensors(2**31), TensorSpec((), I64), [2**31]),
    "from_tensors 1.5": (lambda: Dataset.from_tensors(1.5), TensorSpec((), F32), [1.5]),
    "from_tensors True": (lambda: Dataset.from_tensors(True), TensorSpec((), np.bool_), [True]),
    "from_tensors tuple": (
        lambda: Dataset.from_tensors((1, 2.0, "x", b"y", True)),
        (
            TensorSpec((), I32),
            TensorSpec((), F32),
            TensorSpec((), object),
            TensorSpec((), object),
            TensorSpec((), np.bool_),
        ),
        [(1, 2.0, b"x", b"y", True)],
    ),
    "map returning a Python int": (
        lambda: Dataset.range(2).map(lambda x: 1),
        TensorSpec((), I32),
        [1, 1],
    ),
    "map returning (int64, Python int)": (
        lambda: Dataset.range(2).map(lambda x: (x, 2)),
        (TensorSpec((), I64), TensorSpec((), I32)),
        [(0, 2), (1, 2)],
    ),
    "scan from a Python int": (
        lambda: Dataset.range(3).scan(0, lambda s, x: (s + 1, s)),
        TensorSpec((), I32),
        [0, 1, 2],
    ),
    "padded_batch of Python ints": (
        lambda: Dataset.from_tensor_slices([[1], [2]]).padded_batch(
            2, padded_shapes=[3], padding_values=-1
        ),
        TensorSpec((None, 3), I32),
        [[[1, -1, -1], [2, -1, -1]]],
    ),
    "range stays int64": (lambda: Dataset.range(1, 5, 2), TensorSpec((), I64), [1, 3]),
    "enumerate of Python ints": (
        lambda: Dataset.from_tensor_slices([5, 6]).enumerate(),
        (TensorSpec((), I64), TensorSpec((), I32)),
        [(0, 5), (1, 6)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dtypes_are_tensorflows(name):
    make, spec, expected = CASES[name]
    ds = make()
    assert ds.element_spec == spec
    assert elements(ds) == expected
    specs = st.flatten(spec)
    for element in ds:
        for s, v in zip(specs, st.flatten(element), strict=True):
            if s.dtype != object:  # strings are bytes, as a tf.string's numpy() is
                assert np.asarray(v).dtype == s.dtype, (s, v)


def test_reduce_from_a_python_int_is_int32():
    # TF 2.21: Dataset.range(3).reduce(0, lambda s, x: s + 1) -> tf.Tensor(3, dtype=int32)
    out = Dataset.range(3).reduce(0, lambda s, x: s + 1)
    assert np.asarray(out).dtype == np.int32 and int(out) == 3
