"""Keras 3's other losses (JAX backend) against phalanx's, case by case as losses_test.py.

Each loss is called with the same targets and predictions as Keras's, with
and without ``sample_weight``, in every reduction; the functions are
compared per example; ``get_config`` holds Keras's keys with Keras's values
and ``from_config`` rebuilds the loss; the raising cases raise.
"""

import os

import numpy as np
import pytest

from phalanx import losses

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)


def _uniform(*shape, low=0.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def _binary(*shape):
    return RNG.integers(0, 2, size=shape).astype(np.float32)


def _one_hot(batch, classes):
    return np.eye(classes, dtype=np.float32)[RNG.integers(0, classes, size=batch)]


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


# (class name, function name, kwargs, y_true, y_pred)
CASES = [
    ("MeanAbsolutePercentageError", "mean_absolute_percentage_error", {},
     _uniform(4, 3, low=-2, high=2), _uniform(4, 3, low=-2, high=2)),
    ("MeanSquaredLogarithmicError", "mean_squared_logarithmic_error", {},
     _uniform(4, 3, high=3), _uniform(4, 3, low=-1, high=3)),
    ("CosineSimilarity", "cosine_similarity", {}, _uniform(4, 3, low=-1), _uniform(4, 3, low=-1)),
    ("CosineSimilarity", "cosine_similarity", {"axis": 1},
     _uniform(4, 3, low=-1), _uniform(4, 3, low=-1)),
    ("LogCosh", "log_cosh", {}, _uniform(4, 3, low=-3, high=3), _uniform(4, 3, low=-3, high=3)),
    ("KLDivergence", "kl_divergence", {}, _softmax(_uniform(4, 3)), _softmax(_uniform(4, 3))),
    ("Poisson", "poisson", {}, _uniform(4, 3, high=4), _uniform(4, 3, high=4)),
    ("Hinge", "hinge", {}, _binary(4, 3), _uniform(4, 3, low=-1)),
    ("Hinge", "hinge", {}, 2 * _binary(4, 3) - 1, _uniform(4, 3, low=-1)),
    ("SquaredHinge", "squared_hinge", {}, _binary(4, 3), _uniform(4, 3, low=-1)),
    ("CategoricalHinge", "categorical_hinge", {}, _one_hot(4, 3), _uniform(4, 3, low=-1)),
    ("BinaryFocalCrossentropy", "binary_focal_crossentropy", {}, _binary(4, 3), _uniform(4, 3)),
    ("BinaryFocalCrossentropy", "binary_focal_crossentropy",
     {"apply_class_balancing": True, "alpha": 0.3, "gamma": 1.5, "label_smoothing": 0.1},
     _binary(4, 3), _uniform(4, 3)),
    ("BinaryFocalCrossentropy", "binary_focal_crossentropy", {"from_logits": True},
     _binary(4, 3), _uniform(4, 3, low=-4, high=4)),
    ("CategoricalFocalCrossentropy", "categorical_focal_crossentropy", {},
     _one_hot(4, 3), _softmax(_uniform(4, 3))),
    ("CategoricalFocalCrossentropy", "categorical_focal_crossentropy",
     {"alpha": 0.5, "gamma": 3.0, "from_logits": True, "label_smoothing": 0.2},
     _one_hot(4, 3), _uniform(4, 3, low=-3, high=3)),
    ("Dice", "dice", {}, _binary(4, 2, 2, 1), _uniform(4, 2, 2, 1)),
    ("Dice", "dice", {"axis": (1, 2, 3)}, _binary(4, 2, 2, 1), _uniform(4, 2, 2, 1)),
    ("Tversky", "tversky", {}, _binary(4, 2, 2, 1), _uniform(4, 2, 2, 1)),
    ("Tversky", "tversky", {"alpha": 0.2, "beta": 0.8, "axis": (1, 2, 3)},
     _binary(4, 2, 2, 1), _uniform(4, 2, 2, 1)),
]  # fmt: skip
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize(("cls", "fn", "kwargs", "y_true", "y_pred"), CASES, ids=IDS)
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_loss_class_as_keras(cls, fn, kwargs, y_true, y_pred, reduction):
    ours = getattr(losses, cls)(reduction=reduction, **kwargs)
    theirs = getattr(keras.losses, cls)(reduction=reduction, **kwargs)
    np.testing.assert_allclose(
        np.asarray(ours(y_true, y_pred)), np.asarray(theirs(y_true, y_pred)), rtol=1e-5, atol=1e-6
    )
    weight = _uniform(len(y_true), high=2)
    np.testing.assert_allclose(
        np.asarray(ours(y_true, y_pred, sample_weight=weight)),
        np.asarray(theirs(y_true, y_pred, sample_weight=weight)),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(("cls", "fn", "kwargs", "y_true", "y_pred"), CASES, ids=IDS)
def test_loss_function_as_keras(cls, fn, kwargs, y_true, y_pred):
    np.testing.assert_allclose(
        np.asarray(getattr(losses, fn)(y_true, y_pred, **kwargs)),
        np.asarray(getattr(keras.losses, fn)(y_true, y_pred, **kwargs)),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(("cls", "fn", "kwargs", "y_true", "y_pred"), CASES, ids=IDS)
def test_get_config_holds_keras_keys_and_from_config_rebuilds(cls, fn, kwargs, y_true, y_pred):
    ours = getattr(losses, cls)(name="mine", **kwargs)
    theirs = getattr(keras.losses, cls)(name="mine", **kwargs)
    config = ours.get_config()
    assert {k: config[k] for k in theirs.get_config()} == theirs.get_config()
    again = type(ours).from_config(config)
    assert again.get_config() == config
    np.testing.assert_allclose(np.asarray(again(y_true, y_pred)), np.asarray(ours(y_true, y_pred)))


def test_ctc_as_keras():
    y_true = np.array([[1, 2, 0], [3, 1, 2], [2, 0, 0]], np.int32)
    y_pred = _uniform(3, 6, 4, low=-2, high=2)
    for reduction in ("sum_over_batch_size", "none"):
        np.testing.assert_allclose(
            np.asarray(losses.CTC(reduction=reduction)(y_true, y_pred)),
            np.asarray(keras.losses.CTC(reduction=reduction)(y_true, y_pred)),
            rtol=1e-4,
        )
    np.testing.assert_allclose(
        np.asarray(losses.ctc(y_true, y_pred)),
        np.asarray(keras.losses.ctc(y_true, y_pred)),
        rtol=1e-4,
    )


def test_ctc_refuses_wrong_ranks_as_keras():
    with pytest.raises(ValueError, match=r"y_true.shape=\(3,\)"):
        keras.losses.ctc(np.zeros(3), np.zeros((3, 4, 2)))
    with pytest.raises(ValueError, match=r"y_true.shape=\(3,\)"):
        losses.ctc(np.zeros(3), np.zeros((3, 4, 2)))
    with pytest.raises(ValueError, match=r"y_pred.shape=\(3, 4\)"):
        losses.ctc(np.zeros((3, 2)), np.zeros((3, 4)))


def test_categorical_focal_refuses_a_bool_axis_as_keras():
    y_true, y_pred = _one_hot(2, 3), _softmax(_uniform(2, 3))
    with pytest.raises(ValueError, match="`axis` must be of type `int`"):
        keras.losses.categorical_focal_crossentropy(y_true, y_pred, axis=True)
    with pytest.raises(ValueError, match="`axis` must be of type `int`"):
        losses.categorical_focal_crossentropy(y_true, y_pred, axis=True)


def test_binary_focal_refuses_shapes_that_differ_as_keras():
    y_true, y_pred = _binary(3, 1), _uniform(3, 3)
    with pytest.raises(ValueError, match="must have the same shape"):
        keras.losses.BinaryFocalCrossentropy()(y_true, y_pred)
    with pytest.raises(ValueError, match="must have the same shape"):
        losses.BinaryFocalCrossentropy()(y_true, y_pred)


def test_unknown_keyword_is_refused_naming_itself():
    with pytest.raises(ValueError, match=r"Tversky got unexpected arguments \['gama'\]"):
        losses.Tversky(gama=0.3)


@pytest.mark.parametrize(
    "name", ["mape", "msle", "kld", "log_cosh", "hinge", "poisson", "kl_divergence", "Dice"]
)
def test_get_by_name_as_keras(name):
    y_true, y_pred = _uniform(4, 3), _uniform(4, 3)
    ours, theirs = losses.get(name), keras.losses.get(name)
    np.testing.assert_allclose(
        np.asarray(ours(y_true, y_pred)), np.asarray(theirs(y_true, y_pred)), rtol=1e-5
    )


def test_fit_with_a_new_loss_by_name_trains_as_keras():
    import phalanx

    x, y = _uniform(16, 3, low=-1), _binary(16, 1)
    ours = phalanx.Sequential(
        [phalanx.layers.Input(shape=(3,)), phalanx.layers.Dense(1, activation="sigmoid")]
    )
    theirs = keras.Sequential(
        [keras.layers.Input(shape=(3,)), keras.layers.Dense(1, activation="sigmoid")]
    )
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=phalanx.optimizers.SGD(0.5), loss="binary_focal_crossentropy")
    theirs.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_focal_crossentropy")
    a = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    b = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(a, b, rtol=1e-5)
