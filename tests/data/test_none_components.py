"""``None`` components (TensorFlow's ``NoneTensorSpec``), case by case against TF 2.21.

The expected elements and specs were recorded with TensorFlow 2.21
(``tensorflow/python/data/kernel_tests``: dataset_test.py ``testNoneComponent``,
map_test.py ``testNoneComponent``, rebatch_test.py, and the same pattern through the
other transformations); TensorFlow is not imported here.
"""

import os

import numpy as np
import pytest

from phalanx.data import Dataset, NoneTensorSpec, TensorSpec
from phalanx.errors import DatasetArgumentError, DatasetFunctionError, DatasetTypeError


def _elements(ds):
    return list(ds)


def _same(got, want):
    """Structure, dtype, shape and values equal; ``None`` where TF yields ``None``."""
    if want is None:
        assert got is None
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want)
        for k in want:
            _same(got[k], want[k])
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _i32(v):
    return np.int32(v)


def _i64(v):
    return np.int64(v)


def _with_none(ds):
    return ds.map(lambda x: (x, None))


# (name, pipeline, TF 2.21's element_spec, TF 2.21's elements)
CASES = [
    (
        "from_tensors((42, None))",
        lambda: Dataset.from_tensors((42, None)),
        (TensorSpec((), "int32"), NoneTensorSpec()),
        [(_i32(42), None)],
    ),
    (
        "from_tensors(dict with None)",
        lambda: Dataset.from_tensors({"a": 1, "b": None}),
        {"a": TensorSpec((), "int32"), "b": NoneTensorSpec()},
        [{"a": _i32(1), "b": None}],
    ),
    (
        "from_tensor_slices(dict with None)",
        lambda: Dataset.from_tensor_slices({"a": [1, 2], "b": None}),
        {"a": TensorSpec((), "int32"), "b": NoneTensorSpec()},
        [{"a": _i32(1), "b": None}, {"a": _i32(2), "b": None}],
    ),
    (
        "from_tensor_slices(([1, 2], None))",
        lambda: Dataset.from_tensor_slices(([1, 2], None)),
        (TensorSpec((), "int32"), NoneTensorSpec()),
        [(_i32(1), None), (_i32(2), None)],
    ),
    (
        "map sees None (map_test testNoneComponent)",
        lambda: Dataset.from_tensors((42, None)).map(lambda x, y: x / 2 if y is None else x),
        TensorSpec((), "float64"),
        [np.float64(21.0)],
    ),
    (
        "range(int32).map -> (x, None)",
        lambda: _with_none(Dataset.range(3, output_type="int32")),
        (TensorSpec((), "int32"), NoneTensorSpec()),
        [(_i32(i), None) for i in range(3)],
    ),
    (
        "batch(4)",
        lambda: _with_none(Dataset.range(10)).batch(4),
        (TensorSpec((None,), "int64"), NoneTensorSpec()),
        [(np.arange(4), None), (np.arange(4, 8), None), (np.arange(8, 10), None)],
    ),
    (
        "batch(10).map(lambda x, y: x)",
        lambda: _with_none(Dataset.range(10)).batch(10).map(lambda x, y: x),
        TensorSpec((None,), "int64"),
        [np.arange(10)],
    ),
    (
        "batch(2, drop_remainder=True)",
        lambda: _with_none(Dataset.range(5)).batch(2, drop_remainder=True),
        (TensorSpec((2,), "int64"), NoneTensorSpec()),
        [(np.arange(2), None), (np.arange(2, 4), None)],
    ),
    (
        "batch(2).unbatch()",
        lambda: _with_none(Dataset.range(4)).batch(2).unbatch(),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(i), None) for i in range(4)],
    ),
    (
        "rebatch([2, 2]) (rebatch_test)",
        lambda: _with_none(Dataset.range(4)).batch(4, drop_remainder=True).rebatch([2, 2]),
        (TensorSpec((2,), "int64"), NoneTensorSpec()),
        [(np.arange(2), None), (np.arange(2, 4), None)],
    ),
    (
        "shuffle(1)",
        lambda: _with_none(Dataset.range(3)).shuffle(1),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(i), None) for i in range(3)],
    ),
    (
        "cache()",
        lambda: _with_none(Dataset.range(3)).cache(),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(i), None) for i in range(3)],
    ),
    (
        "concatenate",
        lambda: _with_none(Dataset.range(2)).concatenate(_with_none(Dataset.range(2))),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(0), None), (_i64(1), None), (_i64(0), None), (_i64(1), None)],
    ),
    (
        "filter",
        lambda: _with_none(Dataset.range(4)).filter(lambda x, y: x % 2 == 0),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(0), None), (_i64(2), None)],
    ),
    (
        "window(2).map(reduce of the array windows)",
        lambda: (
            _with_none(Dataset.range(4))
            .window(2)
            .map(lambda a, b: a.reduce(np.int64(0), lambda s, v: s + v))
        ),
        TensorSpec((), "int64"),
        [_i64(1), _i64(5)],
    ),
    (
        "enumerate",
        lambda: _with_none(Dataset.range(2)).enumerate(),
        (TensorSpec((), "int64"), (TensorSpec((), "int64"), NoneTensorSpec())),
        [(_i64(0), (_i64(0), None)), (_i64(1), (_i64(1), None))],
    ),
    (
        "scan to (s, None)",
        lambda: Dataset.range(3).scan(np.int64(0), lambda s, x: (s + x, (s, None))),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(0), None), (_i64(0), None), (_i64(1), None)],
    ),
    (
        "from_generator with NoneTensorSpec",
        lambda: Dataset.from_generator(
            lambda: iter([(1, None)]),
            output_signature=(TensorSpec((), "int32"), NoneTensorSpec()),
        ),
        (TensorSpec((), "int32"), NoneTensorSpec()),
        [(_i32(1), None)],
    ),
    (
        "interleave",
        lambda: Dataset.range(2).interleave(lambda x: Dataset.from_tensors((x, None)), 2),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(0), None), (_i64(1), None)],
    ),
    (
        "skip(1).take(2)",
        lambda: _with_none(Dataset.range(5)).skip(1).take(2),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(1), None), (_i64(2), None)],
    ),
    (
        "repeat(2)",
        lambda: Dataset.from_tensors((1, None)).repeat(2),
        (TensorSpec((), "int32"), NoneTensorSpec()),
        [(_i32(1), None), (_i32(1), None)],
    ),
    (
        "prefetch(1)",
        lambda: _with_none(Dataset.range(2)).prefetch(1),
        (TensorSpec((), "int64"), NoneTensorSpec()),
        [(_i64(0), None), (_i64(1), None)],
    ),
    (
        "group_by_window batches",
        lambda: _with_none(Dataset.range(4)).group_by_window(
            lambda x, y: x % 2, lambda k, w: w.batch(2), 2
        ),
        (TensorSpec((None,), "int64"), NoneTensorSpec()),
        [(np.array([0, 2]), None), (np.array([1, 3]), None)],
    ),
]


