"""Keras 3's regression, probabilistic and hinge metrics (JAX backend) against phalanx's.

Keras's metric objects keep state (``update_state``/``result``); phalanx's
are pure (``result(update(init(), ...))``). Both see the same two batches,
with and without ``sample_weight``; the results, names, ``direction`` and
``get_config`` agree, and the same metric compiled into ``fit`` logs what
Keras's ``fit`` logs.
"""

import os

import numpy as np
import pytest

from phalanx import metrics

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(1)


def _u(*shape, low=0.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def _binary(*shape):
    return RNG.integers(0, 2, size=shape).astype(np.float32)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def _one_hot(batch, classes):
    return np.eye(classes, dtype=np.float32)[RNG.integers(0, classes, size=batch)]


CASES = [
    ("MeanAbsolutePercentageError", {}, _u(6, 3, low=-2, high=2), _u(6, 3, low=-2, high=2)),
    ("MeanSquaredLogarithmicError", {}, _u(6, 3, high=3), _u(6, 3, high=3)),
    ("CosineSimilarity", {}, _u(6, 3, low=-1), _u(6, 3, low=-1)),
    ("CosineSimilarity", {"axis": 1}, _u(6, 3, low=-1), _u(6, 3, low=-1)),
    ("LogCoshError", {}, _u(6, 3, low=-3, high=3), _u(6, 3, low=-3, high=3)),
    ("KLDivergence", {}, _softmax(_u(6, 3)), _softmax(_u(6, 3))),
    ("Poisson", {}, _u(6, 3, high=4), _u(6, 3, high=4)),
    ("Hinge", {}, _binary(6, 3), _u(6, 3, low=-1)),
    ("SquaredHinge", {}, _binary(6, 3), _u(6, 3, low=-1)),
    ("CategoricalHinge", {}, _one_hot(6, 3), _u(6, 3, low=-1)),
    ("BinaryCrossentropy", {}, _binary(6, 3), _u(6, 3)),
    ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1},
     _binary(6, 3), _u(6, 3, low=-3, high=3)),
    ("CategoricalCrossentropy", {}, _one_hot(6, 3), _softmax(_u(6, 3))),
    ("CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.2},
     _one_hot(6, 3), _u(6, 3, low=-2, high=2)),
    ("SparseCategoricalCrossentropy", {}, RNG.integers(0, 3, size=(6, 1)), _softmax(_u(6, 3))),
    ("SparseCategoricalCrossentropy", {"from_logits": True},
     RNG.integers(0, 3, size=(6,)), _u(6, 3, low=-2, high=2)),
    ("RootMeanSquaredError", {}, _u(6, 3, low=-2, high=2), _u(6, 3, low=-2, high=2)),
]  # fmt: skip
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _keras_result(metric, y_true, y_pred, weight):
    half = len(y_true) // 2
    for part in (slice(0, half), slice(half, None)):
        metric.update_state(y_true[part], y_pred[part], None if weight is None else weight[part])
    return float(metric.result())


def _our_result(metric, y_true, y_pred, weight):
    half = len(y_true) // 2
    state = metric.init()
    for part in (slice(0, half), slice(half, None)):
        state = metric.update(
            state, y_true[part], y_pred[part], None if weight is None else weight[part]
        )
    return float(metric.result(state))


@pytest.mark.parametrize(("cls", "kwargs", "y_true", "y_pred"), CASES, ids=IDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_metric_as_keras(cls, kwargs, y_true, y_pred, weighted):
    weight = _u(len(y_true), high=2) if weighted else None
    ours = getattr(metrics, cls)(**kwargs)
    theirs = getattr(keras.metrics, cls)(**kwargs)
    assert ours.name == theirs.name
    assert ours.direction == theirs._direction
    assert _our_result(ours, y_true, y_pred, weight) == pytest.approx(
        _keras_result(theirs, y_true, y_pred, weight), rel=1e-5, abs=1e-6
    )


@pytest.mark.parametrize(("cls", "kwargs", "y_true", "y_pred"), CASES, ids=IDS)
def test_get_config_as_keras_and_from_config(cls, kwargs, y_true, y_pred):
    ours = getattr(metrics, cls)(name="mine", **kwargs)
    theirs = getattr(keras.metrics, cls)(name="mine", **kwargs)
    assert ours.get_config() == theirs.get_config()
    again = type(ours).from_config(ours.get_config())
    assert again.name == "mine"


def test_sum_as_keras():
    values, weight = _u(5, 2), _u(5)
    ours, theirs = metrics.Sum(), keras.metrics.Sum()
    theirs.update_state(values, sample_weight=weight)
    theirs.update_state(values[:2])
    state = ours.update(ours.init(), values, sample_weight=weight)
    state = ours.update(state, values[:2])
    assert float(ours.result(state)) == pytest.approx(float(theirs.result()), rel=1e-6)
    assert ours.get_config() == theirs.get_config()


@pytest.mark.parametrize(
    "name",
    ["mape", "msle", "kl_divergence", "hinge", "poisson", "LogCoshError", "RootMeanSquaredError"],
)
def test_get_by_name_as_keras(name):
    y_true, y_pred = _u(6, 3), _u(6, 3)
    ours, theirs = metrics.get(name), keras.metrics.get(name)
    if not isinstance(theirs, keras.metrics.Metric):
        theirs = keras.metrics.MeanMetricWrapper(theirs)
    assert _our_result(ours, y_true, y_pred, None) == pytest.approx(
        _keras_result(theirs, y_true, y_pred, None), rel=1e-5
    )


def test_new_metrics_in_fit_log_what_keras_logs():
    import phalanx

    x, y = _u(16, 3, low=-1), _u(16, 2)
    names = ["mape", "msle", "poisson", "hinge"]
    ours = phalanx.Sequential(
        [phalanx.layers.Input(shape=(3,)), phalanx.layers.Dense(2, activation="softplus")]
    )
    theirs = keras.Sequential(
        [keras.layers.Input(shape=(3,)), keras.layers.Dense(2, activation="softplus")]
    )
    theirs.set_weights(ours.get_weights())
    ours.compile(
        optimizer=phalanx.optimizers.SGD(0.1),
        loss="mse",
        metrics=[*names, metrics.RootMeanSquaredError(), metrics.LogCoshError()],
    )
    theirs.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss="mse",
        metrics=[*names, keras.metrics.RootMeanSquaredError(), keras.metrics.LogCoshError()],
    )
    a = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    b = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    assert sorted(a) == sorted(b)
    for key in b:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-4, err_msg=key)
