"""Overridden ``train_step``/``test_step``/``predict_step`` in Keras 3's JAX form run in ``fit``.

keras-io's "Customizing what happens in fit() with JAX" examples, ported as a
Keras user writes them (only ``keras.Model`` -> ``phalanx.Model``), each run by
phalanx's ``fit`` and by Keras 3 (JAX backend) from the same initial weights:
the same history, weights and evaluation. Under two replicas the override runs
on the global batch split over them and equals one device. A step in
TensorFlow's form (``train_step(self, data)``) or returning another state is
refused before tracing, saying what to write.
"""

import os

import jax
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import (  # noqa: E402
    CompileArgumentError,
    NotCompiledError,
    StepOverrideError,
)

X = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
SW = np.random.default_rng(1).uniform(0.0, 2.0, size=64).astype(np.float32)


# -- the guide's steps, written once, mixed into a phalanx and a Keras model -------


class GuideTrainStep:
    """The guide's first CustomModel: compute_loss, the optimizer, every model.metrics."""

    def loss_and_updates(self, tv, ntv, x, y, sample_weight=None, training=False):
        y_pred, ntv = self.stateless_call(tv, ntv, x, training=training)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        return loss, (y_pred, ntv)

    def train_step(self, state, data):
        trainable_variables, non_trainable_variables, optimizer_variables, metrics_variables = state
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            (x, y), sample_weight = data, None
        grad_fn = jax.value_and_grad(self.loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables, non_trainable_variables, x, y, sample_weight, training=True
        )
        trainable_variables, optimizer_variables = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        new_metrics_vars, logs = [], {}
        for metric in self.metrics:
            start = len(new_metrics_vars)
            this = metrics_variables[start : start + len(metric.variables)]
            if metric.name == "loss":
                this = metric.stateless_update_state(this, loss)
            else:
                this = metric.stateless_update_state(this, y, y_pred, sample_weight=sample_weight)
            logs[metric.name] = metric.stateless_result(this)
            new_metrics_vars += this
        state = (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            new_metrics_vars,
        )
        return logs, state


class GuideTrackers:
    """The guide's lower-level CustomModel: its own loss and trackers, compile(optimizer) only."""

    def make_trackers(self, lib):
        self.loss_tracker = lib.metrics.Mean(name="loss")
        self.mae_metric = lib.metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = lib.losses.MeanSquaredError()

    def train_step(self, state, data):
        trainable_variables, non_trainable_variables, optimizer_variables, metrics_variables = state
        x, y = data

        def loss_and_updates(tv, ntv):
            y_pred, ntv = self.stateless_call(tv, ntv, x, training=True)
            return self.loss_fn(y, y_pred), (y_pred, ntv)

        grad_fn = jax.value_and_grad(loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables, non_trainable_variables
        )
        trainable_variables, optimizer_variables = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        loss_vars = metrics_variables[: len(self.loss_tracker.variables)]
        mae_vars = metrics_variables[len(self.loss_tracker.variables) :]
        loss_vars = self.loss_tracker.stateless_update_state(loss_vars, loss)
        mae_vars = self.mae_metric.stateless_update_state(mae_vars, y, y_pred)
        logs = {
            self.loss_tracker.name: self.loss_tracker.stateless_result(loss_vars),
            self.mae_metric.name: self.mae_metric.stateless_result(mae_vars),
        }
        state = (
            trainable_variables,
            non_trainable_variables,
            optimizer_variables,
            loss_vars + mae_vars,
        )
        return logs, state

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


class GuideTestStep:
    """The guide's test_step (a dict of every metric's result)."""

    def test_step(self, state, data):
        x, y = data
        trainable_variables, non_trainable_variables, metrics_variables = state
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables, non_trainable_variables, x, training=False
        )
        loss = self.compute_loss(x, y, y_pred)
        new_metrics_vars, logs = [], {}
        for metric in self.metrics:
            start = len(new_metrics_vars)
            this = metrics_variables[start : start + len(metric.variables)]
            if metric.name == "loss":
                this = metric.stateless_update_state(this, loss)
            else:
                this = metric.stateless_update_state(this, y, y_pred)
            logs[metric.name] = metric.stateless_result(this)
            new_metrics_vars += this
        return logs, (trainable_variables, non_trainable_variables, new_metrics_vars)


