"""ReLU, LeakyReLU, ELU, Softmax, RepeatVector and Permute against Keras 3 (JAX backend):
forward, gradient with respect to the input, get_config round trip, bad arguments,
and a model using them trained on 8 simulated replicas equals one device."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402

X = np.random.default_rng(0).normal(scale=2.0, size=(3, 4, 5)).astype(np.float32)

CASES = [
    ("ReLU", {}),
    ("ReLU", dict(max_value=1.5, negative_slope=0.1, threshold=0.5)),
    ("ReLU", dict(max_value=6.0)),
    ("ReLU", dict(negative_slope=0.2)),
    ("LeakyReLU", {}),
    ("LeakyReLU", dict(negative_slope=0.05)),
    ("ELU", {}),
    ("ELU", dict(alpha=0.5)),
    ("Softmax", {}),
    ("Softmax", dict(axis=1)),
    ("Softmax", dict(axis=(1, 2))),
    ("Permute", dict(dims=(2, 1))),
]


def _grad(layer, x):
    return jax.grad(lambda a: jnp.sum(jnp.sin(3.0 * layer(a))))(jnp.asarray(x))


@pytest.mark.parametrize("name, config", CASES)
def test_forward_and_gradient_match_keras(name, config):
    ours, theirs = getattr(layers, name)(**config), getattr(keras.layers, name)(**config)
    x = X
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(_grad(ours, x)), np.asarray(_grad(theirs, x)), atol=1e-5, rtol=1e-5
    )
    config_out = ours.get_config()
    kwargs = {k: v for k, v in config_out.items() if k not in ("name", "trainable", "dtype")}
    again = type(ours)(**kwargs)
    np.testing.assert_array_equal(np.asarray(again(x)), np.asarray(ours(x)))
    for key in kwargs:
        assert key in theirs.get_config(), key


def test_softmax_mask_and_repeat_vector_match_keras():
    mask = np.random.default_rng(1).random((3, 4, 5)) > 0.4
    mask[0, 0] = False  # a whole row masked: zeros
    np.testing.assert_allclose(
        np.asarray(layers.Softmax()(X, mask=mask)),
        np.asarray(keras.layers.Softmax()(X, mask=mask)),
        atol=1e-6,
    )
    flat = X[:, 0]
    np.testing.assert_array_equal(
        np.asarray(layers.RepeatVector(3)(flat)), np.asarray(keras.layers.RepeatVector(3)(flat))
    )


def test_bad_arguments_and_shapes_raise():
    with pytest.raises(LayerArgumentError, match="negative_slope"):
        layers.ReLU(negative_slope=-1.0)
    with pytest.raises(LayerArgumentError, match="max_value"):
        layers.ReLU(max_value=-1.0)
    with pytest.raises(LayerArgumentError, match="permutation of 1..2"):
        layers.Permute((0, 1))
    with pytest.raises(LayerShapeError, match="permutes 2 axes"):
        layers.Permute((2, 1))(np.ones((2, 3), np.float32))
    with pytest.raises(LayerShapeError, match="rank 2"):
        layers.RepeatVector(2)(X)


def test_fit_eight_replicas_equal_one():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = rng.normal(size=(32, 1)).astype(np.float32)
    runs = []
    for devices in (jax.devices()[:1], jax.devices()):
        with phalanx.MirroredStrategy(devices=devices).scope():
            phalanx.utils.set_random_seed(0)
            model = phalanx.Sequential(
                [
                    layers.Input((4,)),
                    layers.Dense(6),
                    layers.LeakyReLU(),
                    layers.RepeatVector(3),
                    layers.Permute((2, 1)),
                    layers.ReLU(max_value=2.0),
                    layers.Flatten(),
                    layers.Dense(1),
                ]
            )
            model.compile(optimizer="sgd", loss="mse")
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
