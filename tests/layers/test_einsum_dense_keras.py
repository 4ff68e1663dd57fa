"""``EinsumDense`` against Keras 3 (JAX backend): weights' shapes, outputs and gradients per
equation form (plain, left and right ellipsis, bias axes), the initializer's fans, config,
a model trained as Keras's, and bad arguments."""

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
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402
from phalanx.layers import _weights  # noqa: E402

RNG = np.random.default_rng(0)
FLAT = RNG.normal(size=(3, 4)).astype(np.float32)
SEQ = RNG.normal(size=(2, 6, 4)).astype(np.float32)
CASES = [
    (dict(equation="ab,bc->ac", output_shape=5, bias_axes="c", activation="relu"), FLAT),
    (dict(equation="abc,cde->abde", output_shape=(None, 2, 5), bias_axes="de"), SEQ),
    (dict(equation="abc,cd->abd", output_shape=(None, 3)), SEQ),
    (dict(equation="...b,bc->...c", output_shape=5, bias_axes="c"), SEQ),
    (dict(equation="ab...,bc->ac...", output_shape=5, bias_axes="c", activation="tanh"), SEQ),
]


def _loss(y):
    return jnp.sum(jnp.sin(3.0 * y))


@pytest.mark.parametrize("config, x", CASES, ids=[c[0]["equation"] for c in CASES])
def test_outputs_and_gradients_match_keras(config, x):
    ours, theirs = layers.EinsumDense(**config), keras.layers.EinsumDense(**config)
    ours(jnp.asarray(x))
    theirs(x)
    assert [(w.path.split("/")[-1], tuple(w.shape)) for w in ours.weights] == [
        (w.name, tuple(w.shape)) for w in theirs.weights
    ]
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), atol=2e-5, rtol=1e-5)
    assert ours.output_shape == tuple(theirs(x).shape[1:])
    graphdef, params, rest = nnx.split(ours, nnx.Param, ...)

    def forward(p, a):
        return _loss(nnx.merge(graphdef, p, rest)(a))

    grad_w, grad_x = jax.grad(forward, argnums=(0, 1))(params, jnp.asarray(x))
    weights = [v.value for v in theirs.trainable_variables]
    k_w, k_x = jax.grad(lambda t, a: _loss(theirs.stateless_call(t, [], a)[0]), argnums=(0, 1))(
        weights, jnp.asarray(x)
    )
    np.testing.assert_allclose(np.asarray(grad_x), np.asarray(k_x), atol=5e-5, rtol=1e-4)
    for a, b in zip(_weights.state_to_list(grad_w), k_w, strict=True):
        np.testing.assert_allclose(a, np.asarray(b), atol=5e-5, rtol=1e-4)
    assert set(ours.get_config()) == set(theirs.get_config())
    again = layers.EinsumDense.from_config(ours.get_config())
    again(jnp.asarray(x))
    again.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(ours(x)), atol=1e-6)


@pytest.mark.parametrize("init", ["glorot_uniform", phalanx.initializers.GlorotUniform(seed=1)])
def test_glorot_fans_over_the_kernels_input_and_output_letters_as_keras(init):
    layer = layers.EinsumDense("abc,cde->abde", (None, 8, 16), kernel_initializer=init)
    layer(jnp.asarray(SEQ))
    (kernel,) = layer.get_weights()
    limit = np.sqrt(6.0 / (4 + 8 * 16))  # Keras: fan in 4 (c), fan out 128 (d, e)
    assert kernel.shape == (4, 8, 16)
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit
    keras_layer = keras.layers.EinsumDense("abc,cde->abde", (None, 8, 16))
    keras_layer(SEQ)
    keras_kernel = np.asarray(keras_layer.kernel)
    assert abs(np.abs(keras_kernel).max() - np.abs(kernel).max()) < 0.1 * limit


def test_model_trains_as_keras():
    x = RNG.normal(size=(8, 6, 4)).astype(np.float32)
    y = RNG.normal(size=(8, 1)).astype(np.float32)

    def build(lib):
        return lib.Sequential(
            [
                lib.Input((6, 4)),
                lib.layers.EinsumDense("abc,cd->abd", (6, 3), bias_axes="d", activation="tanh"),
                lib.layers.Flatten(),
                lib.layers.Dense(1),
            ]
        )

    ours, theirs = build(phalanx), build(keras)
    ours.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ours.build((None, 6, 4))
    theirs.set_weights(ours.get_weights())
    mine = ours.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    keras_history = theirs.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(mine.history["loss"], keras_history.history["loss"], rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4)


def test_bad_arguments_raise_as_keras():
    for lib in (layers, keras.layers):
        with pytest.raises(ValueError, match="Invalid einsum equation"):
            lib.EinsumDense("ab->b", 4)(FLAT)
        with pytest.raises(ValueError, match="Bias dimension 'x' was requested"):
            lib.EinsumDense("ab,bc->ac", 4, bias_axes="x")(FLAT)
        with pytest.raises(ValueError, match="do not match at shared dimension"):
            lib.EinsumDense("abc,cd->abd", (5, 3))(SEQ)
        with pytest.raises(ValueError, match="Weight dimension 'z' did not have a match"):
            lib.EinsumDense("ab,bz->ab", 4)(FLAT)
    with pytest.raises(LayerArgumentError, match="Invalid einsum equation"):
        layers.EinsumDense("ab->b", 4)
    with pytest.raises(LayerShapeError, match="do not match at shared dimension"):
        layers.EinsumDense("abc,cd->abd", (5, 3))(SEQ)
    with pytest.raises(LayerArgumentError, match="lora_rank=4 is not supported"):
        layers.EinsumDense("ab,bc->ac", 4, lora_rank=4)


def test_regularizers_and_constraints_as_keras():
    config = dict(
        equation="abc,cd->abd",
        output_shape=(None, 3),
        bias_axes="d",
        kernel_regularizer="l2",
        bias_regularizer="l1",
        activity_regularizer="l2",
        kernel_constraint="non_neg",
    )
    ours, theirs = layers.EinsumDense(**config), keras.layers.EinsumDense(**config)
    ours(jnp.asarray(SEQ))
    theirs(SEQ)
    theirs.set_weights(ours.get_weights())
    ours(jnp.asarray(SEQ))
    theirs(SEQ)
    np.testing.assert_allclose(
        sum(float(v) for v in ours.losses), sum(float(v) for v in theirs.losses), rtol=1e-5
    )
    assert ours.get_config()["kernel_constraint"] is not None
    assert [name for name, _ in ours._weight_constraint_paths] == [
        "kernel_constraint",
        "bias_constraint",
    ]
