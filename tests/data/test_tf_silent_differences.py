"""Issue 28 item 4: places where phalanx silently differed from tf.data.

The expected values are TensorFlow 2.21's, from its kernel tests where they have one
(rebatch_test.py: testShapeInference*, testEmptySplits, testEmptyFirstSplits,
testEmptyLastSplits; padded_batch_test.py: testPaddedBatchDatasetNonDefaultPadding's
'<end>' strings) or from its kernels (cache_dataset_ops.cc completes a memory cache when
it holds the input's cardinality; interleave_dataset_op.cc and
parallel_interleave_dataset_op.cc's ComputeCycleLength for cycle_length=AUTOTUNE).
"""

import os

import numpy as np
import pytest
from data_support import elements

from phalanx.data import AUTOTUNE, Dataset, experimental
from phalanx.data import _interleave as interleave_module
from phalanx.errors import DatasetArgumentError, DatasetTypeError


def test_concatenate_of_other_dtypes_is_a_type_error():
    # TF 2.21: TypeError "Incompatible dataset elements"
    ints = Dataset.from_tensor_slices(np.arange(3))
    with pytest.raises(DatasetTypeError, match="int64 vs float64") as e:
        ints.concatenate(Dataset.from_tensor_slices(np.arange(3.0)))
    assert isinstance(e.value, TypeError)
    pairs = Dataset.from_tensor_slices((np.arange(2), np.arange(2)))
    with pytest.raises(TypeError, match="in component 1"):
        pairs.concatenate(Dataset.from_tensor_slices((np.arange(2), np.arange(2, dtype=np.int32))))
    words = Dataset.from_tensor_slices(np.array([b"a"])).concatenate(
        Dataset.from_tensor_slices(np.array([b"bcd"]))  # strings of any width are one dtype
    )
    assert elements(words) == [b"a", b"bcd"]


def test_padded_batch_pads_strings_with_the_whole_str_as_bytes():
    # TF's testPaddedBatchDatasetNonDefaultPadding: padding_values=(-1, "<end>")
    def fill(x):
        n = int(x)
        return np.full(n, n, np.int32), np.array([str(n).encode()] * n)

    ds = Dataset.from_tensor_slices(np.array([1, 3, 2])).map(fill)
    ((numbers, words),) = elements(ds.padded_batch(3, padding_values=(-1, "<end>")))
    assert numbers == [[1, -1, -1], [3, 3, 3], [2, 2, -1]]
    assert words == [[b"1", b"<end>", b"<end>"], [b"3"] * 3, [b"2", b"2", b"<end>"]]
    with pytest.raises(DatasetTypeError, match="holds strings"):
        ds.padded_batch(3, padding_values=(-1, 0))
    with pytest.raises(DatasetTypeError, match="padding value is the string"):
        ds.padded_batch(3, padding_values=("x", b""))


def test_shuffle_cache_read_to_its_last_element_keeps_the_order():
    # TF 2.21: the memory cache is complete once it holds the input's 10 elements, even if
    # the iterator never asked past them, so the next pass repeats the order
    ds = Dataset.range(10).shuffle(10).cache()
    it = iter(ds)
    first = [int(next(it)) for _ in range(10)]
    assert elements(ds) == first and elements(ds) == first
    partly = Dataset.range(10).shuffle(10, seed=1).cache()
    it = iter(partly)
    _ = [next(it) for _ in range(9)]  # not all of them: the cache is discarded, as TF
    assert sorted(elements(partly)) == list(range(10))


@pytest.mark.parametrize(
    "parallel, cores, want", [(None, 8, 8), (4, 8, 4), (16, 8, 8), (AUTOTUNE, 8, 3), (None, 2, 2)]
)
def test_interleave_cycle_length_none(monkeypatch, parallel, cores, want):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert interleave_module._autotuned_cycle_length(parallel) == want
    ds = Dataset.range(4).interleave(
        lambda x: Dataset.from_tensors(x).repeat(2), cycle_length=None, num_parallel_calls=parallel
    )
    assert ds._cycle == want
    if cores == 2:  # two open at a time
        assert elements(ds) == [0, 1, 0, 1, 2, 3, 2, 3]


def test_rebatch_static_batch_dimension_as_tf():
    whole = Dataset.range(8).batch(4, drop_remainder=True)
    partial = Dataset.range(8).batch(4)
    odd = Dataset.range(10).batch(5, drop_remainder=True)
    cases = [
        (whole.rebatch([2, 1, 1]), (None,)),  # testShapeInferenceNotAllBatchSizesEqual
        (whole.rebatch([2, 2]), (2,)),  # testShapeInferenceInputBatchDimDivisible
        (whole.rebatch([2, 2], drop_remainder=True), (2,)),
        (whole.rebatch(2), (2,)),  # testScalarBatchSizeInput
        (partial.rebatch([2, 2]), (None,)),  # testShapeInferenceInputBatchDimUnknown
        (partial.rebatch([2, 2], drop_remainder=True), (2,)),
        (odd.rebatch([2, 2]), (None,)),  # testShapeInferenceInputBatchDimIndivisible
        (odd.rebatch([2, 2], drop_remainder=True), (2,)),
    ]
    for ds, shape in cases:
        assert ds.element_spec.shape == shape
    nested = Dataset.range(16).batch(2, drop_remainder=True).batch(4, drop_remainder=True)
    assert nested.rebatch([2, 2]).element_spec.shape == (2, 2)  # testMultipleBatches


@pytest.mark.parametrize("drop", [False, True])
def test_rebatch_zero_sizes_give_empty_batches(drop):
    ds = Dataset.range(8).batch(4, drop_remainder=True)
    # testEmptySplits, testEmptyFirstSplits, testEmptyLastSplits
    assert elements(ds.rebatch([1, 1, 1, 1, 0], drop)) == [
        [0],
        [1],
        [2],
        [3],
        [],
        [4],
        [5],
        [6],
        [7],
        [],
    ]
    assert elements(ds.rebatch([0, 1], drop)) == [[]] + [x for i in range(8) for x in ([i], [])]
    assert elements(ds.rebatch([1, 0], drop)) == [x for i in range(8) for x in ([i], [])]
    assert ds.rebatch([0, 1], drop).element_spec.shape == (None,)
    empty = next(iter(ds.rebatch([0, 1], drop)))
    assert empty.shape == (0,) and empty.dtype == np.int64
    with pytest.raises(DatasetArgumentError, match="no positive size"):
        ds.rebatch([0, 0])
    with pytest.raises(DatasetArgumentError, match="int >= 0"):
        ds.rebatch([2, -1])


def test_shuffle_and_repeat_cardinality():
    # TF 2.21: shuffle_and_repeat is shuffle(...).repeat(count): 0 on an empty dataset
    empty = Dataset.range(0)
    assert empty.apply(experimental.shuffle_and_repeat(3)).cardinality() == 0
    assert empty.apply(experimental.shuffle_and_repeat(3, count=2)).cardinality() == 0
    three = Dataset.range(3)
    assert three.apply(experimental.shuffle_and_repeat(3)).cardinality() == -1
    assert three.apply(experimental.shuffle_and_repeat(3, count=2)).cardinality() == 6