class ScaledPredict:
    def predict_step(self, state, data):
        trainable_variables, non_trainable_variables = state
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables, non_trainable_variables, data, training=False
        )
        return {"double": 2.0 * y_pred, "plain": y_pred}, non_trainable_variables


def _pair(*steps, trackers=False, dropout=False):
    """The same subclassed model in phalanx and in Keras, with Keras's initial weights."""

    def make(lib, base):
        class Model(*steps, base):
            def __init__(self):
                super().__init__()
                self.hidden = lib.layers.Dense(4, activation="tanh")
                self.drop = lib.layers.Dropout(0.5) if dropout else None
                self.out = lib.layers.Dense(1)
                if trackers:
                    self.make_trackers(lib)

            def call(self, x, training=False):
                h = self.hidden(x)
                if self.drop is not None:
                    h = self.drop(h, training=training)
                return self.out(h)

        return Model()

    keras.utils.set_random_seed(0)
    k = make(keras, keras.Model)
    k(X[:1])
    p = make(phalanx, phalanx.Model)
    p.build((None, 3))
    p.set_weights(k.get_weights())
    return p, k


def _compile(p, k, **kwargs):
    p.compile(optimizer=phalanx.optimizers.Adam(0.05), **kwargs)
    k.compile(optimizer=keras.optimizers.Adam(0.05), **kwargs)


