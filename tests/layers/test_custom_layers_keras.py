"""Layers and models of one's own as Keras users write them (keras-io's "Making new layers
and models via subclassing", ported with only the README's renames), against Keras 3 (JAX):
add_weight/add_loss, build(input_shape) with the batch axis, call(training=None, mask=None),
underscore attributes, initializers; and the shape checks Keras makes."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import initializers, layers  # noqa: E402
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 3)).astype(np.float32)
Y = RNG.normal(size=(8, 1)).astype(np.float32)


def _guide(lib, ops):
    """The guide's layers, written once for keras (ops = keras.ops) and phalanx (jax.numpy)."""

    class Linear(lib.layers.Layer):
        def __init__(self, units=32):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(
                shape=(input_shape[-1], self.units), initializer="random_normal", trainable=True
            )
            self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return ops.matmul(inputs, self.w) + self.b

    class ActivityRegularizationLayer(lib.layers.Layer):
        def __init__(self, rate=1e-2):
            super().__init__()
            self.rate = rate

        def call(self, inputs):
            self.add_loss(self.rate * ops.mean(ops.square(inputs)))
            return inputs

    class MLPBlock(lib.layers.Layer):
        def __init__(self):
            super().__init__()
            self.linear_1 = Linear(4)
            self.regularization = ActivityRegularizationLayer(0.1)
            self.linear_2 = Linear(1)

        def call(self, inputs, training=None, mask=None):
            x = self.linear_1(inputs)
            x = self.regularization(ops.tanh(x))
            return self.linear_2(x)

    return Linear, ActivityRegularizationLayer, MLPBlock


def _models():
    ours = _guide(phalanx, jnp)[2]
    theirs = _guide(keras, keras.ops)[2]
    m_ours = phalanx.Sequential([layers.Input((3,)), ours()])
    m_theirs = keras.Sequential([keras.Input((3,)), theirs()])
    m_ours.build((None, 3))
    m_theirs.set_weights(m_ours.get_weights())
    return m_ours, m_theirs


def test_guide_layers_weights_losses_and_fit_match_keras():
    linear = _guide(phalanx, jnp)[0](4)
    linear.build((None, 3))  # Keras's shape, batch axis first
    assert linear.built and [w.shape for w in linear.weights] == [(3, 4), (4,)]
    assert [w.name for w in linear.weights] == ["w", "b"]  # creation order, as Keras
    ours, theirs = _models()
    assert [w.shape for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), atol=1e-6)
    block = ours.layers[-1]
    block(jnp.asarray(X))
    theirs.layers[-1](X)
    assert len(block.losses) == len(theirs.layers[-1].losses) == 1
    np.testing.assert_allclose(
        float(block.losses[0]), float(theirs.layers[-1].losses[0]), rtol=1e-6
    )
    for m in (ours, theirs):
        m.compile(optimizer=(phalanx if m is ours else keras).optimizers.SGD(0.1), loss="mse")
    h_ours = ours.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h_theirs = theirs.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.slow  # two fits: add_loss under 2 replicas equals one device
def test_add_loss_fit_two_replicas_equal_one():
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:2]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            model, _ = _models()
            model.compile(optimizer="sgd", loss="mse")
        history = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_call_receives_training_and_mask_only_when_declared():
    seen = []

    class Plain(layers.Layer):
        def call(self, inputs):
            return inputs * 2.0

    class Options(layers.Layer):
        def call(self, inputs, training=None, mask=None):
            seen.append((training, mask is None))
            return inputs

    class Outer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = Options()

        def call(self, inputs):
            return self.inner(inputs)  # training follows the outer call, as Keras

    np.testing.assert_array_equal(Plain()(X), 2 * X)
    Options()(X)
    Outer()(X, training=True)
    assert seen == [(False, True), (True, True)]


def test_a_subclass_of_dense_as_keras_writes_it():
    class ScaledDense(layers.Dense):
        def call(self, inputs):
            return super().call(inputs) * 2.0

    class KerasScaledDense(keras.layers.Dense):
        def call(self, inputs):
            return super().call(inputs) * 2.0

    ours, theirs = ScaledDense(3, activation="tanh"), KerasScaledDense(3, activation="tanh")
    ours(X)
    theirs(X)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(X)), np.asarray(theirs(X)), atol=1e-6)
    model = phalanx.Sequential([layers.Input((3,)), ScaledDense(2)])
    assert model.layers[-1].output_shape == (2,)


