"""Metrics: Keras's documented values, additivity over splits, zero-weight masking, jit."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from phalanx import losses, metrics


def run(metric, *args, **kwargs):
    return float(metric.result(metric.update(metric.init(), *args, **kwargs)))


PRED3 = jnp.array([[0.1, 0.9, 0.8], [0.05, 0.95, 0.0]])
W73 = jnp.array([0.7, 0.3])


@pytest.mark.parametrize(
    ("metric", "y_true", "y_pred", "weight", "expected"),
    [
        # Values from the Keras 3 docstrings.
        (metrics.Mean(), jnp.array([1.0, 3, 5, 7]), None, None, 4.0),
        (metrics.Mean(), jnp.array([1.0, 3, 5, 7]), None, jnp.array([1.0, 1, 0, 0]), 2.0),
        ("binary_accuracy", [[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], None, 0.75),
        ("binary_accuracy", [[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]], [1, 0, 0, 1], 0.5),
        ("categorical_accuracy", [[0, 0, 1], [0, 1, 0]], PRED3, None, 0.5),
        ("categorical_accuracy", [[0, 0, 1], [0, 1, 0]], PRED3, W73, 0.3),
        (
            "sparse_categorical_accuracy",
            [[2], [1]],
            [[0.1, 0.6, 0.3], [0.05, 0.95, 0]],
            None,
            0.5,
        ),
        ("sparse_categorical_accuracy", [2, 1], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]], W73, 0.3),
        (metrics.TopKCategoricalAccuracy(k=1), [[0, 0, 1], [0, 1, 0]], PRED3, None, 0.5),
        (metrics.TopKCategoricalAccuracy(k=1), [[0, 0, 1], [0, 1, 0]], PRED3, W73, 0.3),
        (metrics.SparseTopKCategoricalAccuracy(k=1), [2, 1], PRED3, None, 0.5),
        (metrics.SparseTopKCategoricalAccuracy(k=1), [2, 1], PRED3, W73, 0.3),
        ("top_k_categorical_accuracy", [[0, 0, 1], [0, 1, 0]], PRED3, None, 1.0),
        ("mse", [[0, 1], [0, 0]], [[1, 1], [0, 0]], None, 0.25),
        ("mse", [[0, 1], [0, 0]], [[1, 1], [0, 0]], [1, 0], 0.5),
        ("mae", [[0, 1], [0, 0]], [[1, 1], [0, 0]], None, 0.25),
        ("mae", [[0, 1], [0, 0]], [[1, 1], [0, 0]], [1, 0], 0.5),
        ("Precision", [0, 1, 1, 1], [1, 0, 1, 1], None, 2 / 3),
        ("Precision", [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 0], 1.0),
        (metrics.Precision(top_k=2), [0, 0, 1, 1], [1, 1, 1, 1], None, 0.0),
        (metrics.Precision(top_k=4), [0, 0, 1, 1], [1, 1, 1, 1], None, 0.5),
        ("Recall", [0, 1, 1, 1], [1, 0, 1, 1], None, 2 / 3),
        ("Recall", [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 0], 1.0),
    ],
)
def test_keras_documented_values(metric, y_true, y_pred, weight, expected):
    metric = metrics.get(metric)
    kwargs = {} if weight is None else {"sample_weight": jnp.asarray(weight, jnp.float32)}
    if isinstance(metric, metrics.Mean) and not isinstance(metric, metrics.MeanMetricWrapper):
        value = run(metric, y_true, **kwargs)
    else:
        value = run(metric, jnp.asarray(y_true), jnp.asarray(y_pred, jnp.float32), **kwargs)
    assert value == pytest.approx(expected, abs=1e-6)


AUC_TRUE = jnp.array([0, 0, 1, 1])
AUC_PRED = jnp.array([0, 0.5, 0.3, 0.9])
AUC_W = jnp.array([1.0, 2, 3, 4])


@pytest.mark.parametrize(
    ("kwargs", "weight", "expected"),
    [
        # Keras's AUC tests (num_thresholds=3).
        ({}, None, 0.75),
        ({}, jnp.array([1.0, 0, 0, 1]), 1.0),
        ({}, AUC_W, 0.7855),
        ({"summation_method": "majoring"}, AUC_W, 1.0),
        ({"summation_method": "minoring"}, AUC_W, 0.571),
        ({"curve": "PR", "summation_method": "majoring"}, AUC_W, 1.0),
        ({"curve": "PR", "summation_method": "minoring"}, AUC_W, 0.7 * 0.429),
        ({"curve": "PR"}, AUC_W, 2.416 / 7 + 4 / 7),
        ({"curve": "PR"}, -AUC_W, 0.0),
        ({"thresholds": [0.5], "num_thresholds": 2}, None, 0.75),
    ],
)
def test_auc_matches_keras(kwargs, weight, expected):
    kwargs = {"num_thresholds": 3, **kwargs}
    m = metrics.AUC(**kwargs)
    value = run(m, AUC_TRUE, AUC_PRED, **({} if weight is None else {"sample_weight": weight}))
    assert value == pytest.approx(expected, abs=1e-3)


def test_auc_default_and_logits():
    assert run(metrics.AUC(), AUC_TRUE, AUC_TRUE.astype(jnp.float32)) == 1.0
    logits = -jnp.log(1.0 / (AUC_PRED + 1e-12) - 1.0)
    assert run(metrics.AUC(num_thresholds=3, from_logits=True), AUC_TRUE, logits) == (
        pytest.approx(0.75, abs=1e-3)
    )
    # Keras test_extra_dims: 0.5.
    logits = -np.array(
        [[[-10.0, 10.0, -10.0], [10.0, -10.0, 10.0]], [[-12.0, 12.0, -12.0], [12.0, -12.0, 12.0]]]
    )
    labels = jnp.array([[[1, 0, 0], [1, 0, 0]], [[0, 1, 1], [0, 1, 1]]])
    assert run(metrics.AUC(), labels, jax.nn.sigmoid(jnp.asarray(logits))) == 0.5
    assert metrics.AUC().init()["tp"].shape == (200,)


def test_auc_bucketing_equals_threshold_comparison():
    key1, key2 = jax.random.split(jax.random.key(0))
    y_true = jax.random.bernoulli(key1, 0.4, (500,)).astype(jnp.float32)
    y_pred = jax.random.uniform(key2, (500,))
    fast = metrics.AUC(num_thresholds=50)
    slow = metrics.AUC(thresholds=[(i + 1) / 49 for i in range(48)])
    slow._evenly = False
    s1 = fast.update(fast.init(), y_true, y_pred)
    s2 = slow.update(slow.init(), y_true, y_pred)
    for k in s1:
        np.testing.assert_allclose(s1[k], s2[k])


def test_accuracy_resolved_from_loss_then_shapes():
    y_sparse, y_onehot = jnp.array([2, 1]), jnp.array([[0, 0, 1], [0, 1, 0]])
    m = metrics.get("accuracy", loss="sparse_categorical_crossentropy")
    assert m.name == "accuracy" and run(m, y_sparse, PRED3) == 0.5
    m = metrics.get("acc", loss=losses.CategoricalCrossentropy())
    assert m.name == "acc" and run(m, y_onehot, PRED3) == 0.5
    m = metrics.get("accuracy", loss=losses.BinaryCrossentropy())
    assert run(m, jnp.array([[1.0], [0.0]]), jnp.array([[0.7], [0.6]])) == 0.5
    auto = metrics.get("accuracy")  # no loss: Keras 3's shape rule at trace time
    assert run(auto, y_sparse, PRED3) == 0.5
    assert run(auto, y_sparse[:, None], PRED3) == 0.5
    assert run(auto, y_onehot, PRED3) == 0.5
    assert run(auto, jnp.array([1.0, 0.0]), jnp.array([[0.7], [0.6]])) == 0.5


def test_get_names_objects_and_errors():
    assert metrics.get("mse").name == "mse"
    assert metrics.get("AUC").name == "auc"
    assert metrics.get("precision").name == "precision"
    assert metrics.get(metrics.Recall).name == "recall"
    custom = metrics.get(lambda t, p: jnp.abs(t - p))
    assert run(custom, jnp.array([0.0, 0.0]), jnp.array([1.0, 3.0])) == 2.0
    with pytest.raises(ValueError, match="Unknown metric 'acuracy'"):
        metrics.get("acuracy")


def _data(n=200, classes=4):
    k1, k2, k3 = jax.random.split(jax.random.key(7), 3)
    y = jax.random.randint(k1, (n,), 0, classes)
    p = jax.nn.softmax(jax.random.normal(k2, (n, classes)) * 2)
    w = jax.random.uniform(k3, (n,))
    return y, p, w


def _all_metrics():
    return [
        metrics.get("accuracy", loss="sparse_categorical_crossentropy"),
        metrics.SparseTopKCategoricalAccuracy(k=2),
        metrics.AUC(),
        metrics.AUC(curve="PR"),
        metrics.Precision(class_id=1),
        metrics.Recall(thresholds=[0.2, 0.5]),
        metrics.Mean(),
    ]


def _args(metric, y, p):
    if type(metric) is metrics.Mean:
        return (p[:, 0],)
    if isinstance(metric, metrics.AUC | metrics.Precision | metrics.Recall):
        return (jax.nn.one_hot(y, 4), p)
    return (y, p)


@pytest.mark.parametrize("parts", [2, 5])
def test_states_are_additive_over_splits(parts):
    y, p, w = _data()
    cuts = np.linspace(0, len(y), parts + 1).astype(int)
    for m in _all_metrics():
        update = jax.jit(m.update)
        whole = update(m.init(), *_args(m, y, p), sample_weight=w)
        summed = m.init()
        for a, b in itertools.pairwise(cuts):
            inc = update(m.init(), *_args(m, y[a:b], p[a:b]), sample_weight=w[a:b])
            summed = metrics.merge_states(summed, inc)
        # update(s, batch) == s + update(init(), batch)
        again = update(whole, *_args(m, y, p), sample_weight=w)
        twice = metrics.merge_states(whole, whole)
        for key in whole:
            np.testing.assert_allclose(summed[key], whole[key], rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(again[key], twice[key], rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(m.result(summed), m.result(whole), rtol=1e-5, atol=1e-6)


def test_zero_weight_padding_contributes_nothing():
    y, p, _ = _data(50)
    pad_y = jnp.concatenate([y, jnp.zeros(14, y.dtype)])
    pad_p = jnp.concatenate([p, jnp.full((14, 4), jnp.nan)])  # garbage in padded rows
    mask = jnp.concatenate([jnp.ones(50), jnp.zeros(14)])
    for m in _all_metrics():
        update = jax.jit(m.update)
        real = update(m.init(), *_args(m, y, p), sample_weight=jnp.ones(50))
        padded = update(m.init(), *_args(m, pad_y, pad_p), sample_weight=mask)
        for key in real:
            np.testing.assert_allclose(padded[key], real[key], rtol=1e-6, atol=1e-5)


def test_jit_and_psum_over_replicas_equal_one_device():
    y, p, w = _data(64)
    mesh = Mesh(np.array(jax.devices()[:4]), ("replica",))
    for m in _all_metrics():
        args = _args(m, y, p)

        def per_replica(*batch, m=m):
            *data, weight = batch
            inc = m.update(m.init(), *data, sample_weight=weight)
            return jax.tree.map(lambda x: jax.lax.psum(x, "replica"), inc)

        dist = jax.jit(jax.shard_map(per_replica, mesh=mesh, in_specs=P("replica"), out_specs=P()))(
            *args, w
        )
        single = jax.jit(lambda *a, m=m: m.update(m.init(), *a[:-1], sample_weight=a[-1]))(*args, w)
        np.testing.assert_allclose(m.result(dist), m.result(single), rtol=1e-5)


def test_states_are_float32_and_results_finite_when_empty():
    for m in _all_metrics():
        state = m.init()
        assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(state))
        assert np.all(np.isfinite(np.asarray(m.result(state))))
