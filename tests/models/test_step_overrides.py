"""An overridden ``train_step``/``test_step``/``predict_step`` is never silently ignored.

keras-io's "customizing what happens in fit" overrides ``train_step``; phalanx's
``fit`` does not run overridden steps yet, so it refuses them, naming the
method, instead of training with its own step (which it did before, without a
word). ``compile`` with only an optimizer then ``fit`` says that a loss is
missing instead of an AttributeError.
"""

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import NotCompiledError

X = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
Y = X[:, :1]


class CustomTrain(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, state, data):
        raise AssertionError("never reached: fit refuses first")


class CustomTest(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def test_step(self, state, data):
        raise AssertionError("never reached")


class CustomPredict(phalanx.Sequential):
    def predict_step(self, state, data):
        raise AssertionError("never reached")


def test_overridden_train_step_is_refused_by_fit_and_train_on_batch():
    model = CustomTrain()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(NotImplementedError, match=r"CustomTrain.train_step overrides"):
        model.fit(X, Y, epochs=1, verbose=0)
    with pytest.raises(NotImplementedError, match=r"train_on_batch\(\) does not run"):
        model.train_on_batch(X, Y)
    assert model.evaluate(X, Y, verbose=0) >= 0.0  # evaluate runs no train_step


def test_overridden_test_and_predict_steps_are_refused():
    model = CustomTest()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(NotImplementedError, match=r"CustomTest.test_step"):
        model.evaluate(X, Y, verbose=0)
    seq = CustomPredict([layers.Input((3,)), layers.Dense(1)])
    with pytest.raises(NotImplementedError, match=r"CustomPredict.predict_step"):
        seq.predict(X, verbose=0)


def test_compile_with_only_an_optimizer_says_the_loss_is_missing():
    model = phalanx.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile(optimizer="adam")
    with pytest.raises(NotCompiledError, match=r"fit\(\) needs a loss"):
        model.fit(X, Y, epochs=1, verbose=0)
    assert model.predict(X, verbose=0).shape == (16, 1)
