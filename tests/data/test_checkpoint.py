"""Checkpointable iterators: restore at every step, compare with the uninterrupted run."""

import json

import numpy as np
import pytest
from data_support import assert_equal_output_after_checkpoint, elements

from phalanx.data import Dataset, TensorSpec
from phalanx.errors import IteratorStateError, NotCheckpointableError

X = np.arange(60, dtype=np.float32).reshape(30, 2)


def _gen(n):
    return Dataset.from_generator(lambda: iter(range(n)), output_signature=TensorSpec((), np.int64))


PIPELINES = {
    "vectorized shuffle/repeat/batch": lambda: (
        Dataset.from_tensor_slices((X, np.arange(30))).cache().shuffle(7, seed=1).repeat(3).batch(4)
    ),
    "generator shuffle (replay)": lambda: _gen(17).shuffle(5, seed=1).repeat(2).batch(3),
    "unseeded shuffle": lambda: Dataset.range(15).shuffle(6).repeat(2),
    "take/skip/shard/batch remainder": lambda: (
        Dataset.range(30).skip(3).take(20).repeat(2).shard(3, 1).batch(4)
    ),
    "interleave": lambda: (
        Dataset.range(1, 6)
        .interleave(
            lambda x: Dataset.range(10 * x, 10 * x + x).shuffle(3, seed=1),
            cycle_length=2,
            block_length=2,
        )
        .batch(2)
    ),
    "parallel interleave": lambda: (
        Dataset.range(0, 7)
        .interleave(
            lambda x: Dataset.range(10 * x, 10 * x + x % 4).shuffle(3, seed=1),
            cycle_length=3,
            block_length=2,
            num_parallel_calls=2,
        )
        .batch(2)
    ),
    "map/filter/prefetch": lambda: (
        Dataset.range(40)
        .map(lambda x: x * 3, num_parallel_calls=3)
        .filter(lambda x: x % 2 == 0)
        .prefetch(3)
    ),
    "prefetch of fast path": lambda: Dataset.range(50).shuffle(50, seed=4).batch(8).prefetch(2),
    "unbatch/rebatch": lambda: Dataset.range(23).batch(5).unbatch().batch(3).rebatch([2, 4]),
    "padded_batch": lambda: Dataset.range(1, 9).map(lambda x: np.full([x], x)).padded_batch(3),
    "cache of generator": lambda: _gen(9).cache().shuffle(4, seed=2).repeat(3).batch(4),
    "zip/concatenate/enumerate": lambda: (
        Dataset.zip((Dataset.range(5), _gen(7)))
        .concatenate(Dataset.zip((Dataset.range(3), Dataset.range(3))))
        .enumerate()
    ),
    "generator map parallel": lambda: (
        _gen(12).map(lambda x: (x, x * 2), num_parallel_calls=2).batch(5)
    ),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_restore_at_every_step(name):
    full = assert_equal_output_after_checkpoint(PIPELINES[name])
    assert len(full) >= 3


def test_restore_at_every_step_of_an_infinite_pipeline():
    make = lambda: Dataset.range(10).shuffle(10, seed=1).repeat().batch(3)  # noqa: E731
    assert_equal_output_after_checkpoint(make, steps=25)


def test_restore_interleave_of_file_sources(tmp_path):
    for i in range(4):
        (tmp_path / f"f{i}.txt").write_text("\n".join(f"{i}-{j}" for j in range(i + 2)))

    from phalanx.data import FileSourceDataset

    class Lines(FileSourceDataset):
        def _read_file(self, filename):
            with open(filename) as f:
                for line in f:
                    yield np.bytes_(line.rstrip("\n").encode())

        def _compute_spec(self):
            return TensorSpec((), np.bytes_)

    for calls in (None, 2):

        def make(calls=calls):
            return Dataset.list_files(str(tmp_path / "*.txt"), seed=5).interleave(
                lambda f: Lines(f), cycle_length=2, block_length=1, num_parallel_calls=calls
            )

        full = assert_equal_output_after_checkpoint(make)
        assert len(full) == 2 + 3 + 4 + 5
    flat = Lines([str(tmp_path / f"f{i}.txt") for i in range(4)])
    assert_equal_output_after_checkpoint(lambda: flat)


def test_state_is_small_and_json():
    it = iter(
        Dataset.from_tensor_slices(np.zeros((100000, 8), np.float32))
        .shuffle(100000, seed=0)
        .repeat()
        .batch(64)
    )
    for _ in range(5):
        next(it)
    assert len(json.dumps(it.get_state())) < 400


def test_nondeterministic_map_is_not_checkpointable():
    it = iter(Dataset.range(10).map(lambda x: x, num_parallel_calls=2, deterministic=False))
    next(it)
    with pytest.raises(NotCheckpointableError, match="deterministic=True"):
        it.get_state()


def test_state_of_another_pipeline_is_refused():
    state = iter(Dataset.range(5).batch(2)).get_state()
    with pytest.raises(IteratorStateError, match="different pipeline"):
        iter(Dataset.range(5).shuffle(2)).set_state(state)
    with pytest.raises(IteratorStateError, match="made by Iterator.get_state"):
        iter(Dataset.range(5)).set_state({"i": 3})


def test_second_iteration_state_restores_the_second_order():
    ds = Dataset.range(10).shuffle(10, seed=3)
    elements(ds)
    it = iter(ds)  # iteration 1: another order
    next(it)
    state = it.get_state()
    rest = elements(it)
    again = iter(Dataset.range(10).shuffle(10, seed=3))
    again.set_state(state)
    assert elements(again) == rest
