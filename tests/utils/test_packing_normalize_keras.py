"""``pack_x_y_sample_weight``/``unpack_x_y_sample_weight`` and ``normalize`` as Keras 3's."""

from __future__ import annotations

import jax.numpy as jnp
import keras
import numpy as np
import pytest

import phalanx as px

X, Y, W = np.ones((2, 3)), np.zeros(2), np.full(2, 0.5)


@pytest.mark.parametrize(
    "data", [X, (X,), [X], (X, Y), [X, Y], (X, Y, W), ((X, X), Y), {"a": X}, None]
)
def test_unpack_matches_keras(data):
    ours = px.utils.unpack_x_y_sample_weight(data)
    theirs = keras.utils.unpack_x_y_sample_weight(data)
    assert len(ours) == 3
    for a, b in zip(ours, theirs, strict=True):
        assert a is b


def test_unpack_refuses_four_items_as_keras():
    match = r"Data is expected to be in format `x`, `\(x,\)`, `\(x, y\)`"
    with pytest.raises(ValueError, match=match):
        keras.utils.unpack_x_y_sample_weight((X, Y, W, W))
    with pytest.raises(px.errors.UtilsArgumentError, match=match):
        px.utils.unpack_x_y_sample_weight((X, Y, W, W))


@pytest.mark.parametrize(
    "args",
    [(X,), ((X, X),), ([X, X],), (X, Y), (X, Y, W), (X, None, W), ((X,), Y), ({"a": X}, Y)],
)
def test_pack_matches_keras(args):
    ours = px.utils.pack_x_y_sample_weight(*args)
    theirs = keras.utils.pack_x_y_sample_weight(*args)
    assert type(ours) is type(theirs)
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs) and all(a is b for a, b in zip(ours, theirs, strict=True))
    else:
        assert ours is theirs


_RNG = np.random.RandomState(0)
NUMPY = [
    (_RNG.randn(4, 3), {}),
    (_RNG.randn(3, 3), {"axis": 0}),  # Keras expands the norm on axis -1 (``axis or -1``)
    (_RNG.randn(4, 3), {"order": 1}),
    (_RNG.randn(2, 3, 4), {"axis": 1, "order": 3}),
    (np.array([[0.0, 0.0], [3.0, 4.0]]), {}),
    (np.arange(6).reshape(2, 3), {}),
    (_RNG.randn(5).astype("float32"), {}),
    (_RNG.randn(4, 3), {"order": np.inf}),
]


@pytest.mark.parametrize("x, kwargs", NUMPY)
def test_normalize_numpy_matches_keras(x, kwargs):
    ours = px.utils.normalize(x, **kwargs)
    theirs = keras.utils.normalize(x, **kwargs)
    assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_normalize_numpy_on_axis_0_fails_as_keras():
    with pytest.raises(ValueError, match="could not be broadcast"):
        keras.utils.normalize(np.ones((4, 3)), axis=0)
    with pytest.raises(ValueError, match="could not be broadcast"):
        px.utils.normalize(np.ones((4, 3)), axis=0)


@pytest.mark.parametrize(
    "x, kwargs",
    [
        (jnp.asarray(_RNG.randn(4, 3), jnp.float32), {}),
        (jnp.asarray(_RNG.randn(4, 3), jnp.float32), {"axis": 0, "order": 1}),
        (jnp.zeros((2, 2)), {}),
        (jnp.zeros((2, 2)), {"order": 3}),
        ([[1.0, 2.0], [3.0, 4.0]], {}),
        (jnp.asarray(2.0), {}),
    ],
)
def test_normalize_tensor_matches_keras(x, kwargs):
    ours = px.utils.normalize(x, **kwargs)
    theirs = keras.utils.normalize(x, **kwargs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("order", [0, 1.5, "2"])
def test_normalize_refuses_a_bad_order_outside_numpy_as_keras(order):
    x = jnp.ones((2, 2))
    with pytest.raises(ValueError, match="Argument `order` must be an int >= 1"):
        keras.utils.normalize(x, order=order)
    with pytest.raises(px.errors.UtilsArgumentError, match="Argument `order` must be an int"):
        px.utils.normalize(x, order=order)
