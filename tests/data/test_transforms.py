"""Transformations, with expected outputs copied from tf.data's documented examples."""

import itertools

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, Options, TensorSpec
from phalanx.errors import (
    BatchShapeError,
    DatasetArgumentError,
    PaddingError,
    StructureMismatchError,
)


def test_batch_tf_docstring():
    assert elements(Dataset.range(8).batch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert elements(Dataset.range(8).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert Dataset.range(8).batch(3).element_spec == TensorSpec((None,), np.int64)
    assert Dataset.range(8).batch(3, drop_remainder=True).element_spec == TensorSpec((3,), np.int64)


def test_repeat_before_or_after_batch():
    assert elements(Dataset.range(3).repeat(2).batch(4)) == [[0, 1, 2, 0], [1, 2]]
    assert elements(Dataset.range(3).batch(2).repeat(2)) == [[0, 1], [2], [0, 1], [2]]
    assert elements(Dataset.from_tensor_slices([1, 2, 3]).repeat(3)) == [1, 2, 3] * 3
    assert elements(Dataset.range(3).repeat(0)) == []
    assert elements(Dataset.range(0).repeat()) == []  # an empty epoch ends an infinite repeat
    assert elements(Dataset.range(2).repeat(), limit=5) == [0, 1, 0, 1, 0]


def test_take_skip_shard_tf_docstrings():
    assert elements(Dataset.range(10).take(3)) == [0, 1, 2]
    assert elements(Dataset.range(10).skip(7)) == [7, 8, 9]
    assert elements(Dataset.range(10).take(-1)) == list(range(10))
    assert elements(Dataset.range(10).skip(-1)) == []
    assert elements(Dataset.range(10).shard(num_shards=3, index=0)) == [0, 3, 6, 9]
    assert elements(Dataset.range(10).shard(num_shards=3, index=1)) == [1, 4, 7]
    assert elements(Dataset.range(10).shard(num_shards=3, index=2)) == [2, 5, 8]
    assert [Dataset.range(10).shard(3, i).cardinality() for i in range(3)] == [4, 3, 3]
    with pytest.raises(DatasetArgumentError, match=r"index must be in \[0, num_shards=3\)"):
        Dataset.range(10).shard(3, 3)


def test_filter_map_enumerate():
    assert elements(Dataset.from_tensor_slices([1, 2, 3]).filter(lambda x: x < 3)) == [1, 2]
    assert elements(Dataset.from_tensor_slices([1, 2, 3]).enumerate(start=5)) == [
        (5, 1),
        (6, 2),
        (7, 3),
    ]
    pairs = Dataset.from_tensor_slices(([1, 2], [3, 4])).map(lambda a, b: a + b)
    assert elements(pairs) == [4, 6]
    d = Dataset.from_tensor_slices({"a": [1, 2]}).map(lambda e: {"a": e["a"] * 2, "b": 1.5})
    assert elements(d) == [{"a": 2, "b": 1.5}, {"a": 4, "b": 1.5}]
    assert d.element_spec["b"] == TensorSpec((), np.float32)
    assert elements(Dataset.range(5).apply(lambda ds: ds.filter(lambda x: x % 2 == 0))) == [0, 2, 4]


def test_map_parallel_keeps_order_and_nondeterministic_has_all():
    ds = Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=4)
    assert elements(ds) == [2 * i for i in range(50)]
    loose = Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=4, deterministic=False)
    assert sorted(elements(loose)) == [2 * i for i in range(50)]


def test_map_output_structure_change_is_a_clear_error():
    ds = Dataset.range(3).map(lambda x: (x, x) if x < 1 else x)
    with pytest.raises(
        StructureMismatchError, match=r"returned array, but earlier it returned \(array, array\)"
    ):
        list(ds)


def test_map_error_propagates_from_threads():
    def boom(x):
        if x == 3:
            raise ValueError("bad element 3")
        return x

    with pytest.raises(ValueError, match="bad element 3"):
        list(Dataset.range(10).map(boom, num_parallel_calls=2))


def test_batch_of_different_shapes_names_the_element():
    ds = Dataset.range(1, 4).map(lambda x: np.ones(x)).batch(3)
    with pytest.raises(
        BatchShapeError,
        match=r"element 0 of the batch has shape \(1,\), element 1 = dataset element 1 has shape \(2,\).*padded_batch",
    ):
        list(ds)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_sizes_must_be_positive(bad):
    with pytest.raises(DatasetArgumentError, match="batch_size must be a positive int"):
        Dataset.range(3).batch(bad)
    with pytest.raises(DatasetArgumentError, match="buffer_size must be a positive int"):
        Dataset.range(3).shuffle(bad)
    # prefetch(0) and prefetch(None) yield, as TF 2.21 (test_tf_edge_arguments.py)
    with pytest.raises(DatasetArgumentError, match="buffer_size must be an int >= 0"):
        Dataset.range(3).prefetch(bad if bad == 1.5 else -2)


def _a():
    return Dataset.range(1, 5, output_type=np.int32).map(lambda x: np.full([x], x))


