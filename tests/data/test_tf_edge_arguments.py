"""Arguments TF 2.21 takes or refuses, taken or refused the same way (issue 28 items 5 and 6).

Each comment gives what TensorFlow 2.21 did with the same call.
"""

import numpy as np
import pytest
from data_support import elements

from phalanx.data import (
    Dataset,
    Example,
    Feature,
    FixedLenFeature,
    Options,
    TensorSpec,
    parse_example,
    parse_single_example,
    serialize_example,
)
from phalanx.errors import DatasetArgumentError, ExampleParseError


def test_prefetch_0_and_none_yield_as_tf():
    # TF 2.21: range(3).prefetch(0) and .prefetch(None) -> [0, 1, 2]
    assert elements(Dataset.range(3).prefetch(0)) == [0, 1, 2]
    assert elements(Dataset.range(3).prefetch(None)) == [0, 1, 2]
    with pytest.raises(DatasetArgumentError, match="buffer_size"):
        Dataset.range(3).prefetch(-2)


def test_enumerate_and_repeat_take_a_0d_integer_array_as_tf():
    # TF 2.21: range(3).enumerate(np.array(5)) -> [(5, 0), (6, 1), (7, 2)];
    # range(2).repeat(np.array(2, np.int32)) -> [0, 1, 0, 1]
    assert elements(Dataset.range(3).enumerate(np.array(5))) == [(5, 0), (6, 1), (7, 2)]
    assert elements(Dataset.range(2).repeat(np.array(2, np.int32))) == [0, 1, 0, 1]
    with pytest.raises(TypeError, match="0-d integer array"):
        Dataset.range(2).repeat(np.array([2]))


def test_from_tensor_slices_of_nothing_is_refused_as_tf():
    # TF 2.21: from_tensor_slices(()) ValueError "Invalid `element`. `element` should not be
    # empty."; from_tensors(()) InvalidArgumentError "Length for attr 'Toutput_types' of 0 must
    # be at least minimum 1"
    with pytest.raises(DatasetArgumentError, match="from_tensor_slices: .* no components"):
        Dataset.from_tensor_slices(())
    with pytest.raises(DatasetArgumentError, match="from_tensors: .* no components"):
        Dataset.from_tensors({})


def test_options_deterministic_must_be_a_bool_as_tf():
    # TF 2.21: TypeError 'Property "deterministic" must be of type <class 'bool'>, got: ...'
    options = Options()
    with pytest.raises(TypeError, match='"deterministic" must be of type bool'):
        options.deterministic = "not a bool"
    options.deterministic = False
    assert Dataset.range(2).with_options(options).options().deterministic is False
    options.deterministic = None
    assert options == Options()


def _ragged(i):
    rows = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20], [21, 22]]
    return np.array(rows[int(i)], np.int64)


def test_the_bucketing_pattern_after_a_map_yields_as_tf():
    # TF 2.21's bucket_by_sequence_length docstring example (its elements made by a map here,
    # whose element_spec phalanx takes from the first element): these three batches
    ds = Dataset.range(6).map(_ragged)
    got = elements(ds.bucket_by_sequence_length(lambda x: len(x), [3, 5], [2, 2, 2]))
    assert got == [
        [[1, 2, 3, 4], [5, 6, 7, 0]],
        [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],
        [[0, 0], [21, 22]],
    ]
    with_shapes = ds.bucket_by_sequence_length(
        lambda x: len(x), [3, 5], [2, 2, 2], padded_shapes=[None]
    )
    assert elements(with_shapes) == got
    # group_by_window's windows padded_batch'ed: the two windows of key 0 and 1, then the
    # windows left at the end in ascending key order
    windows = ds.group_by_window(lambda x: np.int64(len(x) > 3), lambda k, w: w.padded_batch(2), 2)
    assert elements(windows) == [
        [[0, 0, 0], [5, 6, 7]],
        [[1, 2, 3, 4, 0], [7, 8, 9, 10, 11]],
        [[21, 22]],
        [[13, 14, 15, 16, 19, 20]],
    ]


def test_generator_strings_are_utf8_bytes_as_tf():
    # TF 2.21: from_generator(lambda: iter(["é", "b"]), output_types=tf.string) -> [b"\xc3\xa9", b"b"]
    ds = Dataset.from_generator(lambda: iter(["é", "b"]), output_types=str)
    assert elements(ds) == [b"\xc3\xa9", b"b"]
    sig = Dataset.from_generator(
        lambda: iter([np.array(["é"])]), output_signature=TensorSpec((1,), object)
    )
    assert elements(sig) == [[b"\xc3\xa9"]]


