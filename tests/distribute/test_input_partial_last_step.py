"""A custom loop over ``experimental_distribute_dataset`` whose last batch is short: the
input tutorial's loop shape (``for inputs in dist_dataset: train_step(inputs)``).

TF 2.21, MirroredStrategy on 2 logical CPUs, 100 examples ``x ~ N(0, 1)`` (numpy seed 0),
``y = 2x``, ``batch(16)``, ``w = 0.5``, SGD 0.1, ``compute_average_loss(global_batch_size=16)``:
7 steps (the last of 4 examples), the losses and weight below. phalanx runs the short step
too (each replica 2 rows; ``range(10).batch(4)`` ends ``[[8], [9]]`` in both). A short
batch that does not divide by the replicas is still refused (test_input.py); TF's
``get_next_as_optional`` over ``range(9).batch(2)`` ends ``[[8], []]``, refused here likewise.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.errors import BatchNotDivisibleError

TF_LOSSES = [
    1.8982036113739014,
    0.7434614896774292,
    1.2887330055236816,
    0.8159192800521851,
    0.7057662606239319,
    0.23149725794792175,
    0.04819425195455551,
]
TF_W = 1.5903131


def _step(w, inputs):
    f, label = inputs

    def loss_fn(w):
        per_example = jnp.sum((f @ w - label) ** 2, axis=1)
        return phalanx.compute_average_loss(per_example, global_batch_size=16)

    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


def test_short_last_step_runs_with_tfs_numbers():
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 1)).astype(np.float32)
    dist = strategy.experimental_distribute_dataset(
        Dataset.from_tensor_slices((x, 2 * x)).batch(16)
    )
    with strategy.scope():
        w = strategy.replicate(np.full((1, 1), 0.5, np.float32))
    losses = []
    for inputs in dist:
        w, loss = strategy.run(_step, args=(w, inputs))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    assert len(losses) == 7
    np.testing.assert_allclose(losses, TF_LOSSES, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(w).item(), TF_W, rtol=1e-5)


def test_get_next_as_optional_runs_the_short_step_then_is_empty():
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    it = iter(strategy.experimental_distribute_dataset(Dataset.range(10).batch(4)))
    seen = []
    while True:
        optional = it.get_next_as_optional()
        if not optional.has_value():
            break
        seen.append([r.tolist() for r in strategy.experimental_local_results(optional.get_value())])
    assert seen == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8], [9]]]  # TF 2.21: the same
    it = iter(strategy.experimental_distribute_dataset(Dataset.range(9).batch(2)))
    for _ in range(4):
        assert it.get_next_as_optional().has_value()
    with pytest.raises(BatchNotDivisibleError, match="partial batch of 1 examples"):
        it.get_next_as_optional()  # TF: [[8], []]
