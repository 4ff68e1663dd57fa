"""Metrics take Keras's positional ``name`` and ``dtype=``, as the seeds create them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx import layers, metrics


def test_the_seeds_metrics_in_a_custom_loop():
    """TensorFlow's TPU guide: Mean('training_loss', dtype=tf.float32), and so on."""
    training_loss = metrics.Mean("training_loss", dtype="float32")
    training_accuracy = metrics.SparseCategoricalAccuracy("training_accuracy", dtype=jnp.float32)
    test_accuracy = metrics.SparseCategoricalAccuracy(name="test_accuracy")
    assert (training_loss.name, training_accuracy.name) == ("training_loss", "training_accuracy")
    assert training_loss.dtype == jnp.float32 and test_accuracy.dtype is None
    state = training_loss.update(training_loss.init(), jnp.array([1.0, 3.0]))
    assert float(training_loss.result(state)) == 2.0
    logits = jnp.array([[0.1, 0.9], [0.8, 0.2]])
    acc = training_accuracy.update(training_accuracy.init(), jnp.array([1, 1]), logits)
    assert float(training_accuracy.result(acc)) == 0.5


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: metrics.Mean("m", "float32"), "m"),
        (lambda: metrics.Accuracy("a", dtype="float32"), "a"),
        (lambda: metrics.BinaryAccuracy("b", "float32", 0.7), "b"),
        (lambda: metrics.CategoricalAccuracy("c", dtype="float32"), "c"),
        (lambda: metrics.SparseCategoricalAccuracy("s", "float32"), "s"),
        (lambda: metrics.TopKCategoricalAccuracy(3, "t", dtype="float32"), "t"),
        (lambda: metrics.SparseTopKCategoricalAccuracy(3, "st", "float32"), "st"),
        (lambda: metrics.MeanSquaredError("mse_", dtype="float32"), "mse_"),
        (lambda: metrics.MeanAbsoluteError("mae_", dtype="float32"), "mae_"),
        (lambda: metrics.Precision(0.5, None, None, "p", "float32"), "p"),
        (lambda: metrics.Recall(None, None, None, "r", dtype="float32"), "r"),
        (lambda: metrics.AUC(200, "ROC", "interpolation", "auc_", "float32"), "auc_"),
        (lambda: metrics.AUC(name="auc_pr", curve="PR", dtype="float32"), "auc_pr"),
        (lambda: metrics.MeanMetricWrapper(jnp.abs, "w", "float32"), "w"),
    ],
)
def test_every_metric_takes_keras_name_and_dtype(make, name):
    metric = make()
    assert metric.name == name
    assert metric.dtype == jnp.float32


def test_keras_positions_of_the_other_arguments():
    assert metrics.BinaryAccuracy("b", None, 0.7).kwargs == {"threshold": 0.7}
    assert metrics.TopKCategoricalAccuracy(2).kwargs == {"k": 2}
    assert metrics.AUC(3, "PR").curve == "PR"


def test_named_metrics_are_fit_log_keys():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = rng.integers(0, 3, 32)
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(3)])
        model.compile(
            optimizer="sgd",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[metrics.SparseCategoricalAccuracy("train_accuracy", dtype="float32")],
        )
    history = model.fit(x, y, batch_size=8, verbose=0)
    assert list(history.history) == ["loss", "train_accuracy"]


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: metrics.BinaryAccuracy(0.7), TypeError, "name must be a string.*threshold=0.7"),
        (lambda: metrics.Mean(3), TypeError, "Mean's name must be a string"),
        (lambda: metrics.Mean("m", dtype="int32"), TypeError, "floating dtype.*'int32'"),
        (lambda: metrics.AUC(dtype="no-such-type"), TypeError, "floating dtype"),
    ],
)
def test_bad_names_and_dtypes_say_what_to_pass(make, error, match):
    with pytest.raises(error, match=match):
        make()
