"""Shapes Keras 3 refuses, refused as Keras (JAX backend): each case raises in both."""

import os

import numpy as np
import pytest

from phalanx import losses, metrics

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

Y3 = np.array([[1.0], [0.0], [1.0]], np.float32)
P33 = np.array([[0.9, 0.2, 0.6], [0.1, 0.4, 0.3], [0.7, 0.8, 0.2]], np.float32)


@pytest.mark.parametrize("form", ["class", "function"])
def test_binary_crossentropy_of_other_shapes_raises_as_keras(form):
    ours = losses.BinaryCrossentropy() if form == "class" else losses.binary_crossentropy
    theirs = (
        keras.losses.BinaryCrossentropy() if form == "class" else keras.losses.binary_crossentropy
    )
    with pytest.raises(ValueError, match="must have the same shape"):
        theirs(Y3, P33)
    with pytest.raises(ValueError, match="same shape|targets of the outputs' shape"):
        ours(Y3, P33)


def test_binary_crossentropy_aligns_a_unit_axis_as_keras():
    y, p = Y3[:, 0], P33[:, :1]
    assert float(losses.BinaryCrossentropy()(y, p)) == pytest.approx(
        float(keras.losses.BinaryCrossentropy()(y, p)), rel=1e-6
    )


def test_binary_crossentropy_of_other_shapes_raises_in_fit():
    import phalanx

    model = phalanx.Sequential([phalanx.layers.Input(shape=(2,)), phalanx.layers.Dense(3)])
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    with pytest.raises(ValueError, match=r"targets of the outputs' shape.*\(1,\).*\(3,\)"):
        model.fit(np.ones((3, 2), np.float32), Y3, verbose=0)


@pytest.mark.parametrize("name", ["Precision", "Recall"])
def test_class_id_on_one_dimensional_predictions_raises_as_keras(name):
    y_true, y_pred = np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.9, 0.2, 0.8, 0.3])
    with pytest.raises(ValueError, match="y_pred must be a 2D array"):
        getattr(keras.metrics, name)(class_id=2).update_state(y_true, y_pred)
    ours = getattr(metrics, name)(class_id=2)
    with pytest.raises(ValueError, match="y_pred must be a 2D array"):
        ours.update(ours.init(), y_true, y_pred)


@pytest.mark.parametrize("name", ["Precision", "Recall"])
def test_class_id_on_two_dimensional_predictions_as_keras(name):
    y_true = np.array([[0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 0, 0]], np.float32)
    y_pred = np.array([[0.1, 0.2, 0.7], [0.3, 0.6, 0.7], [0.5, 0.4, 0.1], [0.2, 0.2, 0.6]])
    theirs = getattr(keras.metrics, name)(class_id=2)
    theirs.update_state(y_true, y_pred)
    ours = getattr(metrics, name)(class_id=2)
    assert float(ours.result(ours.update(ours.init(), y_true, y_pred))) == pytest.approx(
        float(theirs.result())
    )
    with pytest.raises(ValueError, match="class_id=3 is not a class"):
        getattr(metrics, name)(class_id=3).update(ours.init(), y_true, y_pred)
