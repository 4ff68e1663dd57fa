"""Keras's merge helpers (``add``, ``concatenate``, ``dot``, ...), ``Dot`` and ``Identity``
against Keras 3 (JAX backend): forward values, gradients with respect to the inputs,
get_config/from_config, functional models built with the helpers (values, Keras files and
``fit`` against Keras's), masks, bad arguments."""

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

RNG = np.random.default_rng(0)


def _data(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _loss(y):
    return jnp.sum(jnp.sin(3.0 * y))


def _close(a, b, atol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)


# -- the functional helpers ------------------------------------------------------------

HELPERS = ["add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]


@pytest.mark.parametrize("name", HELPERS)
def test_helpers_on_arrays_match_keras(name):
    a, b = _data(3, 4, 5), _data(3, 4, 5)
    _close(getattr(layers, name)([a, b]), getattr(keras.layers, name)([a, b]))
    grads = jax.grad(lambda x, y: _loss(getattr(layers, name)([x, y])), argnums=(0, 1))(a, b)
    theirs = jax.grad(lambda x, y: _loss(getattr(keras.layers, name)([x, y])), argnums=(0, 1))(a, b)
    for g, t in zip(grads, theirs, strict=True):
        _close(g, t)


def test_concatenate_helper_takes_axis_and_name():
    a, b = _data(2, 3, 4), _data(2, 5, 4)
    _close(layers.concatenate([a, b], axis=1), keras.layers.concatenate([a, b], axis=1))
    x, y = phalanx.Input((3, 4)), phalanx.Input((5, 4))
    out = layers.concatenate([x, y], axis=1, name="joined")
    assert out.shape == (None, 8, 4) and out.node.layer.name == "joined"
    with pytest.raises(TypeError, match="units"):
        layers.add([x, x], units=3)


def _functional(lib, model_cls):
    a, b = lib.Input((4,)), lib.Input((4,))
    seq = lib.Input((6, 4))
    ha = lib.layers.Dense(4, activation="tanh")(a)
    hb = lib.layers.Dense(4)(b)
    merged = [
        lib.layers.add([ha, hb]),
        lib.layers.subtract([ha, hb]),
        lib.layers.multiply([ha, hb]),
        lib.layers.average([ha, hb]),
        lib.layers.maximum([ha, hb]),
        lib.layers.minimum([ha, hb]),
        lib.layers.dot([ha, hb], axes=1, normalize=True),
        lib.layers.dot([seq, ha], axes=(2, 1)),  # (None, 6)
        lib.layers.Flatten()(lib.layers.dot([seq, seq], axes=(1, 1))),  # (None, 16)
    ]
    joined = lib.layers.concatenate(merged)
    return model_cls([a, b, seq], lib.layers.Dense(2)(joined))


def test_functional_model_of_helpers_matches_keras(tmp_path):
    ours, theirs = _functional(phalanx, phalanx.Model), _functional(keras, keras.Model)
    assert ours.output_shape == theirs.output_shape == (None, 2)
    theirs.set_weights(ours.get_weights())
    xs = [_data(5, 4), _data(5, 4), _data(5, 6, 4)]
    _close(ours.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    ours.save(str(tmp_path / "ours.keras"))  # Dot's config (axes, normalize) both ways
    back = keras.models.load_model(str(tmp_path / "ours.keras"))
    _close(back.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    theirs.save(str(tmp_path / "theirs.keras"))
    again = phalanx.models.load_model(str(tmp_path / "theirs.keras"))
    _close(again.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.05), loss="mse")
    y = _data(5, 2)
    h = [m.fit(xs, y, batch_size=5, epochs=2, verbose=0).history["loss"] for m in (ours, theirs)]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        _close(a, np.asarray(b), atol=1e-5)


# -- Dot ---------------------------------------------------------------------------------

DOT_CASES = [
    ((2, 4), (2, 4), -1, False),
    ((2, 4), (2, 4), 1, True),
    ((2, 4, 5), (2, 4, 5), -1, False),
    ((2, 3, 5), (2, 10, 3), (1, 2), False),
    ((2, 3, 5), (2, 10, 3), (1, -1), True),
    ((1, 3, 2), (1, 1, 2, 3), (-2, -1), False),
    ((2, 4), (2, 4, 3), (1, 1), True),
    ((2, 3, 4), (2, 4), (-1, 1), False),
    ((2, 3, 4, 5), (2, 5, 3), (3, 1), False),
]


@pytest.mark.parametrize("shape1, shape2, axes, normalize", DOT_CASES)
def test_dot_matches_keras(shape1, shape2, axes, normalize):
    a, b = _data(*shape1), _data(*shape2)
    ours, theirs = (
        layers.Dot(axes, normalize=normalize),
        keras.layers.Dot(axes, normalize=normalize),
    )
    out = ours([a, b])
    _close(out, theirs([a, b]))
    grads = jax.grad(lambda x, y: _loss(ours([x, y])), argnums=(0, 1))(a, b)
    keras_grads = jax.grad(lambda x, y: _loss(theirs([x, y])), argnums=(0, 1))(a, b)
    for g, t in zip(grads, keras_grads, strict=True):
        _close(g, t, atol=5e-5)
    symbolic = layers.Dot(axes, normalize=normalize)(
        [phalanx.Input(shape1[1:]), phalanx.Input(shape2[1:])]
    )
    keras_symbolic = keras.layers.Dot(axes, normalize=normalize)(
        [keras.Input(shape1[1:]), keras.Input(shape2[1:])]
    )
    assert symbolic.shape == keras_symbolic.shape == (None, *out.shape[1:])
    config = ours.get_config()
    assert set(config) == set(theirs.get_config())
    again = layers.Dot.from_config(config)
    _close(again([a, b]), out, atol=0)
    _close(layers.dot([a, b], axes=axes, normalize=normalize), out, atol=0)


def test_dot_bad_arguments_raise_as_keras():
    for axes, match in (
        ("1", "Invalid type for argument `axes`"),
        ((1, 2, 3), "should contain two elements"),
        ((1, 2.0), "should be integers"),
    ):
        with pytest.raises(LayerArgumentError, match=match):
            layers.Dot(axes)
        with pytest.raises((TypeError, ValueError)):
            keras.layers.Dot(axes)
    a, b = phalanx.Input((3, 4)), phalanx.Input((5, 4))
    with pytest.raises(LayerShapeError, match=r"axis values 4 \(at axis 2\) != 5 \(at axis 1\)"):
        layers.Dot(axes=(2, 1))([a, b])
    with pytest.raises(ValueError, match="Incompatible input shapes"):
        keras.layers.Dot(axes=(2, 1))([keras.Input((3, 4)), keras.Input((5, 4))])
    with pytest.raises(LayerShapeError, match="list of 2 inputs"):
        layers.Dot(axes=1)([a, a, a])
    with pytest.raises(LayerShapeError, match="batch_dot over axis 0"):
        layers.Dot(axes=0)([_data(2, 3), _data(2, 3)])
    with pytest.raises(ValueError, match="over axis 0"):
        keras.layers.Dot(axes=0)([_data(2, 3), _data(2, 3)])
    with pytest.raises(LayerShapeError, match="takes a list of inputs"):
        layers.Dot(axes=1)(_data(2, 3))


# -- Identity ----------------------------------------------------------------------------


def test_identity_matches_keras_and_passes_the_mask():
    x = _data(2, 3)
    ours = layers.Identity()
    _close(ours(x), keras.layers.Identity()(x), atol=0)
    assert set(ours.get_config()) == set(keras.layers.Identity().get_config())
    assert layers.Identity.from_config(ours.get_config()).name == ours.name
    a, b = layers.Identity()([x, 2 * x])
    _close(a, x, atol=0)
    _close(b, 2 * x, atol=0)
    pair = layers.Identity()([phalanx.Input((3,)), phalanx.Input((4,))])
    assert [t.shape for t in pair] == [(None, 3), (None, 4)]
    mask = np.array([[True, False, True], [False, True, True]])
    assert ours.compute_mask(x, mask) is mask

    def model(lib):
        return lib.Sequential(
            [
                lib.layers.Input((6,)),
                lib.layers.Embedding(9, 4, mask_zero=True),
                lib.layers.Identity(),
                lib.layers.GlobalAveragePooling1D(),
                lib.layers.Dense(1),
            ]
        )

    ids = np.array([[1, 2, 0, 0, 0, 0], [3, 4, 5, 6, 7, 0]])
    mine, theirs = model(phalanx), model(keras)
    theirs.set_weights(mine.get_weights())
    _close(mine.predict(ids, verbose=0), theirs.predict(ids, verbose=0))
