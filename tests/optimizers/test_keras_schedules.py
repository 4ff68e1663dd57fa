"""Every schedule against Keras 3's (JAX backend), as its schedule tests: the rates, the
config (with Keras's default names) and a rebuild from it."""

import os

import numpy as np
import pytest

from phalanx import optimizers

schedules = optimizers.schedules

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

STEPS = np.array([0, 1, 3, 5, 9, 10, 11, 19, 20, 29, 30, 31, 45, 70, 150, 300])

CASES = [
    ("PolynomialDecay", (0.1, 10), {}),
    ("PolynomialDecay", (0.1, 10), {"end_learning_rate": 0.01, "power": 0.5}),
    ("PolynomialDecay", (0.1, 10), {"end_learning_rate": 0.01, "power": 2.0, "cycle": True}),
    ("PolynomialDecay", (0.05, 7), {"cycle": True}),
    ("CosineDecayRestarts", (0.1, 10), {}),
    ("CosineDecayRestarts", (0.1, 10), {"t_mul": 1.0, "m_mul": 0.5, "alpha": 0.1}),
    ("CosineDecayRestarts", (1.0, 4), {"t_mul": 3.0, "m_mul": 0.9}),
    ("ExponentialDecay", (0.1, 10, 0.5), {}),
    ("ExponentialDecay", (0.1, 10, 0.5), {"staircase": True, "name": "decay"}),
    ("PiecewiseConstantDecay", ([5, 20], [1.0, 0.5, 0.1]), {}),
    ("CosineDecay", (0.1, 10), {}),
    ("CosineDecay", (0.1, 10, 0.1, "cos"), {"warmup_target": 0.5, "warmup_steps": 5}),
    ("InverseTimeDecay", (0.1, 10, 0.5), {}),
    ("InverseTimeDecay", (0.1, 10, 0.5, True, "inverse"), {}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_schedule_as_keras(cls, args, kwargs):
    ours = getattr(schedules, cls)(*args, **kwargs)
    theirs = getattr(keras.optimizers.schedules, cls)(*args, **kwargs)
    for step in STEPS:
        assert float(ours(step)) == pytest.approx(float(theirs(step)), rel=1e-5, abs=1e-7), step
    assert ours.get_config() == theirs.get_config()
    again = type(ours)(**ours.get_config())
    assert float(again(13)) == float(ours(13))


@pytest.mark.parametrize(
    ("cls", "arg"),
    [("PolynomialDecay", "decay_steps"), ("CosineDecayRestarts", "first_decay_steps")],
)
def test_zero_steps_are_refused_as_keras(cls, arg):
    with pytest.raises(ValueError, match=f"Argument `{arg}` must be > 0. Received: {arg}=0"):
        getattr(keras.optimizers.schedules, cls)(0.1, 0)
    with pytest.raises(ValueError, match=f"Argument `{arg}` must be > 0. Received: {arg}=0"):
        getattr(schedules, cls)(0.1, 0)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: s.PolynomialDecay(0.2, 3, end_learning_rate=0.01, power=2.0),
        lambda s: s.CosineDecayRestarts(0.2, 2, t_mul=1.5, m_mul=0.8),
    ],
)
def test_sgd_with_the_schedule_trains_as_keras(make):
    import phalanx

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(24, 3)).astype(np.float32), rng.normal(size=(24, 1)).astype(np.float32)
    ours = phalanx.Sequential([phalanx.layers.Input(shape=(3,)), phalanx.layers.Dense(1)])
    theirs = keras.Sequential([keras.layers.Input(shape=(3,)), keras.layers.Dense(1)])
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=phalanx.optimizers.SGD(make(schedules)), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(make(keras.optimizers.schedules)), loss="mse")
    ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