def test_padded_batch_tf_docstring():
    assert elements(_a().padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert elements(_a().padded_batch(2, padded_shapes=5)) == [
        [[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]],
        [[3, 3, 3, 0, 0], [4, 4, 4, 4, 0]],
    ]
    assert elements(_a().padded_batch(2, padded_shapes=5, padding_values=-1)) == [
        [[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]],
        [[3, 3, 3, -1, -1], [4, 4, 4, 4, -1]],
    ]
    e = elements(Dataset.zip((_a(), _a())).padded_batch(2, padding_values=-1))
    assert e == [
        ([[1, -1], [2, 2]], [[1, -1], [2, 2]]),
        ([[3, 3, 3, -1], [4, 4, 4, 4]], [[3, 3, 3, -1], [4, 4, 4, 4]]),
    ]
    assert next(iter(_a().padded_batch(2))).dtype == np.int32


def test_padded_batch_nested_tf_docstring():
    data = [([1, 2, 3], [10]), ([4, 5], [11, 12])]
    ds = Dataset.from_generator(
        lambda: iter(data),
        output_signature=(TensorSpec((None,), np.int32), TensorSpec((None,), np.int32)),
    )
    out = elements(ds.padded_batch(2, padded_shapes=([4], [None]), padding_values=(-1, 100)))
    assert out == [([[1, 2, 3, -1], [4, 5, -1, -1]], [[10, 100], [11, 12]])]
    with pytest.raises(PaddingError, match="larger than the padded shape"):
        list(ds.padded_batch(2, padded_shapes=([2], [None])))


def test_unbatch_and_rebatch_tf_docstrings():
    assert elements(Dataset.range(6).batch(4).unbatch()) == list(range(6))
    assert elements(Dataset.from_tensor_slices(([[1, 2], [3, 4]], [[5, 6], [7, 8]])).unbatch()) == [
        (1, 5),
        (2, 6),
        (3, 7),
        (4, 8),
    ]
    assert elements(Dataset.range(6).batch(2).rebatch(3)) == [[0, 1, 2], [3, 4, 5]]
    assert elements(Dataset.range(7).batch(4).rebatch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert elements(Dataset.range(7).batch(2).rebatch(3, drop_remainder=True)) == [
        [0, 1, 2],
        [3, 4, 5],
    ]
    assert elements(Dataset.range(8).batch(4).rebatch([2, 1, 1])) == [
        [0, 1],
        [2],
        [3],
        [4, 5],
        [6],
        [7],
    ]
    assert elements(Dataset.range(7).batch(2).rebatch([1, 2, 1, 3])) == [
        [0],
        [1, 2],
        [3],
        [4, 5, 6],
    ]


def test_interleave_tf_docstring():
    ds = Dataset.range(1, 6).interleave(
        lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4
    )
    assert elements(ds) == [
        1,
        1,
        1,
        1,
        2,
        2,
        2,
        2,
        1,
        1,
        2,
        2,
        3,
        3,
        3,
        3,
        4,
        4,
        4,
        4,
        3,
        3,
        4,
        4,
        5,
        5,
        5,
        5,
        5,
        5,
    ]


def test_interleave_uneven_inner_lengths_reference():
    # Reference: TensorFlow's InterleaveDatasetOp loop, written out in Python.
    def reference(inputs, make, cycle, block):
        slots, ci, bi, out, it_in, end = [None] * cycle, 0, 0, [], iter(inputs), False
        while not end or any(s is not None for s in slots):
            if slots[ci] is not None:
                x = next(slots[ci], None)
                if x is None:
                    slots[ci], ci, bi = None, (ci + 1) % cycle, 0
                    continue
                out.append(x)
                bi += 1
                if bi == block:
                    ci, bi = (ci + 1) % cycle, 0
            elif not end:
                v = next(it_in, None)
                if v is None:
                    end = True
                else:
                    slots[ci] = iter(make(v))
            else:
                ci, bi = (ci + 1) % cycle, 0
        return out

    for cycle, block in itertools.product([1, 2, 3], [1, 2, 3]):
        ds = Dataset.range(1, 7).interleave(
            lambda x: Dataset.range(10 * x, 10 * x + x), cycle_length=cycle, block_length=block
        )
        assert elements(ds) == reference(
            range(1, 7), lambda v: range(10 * v, 10 * v + v), cycle, block
        )


def test_options_and_auto_shard_policy():
    from phalanx.data import AutoShardPolicy

    options = Options()
    options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA
    ds = Dataset.range(3).with_options(options).map(lambda x: x)
    assert ds.options().experimental_distribute.auto_shard_policy == AutoShardPolicy.DATA
    assert (
        Dataset.range(3).options().experimental_distribute.auto_shard_policy == AutoShardPolicy.AUTO
    )
    later = Options()
    later.deterministic = False
    both = ds.with_options(later).options()
    assert both.deterministic is False
    assert both.experimental_distribute.auto_shard_policy == AutoShardPolicy.DATA
    assert [p.name for p in AutoShardPolicy][:4] == ["OFF", "AUTO", "FILE", "DATA"]


def test_exhausted_iterator_keeps_raising_stop_iteration():
    it = iter(Dataset.range(2).prefetch(1))
    assert elements(it) == [0, 1]
    for _ in range(2):
        with pytest.raises(StopIteration):
            next(it)
