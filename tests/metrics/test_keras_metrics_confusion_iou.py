"""Keras 3's confusion-count, at-threshold, F-score, IoU and R2 metrics, and AUC's
``multi_label``/``PRGAIN``, against phalanx's (the way Keras's ``metrics/*_test.py``
check them): two batches, with and without ``sample_weight``; the results, names,
directions and ``get_config`` agree; states add (one replica's increment plus
another's is the whole batch's), and compiled into ``evaluate`` over 2 replicas
they give Keras's value.
"""

from __future__ import annotations

import os
import re

import jax
import numpy as np
import pytest

from phalanx import metrics

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(7)
N = 8


def _u(*shape):
    return RNG.uniform(0, 1, size=shape).astype(np.float32)


def _binary(*shape):
    return RNG.integers(0, 2, size=shape).astype(np.float32)


def _one_hot(classes):
    return np.eye(classes, dtype=np.float32)[RNG.integers(0, classes, size=N)]


def _ids(classes, *shape):
    return RNG.integers(0, classes, size=(N, *shape))


# (class, Keras's arguments, phalanx-only arguments, y_true, y_pred)
CASES = [
    ("TruePositives", {}, {}, _binary(N, 3), _u(N, 3)),
    ("FalsePositives", {"thresholds": [0.2, 0.7]}, {}, _binary(N, 3), _u(N, 3)),
    ("TrueNegatives", {"thresholds": [0.0, 0.5, 1.0]}, {}, _binary(N, 3), _u(N, 3)),
    ("FalseNegatives", {"thresholds": 0.3}, {}, _binary(N), _u(N)),
    ("PrecisionAtRecall", {"recall": 0.5}, {}, _binary(N, 3), _u(N, 3)),
    ("PrecisionAtRecall", {"recall": 0.7, "num_thresholds": 5, "class_id": 1}, {},
     _binary(N, 3), _u(N, 3)),
    ("RecallAtPrecision", {"precision": 0.6}, {}, _binary(N, 3), _u(N, 3)),
    ("SensitivityAtSpecificity", {"specificity": 0.5}, {}, _binary(N, 3), _u(N, 3)),
    ("SpecificityAtSensitivity", {"sensitivity": 0.4, "num_thresholds": 1}, {},
     _binary(N, 3), _u(N, 3)),
    ("F1Score", {}, {"num_classes": 3}, _one_hot(3), _u(N, 3)),
    ("F1Score", {"average": "micro", "threshold": 0.5}, {}, _binary(N, 3), _u(N, 3)),
    ("FBetaScore", {"average": "macro", "beta": 2.0}, {"num_classes": 3}, _one_hot(3), _u(N, 3)),
    ("FBetaScore", {"average": "weighted", "beta": 0.5, "threshold": 0.4}, {"num_classes": 3},
     _binary(N, 3), _u(N, 3)),
    ("IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, {}, _ids(3), _ids(3)),
    ("IoU", {"num_classes": 3, "target_class_ids": [1], "ignore_class": 0}, {}, _ids(3), _ids(3)),
    ("MeanIoU", {"num_classes": 4}, {}, _ids(4), _ids(4)),
    ("MeanIoU", {"num_classes": 3, "sparse_y_pred": False}, {}, _ids(3), _u(N, 3)),
    ("BinaryIoU", {}, {}, _binary(N), _u(N)),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.3}, {}, _binary(N), _u(N)),
    ("OneHotIoU", {"num_classes": 3, "target_class_ids": [0, 1]}, {}, _one_hot(3), _u(N, 3)),
    ("OneHotMeanIoU", {"num_classes": 3}, {}, _one_hot(3), _u(N, 3)),
    ("R2Score", {}, {}, _u(N, 1), _u(N, 1)),
    ("R2Score", {"class_aggregation": "variance_weighted_average"}, {"num_outputs": 3},
     _u(N, 3), _u(N, 3)),
    ("R2Score", {"class_aggregation": None, "num_regressors": 2}, {"num_outputs": 2},
     _u(N, 2), _u(N, 2)),
    ("AUC", {"curve": "PRGAIN"}, {}, _binary(N, 3), _u(N, 3)),
    ("AUC", {"curve": "PRGAIN", "summation_method": "minoring", "num_thresholds": 7}, {},
     _binary(N, 3), _u(N, 3)),
    ("AUC", {"multi_label": True}, {"num_labels": 3}, _binary(N, 3), _u(N, 3)),
    ("AUC", {"multi_label": True, "curve": "PR", "label_weights": [0.2, 0.5, 0.3]},
     {"num_labels": 3}, _binary(N, 3), _u(N, 3)),
    ("AUC", {"label_weights": [1.0, 0.5, 0.0], "thresholds": [0.3, 0.6]}, {},
     _binary(N, 3), _u(N, 3)),
]  # fmt: skip
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]
# IoU's Keras dtype is int32 counts (phalanx: float32); Keras's num_labels is None until built
KERAS_ONLY_CONFIG = {"dtype", "num_labels"}


