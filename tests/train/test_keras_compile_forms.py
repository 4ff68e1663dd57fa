"""compile's forms and sample weights as Keras 3 (JAX backend): each case runs in both.

Keras 3 weighs only the loss and ``weighted_metrics=`` by ``sample_weight``
(and ``class_weight``); ``metrics=`` see every example alike
(``trainers/compile_utils.py``, ``CompileMetrics.update_state``). Padding of a
partial batch still counts nowhere in phalanx's metrics.
"""

import os

import numpy as np
import pytest

import phalanx
from phalanx import layers, metrics

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(7)
X = RNG.normal(size=(20, 3)).astype(np.float32)
Y = RNG.normal(size=(20, 1)).astype(np.float32)
W = RNG.uniform(0.0, 2.0, size=(20,)).astype(np.float32)


def _pair(units=1):
    ours = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(units)])
    theirs = keras.Sequential([keras.layers.Input(shape=(3,)), keras.layers.Dense(units)])
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def _same_history(a, b):
    assert sorted(a) == sorted(b)
    for key in b:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-4, atol=1e-6, err_msg=key)


def _same_logs(a, b):
    assert sorted(a) == sorted(b)
    for key in b:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-4, atol=1e-6, err_msg=key)


def _compile_both(ours, theirs, kwargs):
    ours.compile(optimizer=phalanx.optimizers.SGD(0.05), **kwargs(metrics))
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), **kwargs(keras.metrics))


def test_sample_weight_weighs_the_loss_and_weighted_metrics_not_metrics():
    """keras-io "customizing what happens in fit": fit and evaluate with sample_weight."""
    ours, theirs = _pair()
    _compile_both(
        ours,
        theirs,
        kwargs=lambda m: dict(
            loss="mse",
            metrics=["mae", m.MeanSquaredError(name="plain_mse")],
            weighted_metrics=[m.MeanAbsoluteError(name="weighted_mae")],
        ),
    )
    # batch 8 over 20 examples: a partial last batch, whose padding counts nowhere
    args = dict(x=X, y=Y, sample_weight=W, batch_size=8, verbose=0)
    a = ours.fit(**args, epochs=2, shuffle=False).history
    b = theirs.fit(**args, epochs=2, shuffle=False).history
    _same_history(a, b)
    assert a["mae"] != pytest.approx(a["weighted_mae"])  # the weights matter
    _same_logs(ours.evaluate(**args, return_dict=True), theirs.evaluate(**args, return_dict=True))


def test_class_weight_weighs_only_weighted_metrics():
    ours = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(3, activation="softmax")])
    theirs = keras.Sequential(
        [keras.layers.Input(shape=(3,)), keras.layers.Dense(3, activation="softmax")]
    )
    theirs.set_weights(ours.get_weights())
    labels = RNG.integers(0, 3, size=(20,)).astype(np.int32)
    _compile_both(
        ours,
        theirs,
        kwargs=lambda m: dict(
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            weighted_metrics=[m.SparseCategoricalAccuracy(name="weighted_acc")],
        ),
    )
    args = dict(x=X, y=labels, batch_size=8, epochs=2, shuffle=False, verbose=0)
    weights = {0: 0.2, 1: 1.0, 2: 3.0}
    a = ours.fit(**args, class_weight=weights).history
    b = theirs.fit(**args, class_weight=weights).history
    _same_history(a, b)


def test_weighted_metrics_per_output_of_a_two_output_model():
    inputs = keras.Input(shape=(3,))
    theirs = keras.Model(
        inputs, [keras.layers.Dense(1, name="a")(inputs), keras.layers.Dense(1, name="b")(inputs)]
    )
    x = layers.Input(shape=(3,))
    ours = phalanx.Model(x, [layers.Dense(1, name="a")(x), layers.Dense(1, name="b")(x)])
    theirs.set_weights(ours.get_weights())
    _compile_both(
        ours,
        theirs,
        kwargs=lambda m: dict(
            loss=["mse", "mse"], metrics=[["mae"], []], weighted_metrics=[[], ["mae"]]
        ),
    )
    args = dict(x=X, y=[Y, 2 * Y], sample_weight=W, batch_size=8, verbose=0)
    _same_history(
        ours.fit(**args, epochs=1, shuffle=False).history,
        theirs.fit(**args, epochs=1, shuffle=False).history,
    )


def test_weighted_metrics_must_be_a_list_as_keras():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    with pytest.raises(ValueError, match="weighted_metrics must be a list, got str"):
        model.compile(loss="mse", weighted_metrics="mae")


