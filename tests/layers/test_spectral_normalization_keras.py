"""SpectralNormalization against Keras 3 (JAX): keras/src/layers/normalization/
spectral_normalization_test.py case by case, the training call's output, new vector_u and
gradients from the same weights, fit from the same initial weights, 8 replicas equal one,
get_config/from_config."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import KerasFileError, LayerArgumentError  # noqa: E402
from phalanx.layers import _weights  # noqa: E402

RNG = np.random.default_rng(0)


def _pairs(ours, theirs):
    """``(phalanx weight, Keras variable)`` pairs, matched by name and shape in order."""
    left = list(ours.weights)
    out = []
    for w in theirs.weights:
        match = next(o for o in left if o.name == w.name and o.shape == tuple(w.shape))
        left.remove(match)
        out.append((match, w))
    assert not left
    return out


def _copy_weights(ours, theirs):
    """Keras's weights set from phalanx's (kernel, bias, vector_u)."""
    for mine, w in _pairs(ours, theirs):
        w.assign(mine.numpy())


def test_keras_cases():
    sn = layers.SpectralNormalization(layers.Dense(2))
    assert sn(RNG.uniform(size=(10, 3, 4)).astype(np.float32)).shape == (10, 3, 2)
    assert (len(sn.trainable_weights), len(sn.non_trainable_weights)) == (2, 1)
    higher = layers.SpectralNormalization(layers.Dense(2))
    assert higher(RNG.uniform(size=(10, 3, 4, 5)).astype(np.float32)).shape == (10, 3, 4, 2)
    emb = layers.SpectralNormalization(layers.Embedding(10, 4))
    assert emb(RNG.integers(0, 10, (10,))).shape == (10, 4)
    assert (len(emb.trainable_weights), len(emb.non_trainable_weights)) == (1, 1)
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero."):
        keras.layers.SpectralNormalization(keras.layers.Dense(2), power_iterations=0)
    with pytest.raises(LayerArgumentError, match="`power_iterations` should be greater than zero."):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="object has no attribute 'kernel' nor 'embeddings'"):
        keras.layers.SpectralNormalization(keras.layers.ReLU())(np.ones((4, 2)))
    with pytest.raises(
        LayerArgumentError, match="object has no attribute 'kernel' nor 'embeddings'"
    ):
        layers.SpectralNormalization(layers.ReLU())(np.ones((4, 2), np.float32))
    conv = layers.SpectralNormalization(
        layers.Conv2D(1, (2, 2), kernel_initializer="ones"), power_iterations=8
    )
    images = np.ones((1, 2, 2, 1), np.float32)
    np.testing.assert_allclose(conv(images, training=False), [[[[4.0]]]])
    np.testing.assert_allclose(conv(images, training=True), [[[[2.0]]]], rtol=1e-6)


WRAPPED = [
    ("Dense", dict(units=3), (4, 5)),
    ("Conv2D", dict(filters=3, kernel_size=2), (5, 5, 2)),
    ("Conv1D", dict(filters=4, kernel_size=3), (7, 3)),
    ("Embedding", dict(input_dim=9, output_dim=4), None),
]


@pytest.mark.parametrize("name, config, shape", WRAPPED, ids=[w[0] for w in WRAPPED])
@pytest.mark.parametrize("iterations", [1, 3])
def test_training_call_matches_keras(name, config, shape, iterations):
    if shape is None:
        x = RNG.integers(0, 9, (6, 5)).astype(np.int32)
    else:
        x = RNG.normal(size=(6, *shape)).astype(np.float32)
    ours = layers.SpectralNormalization(getattr(layers, name)(**config), iterations)
    theirs = keras.layers.SpectralNormalization(getattr(keras.layers, name)(**config), iterations)
    ours(jnp.asarray(x))
    theirs(x)
    _copy_weights(ours, theirs)
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), atol=1e-6)
    graphdef, params, rest = nnx.split(ours, nnx.Param, ...)

    def loss(p):
        module = nnx.merge(graphdef, p, jax.tree.map(lambda a: a, rest))
        out = module(jnp.asarray(x), training=True)
        return jnp.sum(jnp.sin(3.0 * out)), nnx.state(module, nnx.BatchStat)

    (value, new_rest), grads = jax.value_and_grad(loss, has_aux=True)(params)
    trainable = [v.value for v in theirs.trainable_variables]
    fixed = [v.value for v in theirs.non_trainable_variables]

    def keras_loss(t):
        out, new_fixed = theirs.stateless_call(t, fixed, x, training=True)
        return jnp.sum(jnp.sin(3.0 * out)), new_fixed

    (k_value, k_fixed), k_grads = jax.value_and_grad(keras_loss, has_aux=True)(trainable)
    np.testing.assert_allclose(float(value), float(k_value), rtol=1e-5)
    np.testing.assert_allclose(jax.tree.leaves(new_rest)[0], np.asarray(k_fixed[0]), atol=1e-6)
    mine = _weights.state_to_list(grads)
    for a, b in zip(mine, k_grads, strict=True):
        np.testing.assert_allclose(a, np.asarray(b), atol=5e-5, rtol=1e-4)
    again = layers.SpectralNormalization.from_config(ours.get_config())
    again(jnp.asarray(x))
    again.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(ours(x)), atol=1e-6)
    assert again.get_config() == ours.get_config()
    assert ours.get_config()["power_iterations"] == theirs.get_config()["power_iterations"]


def _model(lib):
    inputs = (phalanx if lib is phalanx else keras).Input((6,))
    x = lib.layers.SpectralNormalization(lib.layers.Dense(8, activation="tanh"), 2)(inputs)
    outputs = lib.layers.Dense(1)(x)
    return (phalanx if lib is phalanx else keras).Model(inputs, outputs)


X = RNG.normal(size=(32, 6)).astype(np.float32)
Y = RNG.normal(size=(32, 1)).astype(np.float32)


def test_fit_matches_keras():
    ours, theirs = _model(phalanx), _model(keras)
    ours.build((None, 6))
    _copy_weights(ours, theirs)
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.2), loss="mse")
    h = [
        m.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
        for m in (ours, theirs)
    ]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-5)
    for mine, w in _pairs(ours, theirs):
        np.testing.assert_allclose(mine.numpy(), np.asarray(w), atol=1e-5, err_msg=w.path)
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), atol=1e-5)


@pytest.mark.slow  # two fits
def test_eight_replicas_equal_one():
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:8]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            model = _model(phalanx)
            model.compile(optimizer=phalanx.optimizers.SGD(0.2), loss="mse")
        history = model.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_keras_files_are_refused_not_written_wrong(tmp_path):
    model = _model(phalanx)
    model.build((None, 6))
    for path in ("m.keras", "m.weights.h5"):
        with pytest.raises(KerasFileError, match="wrapper layers"):
            (model.save if path.endswith(".keras") else model.save_weights)(str(tmp_path / path))
    theirs = _model(keras)
    theirs.save_weights(str(tmp_path / "k.weights.h5"))
    with pytest.raises(KerasFileError, match="wrapper layers"):
        model.load_weights(str(tmp_path / "k.weights.h5"))
    model.save_weights(str(tmp_path / "m.npz"))  # phalanx's own format holds it
    again = _model(phalanx)
    again.load_weights(str(tmp_path / "m.npz"))
    for a, b in zip(again.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