def test_parse_example_of_str_records_and_empty_features_as_tf():
    # TF 2.21: a str record is its UTF-8 bytes; an empty Feature() is a missing feature, so a
    # FixedLenFeature's default_value fills it
    record = serialize_example({"a": np.int64([4])})
    spec = {"a": FixedLenFeature([1], np.int64)}
    assert parse_example([record.decode("ascii")], spec)["a"].tolist() == [[4]]
    assert parse_single_example(record.decode("ascii"), spec)["a"].tolist() == [4]
    empty = Example({"a": Feature()}).SerializeToString()
    with_default = {"a": FixedLenFeature([2], np.int64, default_value=[7, 8])}
    assert parse_single_example(empty, with_default)["a"].tolist() == [7, 8]
    assert parse_example([empty, empty], with_default)["a"].tolist() == [[7, 8], [7, 8]]
    with pytest.raises(ExampleParseError, match="has 0 values"):
        parse_example([empty], spec)


def test_bad_inputs_raise_naming_the_argument_as_tf():
    # TF 2.21: TypeError "`output_types` can not be used together with `output_signature`"
    with pytest.raises(
        TypeError, match="output_types cannot be used together with output_signature"
    ):
        Dataset.from_generator(
            lambda: iter([1]), output_types=np.int64, output_signature=TensorSpec((), np.int64)
        )
    # TF 2.21: ValueError "You must provide `padded_shapes` argument because component 0 has
    # unknown rank"
    unknown = Dataset.from_generator(
        lambda: iter([np.arange(2)]), output_signature=TensorSpec(None, np.int64)
    )
    with pytest.raises(DatasetArgumentError, match="provide padded_shapes because component 0"):
        unknown.padded_batch(2)
    assert elements(unknown.padded_batch(2, padded_shapes=[None])) == [[[0, 1]]]


NAMED = [
    lambda: Dataset.range(4, name="n"),
    lambda: Dataset.from_tensor_slices([1, 2], name="n"),
    lambda: Dataset.from_tensors(1, name="n"),
    lambda: Dataset.zip((Dataset.range(2), Dataset.range(2)), name="n"),
    lambda: Dataset.counter(name="n").take(2),
    lambda: Dataset.range(4).map(lambda x: x, name="n"),
    lambda: Dataset.range(4).filter(lambda x: x > 0, name="n"),
    lambda: Dataset.range(4).batch(2, name="n"),
    lambda: Dataset.range(4).shuffle(4, seed=1, name="n"),
    lambda: Dataset.range(4).take(2, name="n"),
    lambda: Dataset.range(4).prefetch(1, name="n"),
    lambda: Dataset.range(4).flat_map(lambda x: Dataset.from_tensors(x), name="n"),
    lambda: Dataset.range(4).concatenate(Dataset.range(1), name="n"),
    lambda: Dataset.range(4).with_options(Options(), name="n"),
]


@pytest.mark.parametrize("make", NAMED)
def test_name_is_taken_as_tf(make):
    # TF 2.21: every source and transformation takes name= (the op's name in its graph)
    ds = make()
    assert "name='n'" in repr(ds) or "name='n'" in repr(ds._inputs()[0])
    assert len(elements(ds)) >= 1
    assert int(Dataset.range(3).reduce(np.int64(0), lambda s, x: s + x, name="n")) == 3
    with pytest.raises(TypeError, match="name must be a str or None"):
        Dataset.range(3).take(2, name=3)


def test_random_as_tf():
    # TF 2.21: Dataset.random(seed) is infinite int64 (cardinality -1), the same sequence on
    # every iteration unless rerandomize_each_iteration=True; values uniform over int64
    ds = Dataset.random(seed=4)
    assert ds.cardinality() == -1 and ds.element_spec == TensorSpec((), np.int64)
    assert elements(ds.take(5)) == elements(ds.take(5))
    again = Dataset.random(seed=4, rerandomize_each_iteration=True).take(5)
    assert elements(again) != elements(again)
    values = np.array(elements(Dataset.random(seed=2).take(4000)))
    assert 0.45 < (values < 0).mean() < 0.55 and len(set(values.tolist())) == 4000
    it = iter(Dataset.random(seed=1))
    _ = [next(it) for _ in range(4100)]  # past a block of 4096
    state = it.get_state()
    rest = iter(Dataset.random(seed=1))
    rest.set_state(state)
    assert elements(rest, 3) == elements(it, 3)
    with pytest.raises(TypeError, match="seed must be an int"):
        Dataset.random(seed="1")