@pytest.mark.parametrize("name, make, spec, elements", CASES, ids=[c[0] for c in CASES])
def test_none_components_match_tf(name, make, spec, elements):
    ds = make()
    assert ds.element_spec == spec
    got = _elements(ds)
    assert len(got) == len(elements)
    for g, w in zip(got, elements, strict=True):
        _same(g, w)


def test_reduce_over_none_components():
    # TF 2.21: 3
    total = _with_none(Dataset.range(3)).reduce(np.int64(0), lambda s, e: s + e[0])
    _same(total, _i64(3))


def test_file_cache_and_save_load_keep_none(tmp_path):
    ds = _with_none(Dataset.range(3))
    want = [(_i64(i), None) for i in range(3)]
    cached = ds.cache(os.fspath(tmp_path / "c"))
    for _ in range(2):  # the fill pass, then the file
        for g, w in zip(_elements(cached), want, strict=True):
            _same(g, w)
    reread = _with_none(Dataset.range(3)).cache(os.fspath(tmp_path / "c"))
    assert reread.element_spec == (TensorSpec((), "int64"), NoneTensorSpec())
    for g, w in zip(_elements(reread), want, strict=True):
        _same(g, w)
    ds.save(os.fspath(tmp_path / "saved"))
    loaded = Dataset.load(os.fspath(tmp_path / "saved"))
    assert loaded.element_spec == (TensorSpec((), "int64"), NoneTensorSpec())
    for g, w in zip(_elements(loaded), want, strict=True):
        _same(g, w)


def test_checkpoint_through_none_components():
    ds = _with_none(Dataset.range(6)).shuffle(4, seed=1).batch(2)
    it = iter(ds)
    next(it)
    state = it.get_state()
    rest = list(it)
    it2 = iter(ds)
    it2.set_state(state)
    again = list(it2)
    assert len(rest) == len(again) == 2
    for g, w in zip(again, rest, strict=True):
        _same(g, w)


# Where TF 2.21 raises.


@pytest.mark.parametrize("value", [None, (None,)])
def test_from_tensors_of_only_none_raises(value):
    # TF: InvalidArgumentError "Length for attr 'output_shapes' of 0 must be at least minimum 1"
    with pytest.raises(DatasetArgumentError, match="no components"):
        Dataset.from_tensors(value)


@pytest.mark.parametrize("value", [None, (None, None)])
def test_from_tensor_slices_of_only_none_raises(value):
    # TF: ValueError "Invalid `element`. `element` should not be empty."
    with pytest.raises(DatasetArgumentError, match="no components"):
        Dataset.from_tensor_slices(value)


def test_map_returning_none_raises():
    # TF: InvalidArgumentError "Length for attr 'output_types' of 0 must be at least minimum 1"
    ds = Dataset.range(3).map(lambda x: None)
    with pytest.raises(DatasetFunctionError, match="without arrays"):
        list(ds)
    with pytest.raises(DatasetFunctionError, match="without arrays"):
        ds.element_spec  # noqa: B018


@pytest.mark.parametrize(
    "make",
    [
        lambda: Dataset.range(5).map(lambda x: (np.full([x], x), None)),
        lambda: Dataset.from_tensors({"a": [1], "b": None}),
    ],
)
def test_padded_batch_of_none_component_raises(make):
    # TF: TypeError "`padded_batch` is only supported for datasets that produce tensor
    # elements but type spec of elements ... is not a subclass of TensorSpec: `NoneTensorSpec()`"
    with pytest.raises(DatasetTypeError, match="None component"):
        make().padded_batch(2)


def test_unique_of_none_component_raises():
    # TF: TypeError "`tf.data.Dataset.unique` does not support type NoneTensorSpec()"
    with pytest.raises(DatasetTypeError, match="single component"):
        _with_none(Dataset.range(2)).unique()


def test_none_tensor_spec_repr_and_equality():
    assert repr(NoneTensorSpec()) == "NoneTensorSpec()"
    assert NoneTensorSpec() == NoneTensorSpec()
    assert NoneTensorSpec() != TensorSpec(())
    assert repr(Dataset.from_tensors((1, None))).endswith(
        "element_spec=(TensorSpec(shape=(), dtype=int32, name=None), NoneTensorSpec())>"
    )
