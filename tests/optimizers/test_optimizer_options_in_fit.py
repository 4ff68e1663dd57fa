"""The optimizer options in a real ``fit``: gradient accumulation equals the larger batch
on the seeds' MLP, ``use_ema`` ends ``fit`` with the weights Keras 3's ``fit`` ends with
(so ``evaluate`` gives Keras's loss), and the optimizer object given to ``compile``
counts ``iterations`` as Keras's does."""

from __future__ import annotations

import os

import numpy as np
import pytest

import phalanx as px

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(3)
X = RNG.random((64, 20)).astype("float32")
Y = RNG.integers(0, 10, 64)


def seed_mlp(optimizer, seed=0):
    """Seed 000's MLP (Dense(16, relu), Dense(10, softmax), sparse cross-entropy), smaller."""
    px.utils.set_random_seed(seed)
    model = px.Sequential(
        [
            px.layers.Dense(16, activation="relu", input_shape=(20,)),
            px.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    return model


# slow: two fits of their own programs (~8 s on 2 loaded cores); the acceptance check.
@pytest.mark.slow
def test_gradient_accumulation_equals_the_larger_batch():
    make = px.optimizers.Adam  # its bias correction counts updates, as Keras's
    big = seed_mlp(make(learning_rate=0.05))
    big.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    small = seed_mlp(make(learning_rate=0.05, gradient_accumulation_steps=2))
    small.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(big.get_weights(), small.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    assert int(small.optimizer.iterations) == int(big.optimizer.iterations) == 8


# slow: Keras's own fit and evaluate compile their programs (~10 s); the acceptance check.
@pytest.mark.slow
def test_ema_weights_and_evaluation_equal_keras():
    kwargs = {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.9}
    ours = seed_mlp(px.optimizers.Adam(**kwargs))
    ours.predict(X[:2], verbose=0)  # built: its first weights go to Keras's model
    theirs = keras.Sequential(
        [
            keras.Input((20,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    theirs.set_weights(ours.get_weights())
    theirs.compile(
        optimizer=keras.optimizers.Adam(**kwargs), loss="sparse_categorical_crossentropy"
    )
    ours.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    theirs.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert ours.evaluate(X, Y, verbose=0) == pytest.approx(
        theirs.evaluate(X, Y, verbose=0), rel=1e-5
    )


def test_the_optimizer_given_to_compile_counts_iterations():
    optimizer = px.optimizers.Adam()
    model = seed_mlp(optimizer)
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    assert int(optimizer.iterations) == 4 and optimizer.iterations.numpy() == 4
    accumulating = px.optimizers.SGD(gradient_accumulation_steps=2)
    model.compile(optimizer=accumulating, loss="sparse_categorical_crossentropy")
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    assert int(accumulating.iterations) == 2  # updates, as Keras (steps // 2)
    assert int(model.optimizer.iterations) == 2
