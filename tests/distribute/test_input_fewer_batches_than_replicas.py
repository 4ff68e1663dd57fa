"""``distribute_datasets_from_function`` whose pipeline has fewer per-replica batches than
replicas: the input tutorial's ``dataset_fn`` (``batch(ctx.get_per_replica_batch_size(8))``)
over 4 examples of shape ``[16, 1]`` on 2 replicas, one per-replica batch in all.

TF 2.21 (MirroredStrategy on 2 logical CPUs) gives replica 0 that batch, ``[4, 16, 1]``, and
replica 1 an empty ``[0, 16, 1]``. A compiled step takes one shape, so phalanx does what its
partial-batch policy says: ``"error"`` (default) raises with the numbers, ``"pad"`` gives
replica 0 the same 4 examples and replica 1 4 masked rows, ``"drop"`` skips the step. Before,
the one batch was split ``[2, 16, 1]`` each, without a word.
"""

import jax
import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.errors import BatchNotDivisibleError

X = np.arange(4 * 16, dtype=np.float32).reshape(4, 16, 1)


def _dist(policy):
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(8)
        return Dataset.from_tensor_slices(X).batch(batch_size)

    options = phalanx.distribute.InputOptions(partial_batch=policy)
    return strategy, strategy.distribute_datasets_from_function(dataset_fn, options=options)


def test_one_batch_for_two_replicas_is_a_partial_batch():
    _, dist = _dist("error")
    with pytest.raises(
        BatchNotDivisibleError, match="partial batch of 4 examples after batches of 8"
    ):
        next(iter(dist))


def test_pad_gives_replica_0_tfs_batch_and_replica_1_only_padding():
    strategy, dist = _dist("pad")
    batches = list(dist)
    assert len(batches) == 1
    batch, mask = batches[0]
    rows = strategy.experimental_local_results(batch)
    masks = strategy.experimental_local_results(mask)
    assert [r.shape for r in rows] == [(4, 16, 1), (4, 16, 1)]
    np.testing.assert_array_equal(rows[0], X)  # TF's replica 0: [4, 16, 1], these examples
    np.testing.assert_array_equal(masks[0], np.ones(4))
    np.testing.assert_array_equal(masks[1], np.zeros(4))  # TF's replica 1: empty


def test_drop_skips_the_only_step():
    _, dist = _dist("drop")
    assert list(dist) == []


def test_full_shares_are_unchanged():
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    x = np.arange(8, dtype=np.float32)
    dist = strategy.distribute_datasets_from_function(
        lambda ctx: Dataset.from_tensor_slices(x).batch(ctx.get_per_replica_batch_size(4))
    )
    got = [[np.asarray(r) for r in strategy.experimental_local_results(b)] for b in dist]
    np.testing.assert_array_equal(got, [[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
