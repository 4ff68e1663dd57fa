"""fit/evaluate/predict of a model inside another strategy's scope raise ScopeError.

TF 2.21: a model built and compiled under strategy ``s`` and then fitted,
evaluated or predicted inside ``s2.scope()`` raises ``RuntimeError: Mixing
different tf.distribute.Strategy objects``. phalanx raises ``ScopeError`` (a
``RuntimeError``), as ``compile`` under another strategy already does. Inside
the model's own scope, or outside any scope, the model runs.
"""

import jax
import numpy as np
import pytest

import phalanx
from phalanx.errors import ScopeError

X, Y = np.ones((8, 2), np.float32), np.ones((8, 1), np.float32)

CALLS = {
    "fit": lambda m: m.fit(X, Y, epochs=1, verbose=0),
    "evaluate": lambda m: m.evaluate(X, Y, verbose=0),
    "predict": lambda m: m.predict(X, verbose=0),
    "train_on_batch": lambda m: m.train_on_batch(X, Y),
    "test_on_batch": lambda m: m.test_on_batch(X, Y),
}


def _model():
    model = phalanx.Sequential([phalanx.Input((2,)), phalanx.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


@pytest.mark.parametrize("call", CALLS)
def test_call_under_another_strategy_raises_scope_error(call):
    s = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    s2 = phalanx.MirroredStrategy(devices=jax.devices()[2:4])
    with s.scope():
        model = _model()
    before = [np.asarray(w) for w in model.get_weights()]
    with s2.scope(), pytest.raises(ScopeError) as raised:
        CALLS[call](model)
    message = str(raised.value)
    assert repr(s) in message and repr(s2) in message
    assert f"{call}()" in message and "scope" in message
    assert isinstance(raised.value, RuntimeError)  # TF raises RuntimeError
    for a, b in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call", CALLS)
def test_call_in_own_scope_or_no_scope_runs(call):
    s = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    with s.scope():
        model = _model()
        CALLS[call](model)
    CALLS[call](model)


def test_model_of_no_strategy_under_a_strategy_raises_scope_error():
    # TF 2.21 fails too (an AssertionError from inside Keras).
    model = _model()
    model.fit(X, Y, verbose=0)
    s2 = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    with s2.scope(), pytest.raises(ScopeError, match="fit"):
        model.fit(X, Y, verbose=0)
