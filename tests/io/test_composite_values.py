"""``SparseTensor``, ``RaggedTensor`` and their specs, against TensorFlow 2.21's values.

Each expected value is what ``tf.RaggedTensor`` / ``tf.sparse`` give for the same inputs
(recorded by running TF 2.21; TF is not a test dependency).
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx.io import RaggedTensor, RaggedTensorSpec, SparseTensor, SparseTensorSpec

NESTED = RaggedTensor.from_nested_row_splits(np.arange(6), [[0, 2, 3], [0, 2, 2, 6]])


def test_nested_ragged_structure_and_to_tensor_as_tf():
    assert NESTED.to_list() == [[[0, 1], []], [[2, 3, 4, 5]]]
    assert NESTED.shape == (2, None, None) and NESTED.ragged_rank == 2
    assert NESTED.to_tensor().tolist() == [
        [[0, 1, 0, 0], [0, 0, 0, 0]],
        [[2, 3, 4, 5], [0, 0, 0, 0]],
    ]
    assert NESTED.to_tensor(default_value=-1, shape=[2, 1, 2]).tolist() == [[[0, 1]], [[2, 3]]]
    big = NESTED.to_tensor(default_value=-1, shape=[3, 2, 5]).tolist()
    assert big == [
        [[0, 1, -1, -1, -1], [-1, -1, -1, -1, -1]],
        [[2, 3, 4, 5, -1], [-1, -1, -1, -1, -1]],
        [[-1, -1, -1, -1, -1], [-1, -1, -1, -1, -1]],
    ]
    assert NESTED[1].to_list() == [[2, 3, 4, 5]] and NESTED.flat_values.tolist() == list(range(6))


def test_ragged_factories_as_tf():
    assert RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=4).to_list() == [
        [1, 2],
        [],
        [3],
        [],
    ]
    uniform = RaggedTensor.from_uniform_row_length(np.arange(6), 3)
    assert uniform.shape == (2, 3) and uniform.to_list() == [[0, 1, 2], [3, 4, 5]]
    dense = np.arange(12).reshape(2, 3, 2)
    assert RaggedTensor.from_tensor(dense, ragged_rank=1).shape == (2, 3, 2)
    assert RaggedTensor.from_tensor(dense, ragged_rank=2).shape == (2, 3, 2)
    assert RaggedTensor.from_tensor(dense, ragged_rank=2).to_list() == dense.tolist()
    assert RaggedTensor.from_row_starts([1, 2, 3, 4], [0, 1, 1]).to_list() == [[1], [], [2, 3, 4]]
    assert RaggedTensor.from_row_limits([1, 2, 3, 4], [1, 1, 4]).to_list() == [[1], [], [2, 3, 4]]
    rows = RaggedTensor.from_row_lengths([1, 2, 3], [2, 0, 1])
    assert rows.row_splits.tolist() == [0, 2, 2, 3] and rows.value_rowids().tolist() == [0, 0, 2]
    strings = RaggedTensor.from_row_lengths([b"a", b"b", b"c"], [1, 2]).to_tensor()
    assert strings.tolist() == [[b"a", b""], [b"b", b"c"]]


def test_invalid_partitions_raise_as_tf():
    # TF: InvalidArgumentError "... do not form a valid RaggedTensor" (each case)
    with pytest.raises(ValueError, match="never decrease"):
        RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 1, 3])
    with pytest.raises(ValueError, match=r"end at len\(values\) = 3"):
        RaggedTensor.from_row_splits([1, 2, 3], [0, 2])
    with pytest.raises(ValueError, match="must be sorted"):
        RaggedTensor.from_value_rowids([1, 2], [1, 0])


def test_sparse_to_dense_and_specs_as_tf():
    st = SparseTensor([[0, 0], [2, 1]], np.float32([1.5, 2.0]), [3, 2])
    assert st.to_dense().tolist() == [[1.5, 0.0], [0.0, 0.0], [0.0, 2.0]]
    assert st.to_dense(default_value=-1.0).tolist() == [[1.5, -1.0], [-1.0, -1.0], [-1.0, 2.0]]
    # TF: RaggedTensorSpec(TensorShape([2, None, None]), tf.int64, 2, tf.int64) and
    # SparseTensorSpec(TensorShape([3, 2]), tf.float32)
    assert RaggedTensorSpec.from_value(NESTED) == RaggedTensorSpec((2, None, None), np.int64, 2)
    assert SparseTensorSpec.from_value(st) == SparseTensorSpec((3, 2), np.float32)
    assert RaggedTensorSpec((None, None), np.int64).is_compatible_with(RaggedTensor([1], [0, 1]))
    with pytest.raises(ValueError, match="needs indices of shape"):
        SparseTensor([[0, 0]], [1, 2], [3, 2])