def _halves():
    return (slice(0, N // 2), slice(N // 2, None))


def _keras_result(metric, y_true, y_pred, weight):
    for part in _halves():
        metric.update_state(y_true[part], y_pred[part], None if weight is None else weight[part])
    return np.asarray(metric.result())


def _our_result(metric, y_true, y_pred, weight):
    state = metric.init()
    for part in _halves():
        state = metric.update(
            state, y_true[part], y_pred[part], None if weight is None else weight[part]
        )
    return np.asarray(metric.result(state))


@pytest.mark.parametrize(("cls", "kwargs", "extra", "y_true", "y_pred"), CASES, ids=IDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_metric_as_keras(cls, kwargs, extra, y_true, y_pred, weighted):
    # IoU's Keras counts are integers: integer weights keep them equal. (A weight of 0
    # counts nowhere in phalanx, as padding: R2Score's sample count leaves it out.)
    weight = RNG.integers(1, 4, size=N).astype(np.float32) if weighted else None
    ours = getattr(metrics, cls)(**kwargs, **extra)
    theirs = getattr(keras.metrics, cls)(**kwargs)
    assert ours.name == re.sub(r"_\d+$", "", theirs.name)  # Keras numbers repeats: auc_1
    assert getattr(ours, "direction", None) == getattr(theirs, "_direction", None)
    np.testing.assert_allclose(
        _our_result(ours, y_true, y_pred, weight),
        _keras_result(theirs, y_true, y_pred, weight),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(("cls", "kwargs", "extra", "y_true", "y_pred"), CASES, ids=IDS)
def test_get_config_as_keras_and_from_config(cls, kwargs, extra, y_true, y_pred):
    ours = getattr(metrics, cls)(name="mine", **kwargs, **extra)
    theirs = getattr(keras.metrics, cls)(name="mine", **kwargs).get_config()
    config = ours.get_config()
    for key, value in theirs.items():
        if key not in KERAS_ONLY_CONFIG:
            if key == "label_weights" and value is not None:  # float32 in Keras
                np.testing.assert_allclose(config[key], value, rtol=1e-6, err_msg=key)
            else:
                assert np.all(np.asarray(config[key]) == np.asarray(value)), key
    again = type(ours).from_config(config)
    assert again.get_config() == config
    # states add: the two halves' increments are the whole batch's
    halves = [ours.increment(y_true[p], y_pred[p]) for p in _halves()]
    whole = ours.update(ours.init(), y_true, y_pred)
    merged = metrics.merge_states(*halves)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), merged, whole)


@pytest.mark.parametrize(
    "cls", ["Accuracy", "BinaryAccuracy", "SparseTopKCategoricalAccuracy", "Mean", "Precision",
            "Recall", "AUC", "MeanSquaredError"]
)  # fmt: skip
def test_every_older_metric_has_keras_config(cls):
    ours = getattr(metrics, cls)(name="mine")
    theirs = getattr(keras.metrics, cls)(name="mine").get_config()
    config = ours.get_config()
    assert {k: config[k] for k in theirs} == theirs
    assert type(ours).from_config(config).get_config() == config


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda m: m.FBetaScore(beta=1), "It should be a Python float"),
        (lambda m: m.F1Score(threshold=1.5), "0 < threshold <= 1"),
        (lambda m: m.F1Score(average="mean"), "Invalid `average`"),
        (lambda m: m.IoU(num_classes=2, target_class_ids=[2]), "out of range"),
        (lambda m: m.PrecisionAtRecall(recall=1.5), r"must be in the range \[0, 1\]"),
        (lambda m: m.R2Score(class_aggregation="x"), "class_aggregation"),
        (lambda m: m.R2Score(num_regressors=-1), "num_regressors"),
    ],
)
def test_refused_arguments_raise_as_keras(make, match):
    with pytest.raises(ValueError, match=match):
        make(keras.metrics)
    with pytest.raises(ValueError, match=match):
        make(metrics)