def test_subclassed_model_with_underscore_attributes_trains():
    class Model(phalanx.Model):
        def __init__(self):
            super().__init__()
            self._hidden = layers.Dense(4, activation="tanh")
            self._out = layers.Dense(1)
            self._scale = 0.5

        def call(self, inputs):
            return self._out(self._hidden(inputs)) * self._scale

    model = Model()
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(X, Y, batch_size=4, epochs=2, verbose=0).history["loss"]
    assert len(model.weights) == 4 and history[1] < history[0]


def test_keras_shape_checks():
    assert layers.Dense(3, use_bias=False).build((None, 2)) == (3,)
    dense = layers.Dense(3, use_bias=False)
    dense(X)
    theirs = keras.layers.Dense(3, use_bias=False)
    theirs(X)
    assert dense.bias is None and theirs.bias is None
    dense = layers.Dense(2)
    dense(np.ones((1, 2), np.float32))
    with pytest.raises(LayerShapeError, match=r"built for inputs of shape \(None, 2\)"):
        dense(np.ones((1, 3), np.float32))
    with pytest.raises(LayerArgumentError, match="noise_shape must hold positive sizes"):
        layers.Dropout(0.5, noise_shape=[-10, 1])
    norm = layers.LayerNormalization()
    norm(np.ones((2, 3), np.float32))
    assert norm(np.ones((2, 4, 3), np.float32)).shape == (2, 4, 3)  # Keras: any rank
    inputs = phalanx.Input((64,))
    model = phalanx.Model(inputs, layers.Dropout(0.5)(inputs, training=True))
    out = model.predict(np.ones((4, 64), np.float32), verbose=0)
    assert set(np.unique(out)) == {0.0, 2.0}  # dropout runs, without asking for rngs
    with pytest.raises(LayerArgumentError, match="add_loss"):
        layers.Layer().add_loss(1.0)
    with pytest.raises(ValueError, match="kernel_constraint='typo'"):  # Keras: ValueError
        layers.Dense(2, kernel_constraint="typo")


DETERMINISTIC = [
    ("Zeros", {}),
    ("Ones", {}),
    ("Constant", {"value": 2.5}),
    ("Identity", {"gain": 2.0}),
]
RANDOM = [
    ("RandomNormal", {"mean": 1.0, "stddev": 0.5}),
    ("RandomUniform", {"minval": -1.0, "maxval": 2.0}),
    ("TruncatedNormal", {"stddev": 0.5}),
    ("GlorotUniform", {}),
    ("GlorotNormal", {}),
    ("HeNormal", {}),
    ("HeUniform", {}),
    ("LecunNormal", {}),
    ("LecunUniform", {}),
    ("Orthogonal", {"gain": 2.0}),
    ("VarianceScaling", {"scale": 3.0, "mode": "fan_out", "distribution": "uniform"}),
]


@pytest.mark.parametrize("name, config", DETERMINISTIC + RANDOM)
def test_initializers_match_keras(name, config):
    ours = getattr(initializers, name)(**config)
    theirs = getattr(keras.initializers, name)(**config)
    shape = (60, 40)
    a, b = np.asarray(ours(shape)), np.asarray(theirs(shape))
    if (name, config) in DETERMINISTIC:
        np.testing.assert_array_equal(a, b)
    else:  # JAX's draws, Keras's distribution: same moments and range
        assert abs(a.mean() - b.mean()) < 6 * b.std() / np.sqrt(a.size)
        np.testing.assert_allclose(a.std(), b.std(), rtol=0.06)
        if name in ("RandomUniform", "GlorotUniform", "HeUniform", "LecunUniform"):
            spread = b.max() - b.min()  # bounded: the same range
            assert b.min() - 0.05 * spread <= a.min() and a.max() <= b.max() + 0.05 * spread
    if name != "Identity":  # Keras 3.15's Identity.get_config() drops its gain
        assert initializers.deserialize(keras.initializers.serialize(theirs)) == ours
    assert initializers.get(initializers.serialize(ours)) == ours
    dense = layers.Dense(3, kernel_initializer=ours)
    dense.build((None, 4))
    assert dense.kernel.shape == (4, 3)


def test_initializer_names_and_jax_calls():
    assert isinstance(initializers.get("he_normal"), initializers.HeNormal)
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    key = jax.random.key(0)
    np.testing.assert_array_equal(
        initializers.HeNormal()(key, (3, 4)), initializers.HeNormal()(key, (3, 4))
    )
    np.testing.assert_array_equal(
        initializers.HeNormal(seed=3)((3, 4)), initializers.HeNormal(seed=3)((3, 4))
    )
    with pytest.raises(phalanx.errors.UnknownNameError, match="he_norml"):
        initializers.get("he_norml")
