"""fit/evaluate/predict read their inputs as Keras does (issue 9): what they are given, or a clear error."""

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import BatchNotDivisibleError


def _data(n=60, features=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def _model(strategy=None, *, loss="mse", lr=0.0):
    strategy = strategy or phalanx.get_strategy()
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer=phalanx.optimizers.SGD(lr), loss=loss)
    return model


@pytest.mark.parametrize(("n", "steps", "replicas"), [(60, 4, 1), (60, 3, 1), (64, 2, 8)])
def test_steps_per_epoch_without_batch_size_covers_the_arrays_once(n, steps, replicas):
    # Keras: batch_size = ceil(N / steps_per_epoch) for arrays, so one epoch sees every example.
    x, y = _data(n)
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:replicas])
    model = _model(strategy)  # learning rate 0: the epoch's loss is the loss over what it saw
    seen = []
    cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    history = model.fit(x, y, steps_per_epoch=steps, shuffle=False, verbose=0, callbacks=[cb])
    assert seen == list(range(steps))
    np.testing.assert_allclose(history.history["loss"][0], model.evaluate(x, y, verbose=0), 1e-5)


def test_steps_per_epoch_batch_that_does_not_split_over_replicas_says_where_it_came_from():
    x, y = _data(60)
    model = _model(phalanx.MirroredStrategy(devices=jax.devices()[:8]))
    with pytest.raises(BatchNotDivisibleError, match=r"ceil\(60 / 4\).*batch_size="):
        model.fit(x, y, steps_per_epoch=4, verbose=0)