def test_shapes_phalanx_needs_up_front_are_asked_for_by_name():
    with pytest.raises(ValueError, match="num_classes="):
        metrics.F1Score()
    with pytest.raises(NotImplementedError, match="num_labels="):
        metrics.AUC(multi_label=True)
    with pytest.raises(ValueError, match="num_outputs=3"):
        metrics.R2Score().update(metrics.R2Score().init(), _u(N, 3), _u(N, 3))


# slow: compiles evaluate and predict for four metrics (~15 s on 2 loaded cores); the check
# that the new states are exact across replicas inside the compiled step.
@pytest.mark.slow
def test_compiled_over_two_replicas_equals_keras():
    import phalanx as px

    x, y = _u(N * 2, 3), _one_hot(3)
    y = np.concatenate([y, _one_hot(3)])
    strategy = px.distribute.MirroredStrategy(jax.devices()[:2])
    with strategy.scope():
        model = px.Sequential([px.layers.Input((3,)), px.layers.Dense(3, activation="softmax")])
        ours = [
            metrics.F1Score(average="macro", num_classes=3),
            metrics.OneHotMeanIoU(num_classes=3),
            metrics.PrecisionAtRecall(0.5),
            metrics.AUC(multi_label=True, num_labels=3),
        ]
        model.compile(loss="categorical_crossentropy", metrics=ours)
    logs = model.evaluate(x, y, batch_size=6, return_dict=True, verbose=0)
    y_pred = np.asarray(model.predict(x, verbose=0))
    theirs = [
        keras.metrics.F1Score(average="macro"),
        keras.metrics.OneHotMeanIoU(num_classes=3),
        keras.metrics.PrecisionAtRecall(0.5),
        keras.metrics.AUC(multi_label=True),
    ]
    for metric in theirs:
        metric.update_state(y, y_pred)
        assert logs[re.sub(r"_\d+$", "", metric.name)] == pytest.approx(
            float(metric.result()), rel=1e-5, abs=1e-6
        )


def test_mean_metric_wrapper_config_keeps_fn_and_its_arguments():
    def scaled(y_true, y_pred, factor=1.0):
        return factor * (y_pred - y_true)

    ours = metrics.MeanMetricWrapper(scaled, name="scaled", factor=2.0)
    theirs = keras.metrics.MeanMetricWrapper(scaled, name="scaled", factor=2.0).get_config()
    config = ours.get_config()
    assert sorted(config) == sorted(theirs) and config["factor"] == 2.0
    again = metrics.MeanMetricWrapper.from_config(config)
    y_true, y_pred = _u(N), _u(N)
    assert float(again.result(again.update(again.init(), y_true, y_pred))) == pytest.approx(
        float(np.mean(2.0 * (y_pred - y_true))), rel=1e-4, abs=1e-6
    )
