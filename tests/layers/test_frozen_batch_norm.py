"""A frozen BatchNormalization runs in inference mode, as Keras 3 (transfer learning relies on it).

Keras: ``trainable = False`` on the layer, or on a model holding it, makes it
normalize with its moving statistics even when called with ``training=True``
and inside ``fit``, and its moving statistics stay where they are.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402

X = np.random.default_rng(0).normal(5.0, 10.0, (32, 4)).astype(np.float32)


def test_frozen_layer_called_in_training_matches_keras():
    ours, theirs = layers.BatchNormalization(), keras.layers.BatchNormalization()
    ours(X)
    theirs(X)
    ours.trainable = theirs.trainable = False
    out = np.asarray(ours(X, training=True))
    np.testing.assert_allclose(out, np.asarray(theirs(X, training=True)), atol=1e-4)
    np.testing.assert_allclose(out, X / np.sqrt(1.0 + 1e-3), rtol=1e-5)  # moving mean 0, var 1
    ours.trainable = True
    assert abs(float(np.asarray(ours(X, training=True)).mean())) < 1e-4  # batch statistics


def test_fit_keeps_a_frozen_base_models_moving_statistics():
    def build():
        inputs = phalanx.Input((4,))
        base = phalanx.Model(inputs, layers.BatchNormalization()(inputs), name="base")
        base.trainable = False  # without training=False at the call: the layer is frozen
        head_in = phalanx.Input((4,))
        model = phalanx.Model(head_in, layers.Dense(1)(base(head_in)))
        model.compile(optimizer="sgd", loss="mse")
        return model, base

    model, base = build()
    model.fit(X, X[:, :1], batch_size=8, epochs=1, verbose=0)
    mean, var = base.layers[-1].get_weights()[2:]
    np.testing.assert_array_equal(mean, np.zeros(4))
    np.testing.assert_array_equal(var, np.ones(4))
    # the trained model's first layer still passes x / sqrt(1 + eps) through
    np.testing.assert_allclose(base.predict(X, verbose=0), X / np.sqrt(1.0 + 1e-3), rtol=1e-5)
    # unfrozen, fit moves them
    model, base = build()
    base.trainable = True
    model.compile(optimizer="sgd", loss="mse")
    model.fit(X, X[:, :1], batch_size=8, epochs=1, verbose=0)
    assert np.abs(base.layers[-1].get_weights()[2]).max() > 0.1
