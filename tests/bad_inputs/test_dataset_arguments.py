"""Bad arguments to ``Dataset`` methods tf.data refuses: a phalanx error when the method is
called, not a Python error while iterating (or a silent ``int()``: ``take("3")``, ``take(2.5)``)."""

import pytest
from catalog import Case, run

from phalanx import data as D
from phalanx.errors import DatasetArgumentError, DatasetTypeError

R = D.Dataset.range

CASES = [
    Case(
        "take a str",
        lambda: R(5).take("3"),
        DatasetTypeError,
        r"take: count must be an int \(or a 0-d integer array\), got '3' of type str",
    ),
    Case("take a float", lambda: R(5).take(2.5), DatasetTypeError, r"take: count .*got 2.5"),
    Case("skip a str", lambda: R(5).skip("1"), DatasetTypeError, r"skip: count .*got '1'"),
    Case("repeat a float", lambda: R(5).repeat(2.0), DatasetTypeError, r"repeat: count .*2.0"),
    Case("enumerate a str", lambda: R(5).enumerate("a"), DatasetTypeError, r"enumerate: start"),
    Case(
        "range a str",
        lambda: R("a"),
        DatasetTypeError,
        r"range: each argument \(start, stop, step\) must be an int \(or a 0-d integer array\), got 'a'",
    ),
    Case(
        "filter not callable",
        lambda: R(5).filter(3),
        DatasetTypeError,
        r"filter expects a callable predicate .*got int 3",
    ),
    Case(
        "interleave not callable",
        lambda: R(3).interleave(3),
        DatasetTypeError,
        r"interleave expects a callable map_func .*got int 3",
    ),
    Case(
        "apply not callable",
        lambda: R(3).apply(3),
        DatasetTypeError,
        r"apply expects a callable transformation_func",
    ),
    Case(
        "from_generator given a generator's result",
        lambda: D.Dataset.from_generator(iter([1, 2])),
        DatasetTypeError,
        r"from_generator expects a callable generator \(the generator function, not its result\)",
    ),
    Case(
        "cache to an int",
        lambda: R(5).cache(123),
        DatasetTypeError,
        r"cache expects a file name \(str or os.PathLike\) .*got int 123",
    ),
    Case(
        "zip of an int",
        lambda: D.Dataset.zip((R(3), 3)),
        DatasetTypeError,
        r"zip expects datasets .*got int 3",
    ),
    Case(
        "concatenate an int",
        lambda: R(3).concatenate(3),
        DatasetTypeError,
        r"concatenate expects a Dataset, got int 3",
    ),
    Case(
        "with_options a dict",
        lambda: R(3).with_options({"deterministic": False}),
        DatasetTypeError,
        r"with_options expects a phalanx.data.Options, got dict",
    ),
    Case(
        "map num_parallel_calls 0",
        lambda: R(3).map(lambda x: x, num_parallel_calls=0),
        DatasetArgumentError,
        r"map: num_parallel_calls must be a positive int or AUTOTUNE \(or None for no threads\), "
        r"got 0",
    ),
    Case(
        "batch num_parallel_calls -5",
        lambda: R(3).batch(2, num_parallel_calls=-5),
        DatasetArgumentError,
        r"batch: num_parallel_calls .*got -5",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_dataset_argument(case):
    run(case)


def test_what_tf_data_accepts_is_accepted():
    """numpy ints, -1 (all / forever), AUTOTUNE, None and a shuffle buffer of 1, as tf.data."""
    import numpy as np

    assert list(R(5).take(np.int64(2))) == [0, 1]
    assert list(R(5).take(-1)) == [0, 1, 2, 3, 4]
    assert list(R(3).repeat(-1).take(5)) == [0, 1, 2, 0, 1]
    assert list(R(3).repeat(None).take(4)) == [0, 1, 2, 0]
    assert list(R(4).map(lambda x: x * 2, num_parallel_calls=D.AUTOTUNE)) == [0, 2, 4, 6]
    assert list(R(4).map(lambda x: x, num_parallel_calls=2)) == [0, 1, 2, 3]
    assert sorted(R(4).shuffle(1)) == [0, 1, 2, 3]
    assert list(R(np.int32(2))) == [0, 1]