def _assert_same(ph, kh, p, k, rtol=1e-5, atol=1e-6):
    assert set(ph.history) == set(kh.history)
    for name in kh.history:
        np.testing.assert_allclose(ph.history[name], kh.history[name], rtol=rtol, atol=atol)
    for a, b in zip(p.get_weights(), k.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.slow  # Keras's fit and phalanx's, each compiling a full and a short batch
def test_guide_train_step_with_compute_loss_and_metrics_equals_keras():
    batch_size = 20  # a short last batch of 4: the override sees its real rows only
    p, k = _pair(GuideTrainStep)
    _compile(p, k, loss="mse", metrics=["mae"])
    kh = k.fit(X, Y, epochs=2, batch_size=batch_size, shuffle=False, verbose=0)
    ph = p.fit(X, Y, epochs=2, batch_size=batch_size, shuffle=False, verbose=0)
    assert set(ph.history) == {"loss", "mae"}
    _assert_same(ph, kh, p, k)
    ke = k.evaluate(X, Y, batch_size=batch_size, verbose=0, return_dict=True)
    pe = p.evaluate(X, Y, batch_size=batch_size, verbose=0, return_dict=True)
    assert pe == pytest.approx(ke, rel=1e-5)  # the default test_step, in the override's form


@pytest.mark.slow  # Keras's fit and phalanx's
def test_guide_trackers_with_only_an_optimizer_equal_keras():
    p, k = _pair(GuideTrackers, trackers=True)
    p.compile(optimizer=phalanx.optimizers.Adam(0.05))
    k.compile(optimizer=keras.optimizers.Adam(0.05))
    kh = k.fit(X, Y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    ph = p.fit(X, Y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    _assert_same(ph, kh, p, k)


@pytest.mark.slow  # Keras's fit and phalanx's, with validation
def test_guide_sample_weight_and_test_step_equal_keras():
    p, k = _pair(GuideTrainStep, GuideTestStep)
    _compile(p, k, loss="mse", metrics=["mae"])
    val = (X[:32], Y[:32])
    # First without sample weights (data is (x, y)), then with them ((x, y, sample_weight)):
    # each form gets its own program.
    kh = k.fit(X, Y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    ph = p.fit(X, Y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    _assert_same(ph, kh, p, k)
    kw = dict(sample_weight=SW, epochs=2, batch_size=16, shuffle=False, verbose=0)
    kh = k.fit(X, Y, validation_data=val, **kw)
    ph = p.fit(X, Y, validation_data=val, **kw)
    assert {"val_loss", "val_mae"} <= set(ph.history)
    _assert_same(ph, kh, p, k)
    ke = k.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    pe = p.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    assert pe == pytest.approx(ke, rel=1e-5)


def test_overridden_predict_step_equals_keras():
    p, k = _pair(ScaledPredict)
    kp = k.predict(X[:10], batch_size=4, verbose=0)
    pp = p.predict(X[:10], batch_size=4, verbose=0)
    assert set(pp) == {"double", "plain"}
    for name in kp:
        np.testing.assert_allclose(pp[name], kp[name], rtol=1e-6, atol=1e-6)


def _fit_on(strategy, steps_per_execution=1):
    with strategy.scope():
        p, _ = _pair(GuideTrainStep, GuideTestStep, dropout=True)
        p.compile(
            optimizer=phalanx.optimizers.Adam(0.05),
            loss="mse",
            metrics=["mae"],
            steps_per_execution=steps_per_execution,
        )
        h = p.fit(X, Y, sample_weight=SW, epochs=2, batch_size=16, shuffle=False, verbose=0)
        return h.history, p.get_weights(), p.evaluate(X, Y, batch_size=16, verbose=0)


@pytest.mark.slow  # two fits; the point is 2 replicas == 1 device
def test_two_replicas_and_fused_steps_equal_one_device():
    one = _fit_on(phalanx.OneDeviceStrategy(jax.devices()[0]))
    two = _fit_on(phalanx.MirroredStrategy(jax.devices()[:2]), steps_per_execution=3)
    assert one[0].keys() == two[0].keys()
    for name in one[0]:
        np.testing.assert_allclose(one[0][name], two[0][name], rtol=1e-5)
    for a, b in zip(one[1], two[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one[2], two[2], rtol=1e-5)


# -- refused, before tracing, with what to write -------------------------------


class TFStyle(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        raise AssertionError("never reached: refused before tracing")


class WrongReturn(TFStyle):
    def train_step(self, state, data):
        return {"loss": 0.0}


class WrongState(TFStyle):
    def train_step(self, state, data):
        return {}, state[:3]


def test_tensorflow_style_train_step_says_what_form_to_write():
    model = TFStyle()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(StepOverrideError, match=r"TFStyle.train_step\(self, data\) is TensorFlow"):
        model.fit(X, Y, epochs=1, verbose=0)
    with pytest.raises(StepOverrideError, match=r"def train_step\(self, state, data\)"):
        model.train_on_batch(X, Y)


@pytest.mark.parametrize(
    ("cls", "match"),
    [(WrongReturn, r"must return \(logs, state\)"), (WrongState, r"expected the 4-tuple")],
)
def test_a_step_returning_another_form_is_refused(cls, match):
    model = cls()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(StepOverrideError, match=match):
        model.fit(X, Y, epochs=1, verbose=0)


def test_compile_with_only_an_optimizer_says_the_loss_is_missing():
    model = phalanx.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile(optimizer="adam")
    with pytest.raises(NotCompiledError, match=r"fit\(\) needs a loss"):
        model.fit(X, Y, epochs=1, verbose=0)
    assert model.predict(X, verbose=0).shape == (64, 1)


def test_an_optimizer_per_part_must_name_every_part():
    model = _TwoParts()
    model.compile(optimizer={"first": "sgd"}, loss="mse")
    with pytest.raises(
        CompileArgumentError,
        match=r"names the parts \['first'\].*in the parts \['first', 'second'\]",
    ):
        model.fit(X, Y, epochs=1, verbose=0)


class _TwoParts(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.first = layers.Dense(2)
        self.second = layers.Dense(1)

    def call(self, x):
        return self.second(self.first(x))