@pytest.mark.parametrize("loss_weights", [0.2, [0.2], {"dense": 0.2}])
def test_loss_weights_scale_the_one_loss_as_keras(loss_weights):
    ours, theirs = _pair()
    theirs_weights = 0.2 if isinstance(loss_weights, dict) else loss_weights
    ours.compile(optimizer=phalanx.optimizers.SGD(0.05), loss="mse", loss_weights=loss_weights)
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", loss_weights=theirs_weights)
    args = dict(x=X, y=Y, batch_size=8, verbose=0)
    _same_history(
        ours.fit(**args, epochs=2, shuffle=False).history,
        theirs.fit(**args, epochs=2, shuffle=False).history,
    )
    np.testing.assert_allclose(ours.get_weights()[0], theirs.get_weights()[0], rtol=1e-5)


def test_loss_weights_of_one_loss_must_be_one_number():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    with pytest.raises(ValueError, match=r"must be a number \(or a list of one\), got \[1, 2\]"):
        model.compile(loss="mse", loss_weights=[1, 2])


def test_a_none_loss_leaves_its_outputs_untrained_as_keras():
    def outputs(lib, x):
        return [lib.layers.Dense(1, name=n)(x) for n in ("a", "b", "c")]

    inputs = keras.Input(shape=(3,))
    theirs = keras.Model(inputs, outputs(keras, inputs))
    x = layers.Input(shape=(3,))
    ours = phalanx.Model(x, outputs(phalanx, x))
    theirs.set_weights(ours.get_weights())
    _compile_both(ours, theirs, kwargs=lambda m: dict(loss=["mse", None, None]))
    args = dict(x=X, y=[Y, Y, Y], batch_size=8, verbose=0)
    _same_history(
        ours.fit(**args, epochs=1, shuffle=False).history,
        theirs.fit(**args, epochs=1, shuffle=False).history,
    )
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_metric_function_returning_a_scalar_as_keras():
    def const(y_true, y_pred):
        return 1.0

    def batch_mean(y_true, y_pred):
        return (y_pred - y_true).mean()

    ours, theirs = _pair()
    _compile_both(ours, theirs, kwargs=lambda m: dict(loss="mse", metrics=[const, batch_mean]))
    args = dict(x=X, y=Y, batch_size=5, verbose=0)  # 4 full batches: no padding
    a = ours.fit(**args, epochs=2, shuffle=False).history
    _same_history(a, theirs.fit(**args, epochs=2, shuffle=False).history)
    assert a["const"] == [1.0, 1.0]
    _same_logs(ours.evaluate(**args, return_dict=True), theirs.evaluate(**args, return_dict=True))
    # a short last batch (20 by 8): its padding makes no extra batch
    assert ours.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)["const"] == 1.0


class _Probe(layers.Layer):
    """Records the type of what its ``call`` sees: a tracer of a compiled step, or not."""

    def call(self, inputs, **kwargs):
        SEEN.append(type(inputs).__name__)
        return inputs


SEEN: list = []


def test_run_eagerly_runs_the_steps_uncompiled_as_keras():
    """Keras's JAX backend runs the step un-jitted: call runs at every step. Same numbers.

    Eager steps are slow (op by op): 2 training steps and 1 prediction batch.
    """
    results = []
    for kwargs in (dict(run_eagerly=True), {}):
        SEEN.clear()
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2), _Probe()])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2, **kwargs)
        history = model.fit(X[:4], Y[:4], batch_size=2, shuffle=False, verbose=0).history
        results.append((history["loss"], model.predict(X[:4], batch_size=4, verbose=0), list(SEEN)))
    (eager, eager_out, eager_seen), (jitted, jitted_out, jitted_seen) = results
    np.testing.assert_allclose(eager, jitted, rtol=1e-6)
    np.testing.assert_allclose(eager_out, jitted_out, rtol=1e-6)
    # each training step's call ran (its values wrapped by the gradient's tracer, as Keras's)
    assert eager_seen.count("LinearizeTracer") == 2
    assert jitted_seen.count("LinearizeTracer") < 2  # compiled: traced once for both steps
    assert model.run_eagerly is False
    model.run_eagerly = True  # settable, as Keras's
    assert model.run_eagerly is True
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)  # Keras: un-jitted too
    assert model.run_eagerly is True


def test_run_eagerly_must_be_a_bool():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    with pytest.raises(ValueError, match="run_eagerly must be True or False, got 'yes'"):
        model.compile(loss="mse", run_eagerly="yes")
