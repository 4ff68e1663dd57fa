"""Monitor callbacks, TerminateOnNaN and LambdaCallback against Keras 3's own (JAX backend).

Keras 3's callback is driven by hand with the same sequence of watched
values (its hooks take a stand-in model: a ``stop_training`` flag and an
optimizer's rate); phalanx's runs in the real ``fit``, the value scripted
into the epoch logs (``real_fit.scripted``). Both must agree on the epochs
run, ``best``, ``wait``, ``stopped_epoch`` and the rates, second ``fit``
included (``on_train_begin`` resets what Keras resets).
"""

import math
import os
import types
import warnings

import numpy as np
import pytest
from real_fit import BATCH, LEARNING_RATE, X, Y, build_model, fit, scripted

import phalanx
from phalanx import callbacks, layers

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")


def _keras_run(callback, monitor, runs):
    """Drives Keras's ``callback`` through ``runs`` (one list of values per ``fit``).

    Returns, per run, the epochs run and ``(best, wait, stopped_epoch)`` after it,
    and the learning rates at each epoch end.
    """
    optimizer = types.SimpleNamespace(learning_rate=LEARNING_RATE)
    model = types.SimpleNamespace(stop_training=False, optimizer=optimizer)
    callback.set_model(model)
    results = []
    for values in runs:
        model.stop_training = False
        callback.on_train_begin()
        epochs, rates = [], []
        for epoch, value in enumerate(values):
            callback.on_epoch_begin(epoch)
            logs = {monitor: value}
            callback.on_epoch_end(epoch, logs)
            epochs.append(epoch)
            rates.append(logs.get("learning_rate"))
            if model.stop_training:
                break
        results.append((epochs, _state(callback), rates))
    return results


def _state(callback):
    return (
        callback.best,
        getattr(callback, "wait", None),
        getattr(callback, "stopped_epoch", None),
    )


def _phalanx_run(callback, monitor, runs, model):
    results = []
    for values in runs:
        history = fit(model, [scripted(monitor, values), callback], epochs=len(values))
        results.append((history.epoch, _state(callback), history.history.get("learning_rate")))
    return results


def _same(ours, theirs):
    for (our_epochs, our_state, our_rates), (epochs, state, rates) in zip(
        ours, theirs, strict=True
    ):
        assert our_epochs == epochs
        for a, b in zip(our_state, state, strict=True):
            if isinstance(b, float) and math.isnan(b):
                assert math.isnan(a)
            else:
                assert a == pytest.approx(b)
        if our_rates is not None:
            assert our_rates == pytest.approx(rates)


EARLY_STOPPING_CASES = [
    (dict(patience=2), [[0.9, 0.8, 0.85, 0.81, 0.7, 0.6], [0.95, 0.9, 0.99, 0.99]]),
    (dict(patience=0), [[float("nan"), 0.5, 0.6, 0.4], [0.5, 0.6, 0.4]]),
    (dict(patience=3, baseline=0.5), [[0.9, 0.8, 0.85, 0.7, 0.6], [0.4, 0.45, 0.3]]),
    (dict(patience=1, min_delta=0.05), [[1.0, 0.97, 0.96, 0.5]]),
    (dict(patience=0, start_from_epoch=2), [[0.5, 0.9, 0.95, 0.9, 0.99]]),
    (dict(patience=1, mode="max"), [[0.5, 0.6, 0.7, 0.65, 0.66], [0.1, 0.2]]),
]


@pytest.mark.parametrize(("kwargs", "runs"), EARLY_STOPPING_CASES)
def test_early_stopping_as_keras_across_two_fits(model, kwargs, runs):
    ours = callbacks.EarlyStopping(monitor="val_loss", **kwargs)
    theirs = keras.callbacks.EarlyStopping(monitor="val_loss", **kwargs)
    _same(_phalanx_run(ours, "val_loss", runs, model), _keras_run(theirs, "val_loss", runs))


def test_early_stopping_best_is_reset_by_on_train_begin(model):
    ours = callbacks.EarlyStopping(monitor="val_loss")
    theirs = keras.callbacks.EarlyStopping(monitor="val_loss")
    _keras_run(theirs, "val_loss", [[0.1, 0.2]])
    _phalanx_run(ours, "val_loss", [[0.1, 0.2]], model)
    assert ours.best == theirs.best == pytest.approx(0.1)
    ours.on_train_begin()
    theirs.on_train_begin()
    assert ours.best is None and theirs.best is None


REDUCE_CASES = [
    (dict(factor=0.5, patience=2), [[1.0] * 6, [1.0, 2.0, 2.0, 2.0]]),
    (dict(factor=0.5, patience=2, cooldown=2), [[1.0] * 8]),
    (dict(factor=0.1, patience=2, min_delta=0.01), [[1.0, 1.0, 0.5, 0.499, 0.498, 0.2]]),
    (dict(factor=0.5, patience=0), [[float("nan"), 0.5, 0.5]]),
]


@pytest.mark.parametrize(("kwargs", "runs"), REDUCE_CASES)
def test_reduce_lr_on_plateau_as_keras_across_two_fits(model, kwargs, runs):
    ours = callbacks.ReduceLROnPlateau(monitor="val_loss", **kwargs)
    theirs = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", **kwargs)
    _same(_phalanx_run(ours, "val_loss", runs, model), _keras_run(theirs, "val_loss", runs))
    ours.on_train_begin()
    theirs.on_train_begin()
    assert ours.best is None and theirs.best is None


def test_model_checkpoint_keeps_its_best_across_fits_as_keras(model, tmp_path):
    """Keras 3's ModelCheckpoint has no on_train_begin: a second fit must beat the first's best."""
    path = str(tmp_path / "w-{epoch}.weights.h5")
    ours = callbacks.ModelCheckpoint(path, save_best_only=True, save_weights_only=True)
    theirs = keras.callbacks.ModelCheckpoint(path, save_best_only=True, save_weights_only=True)
    runs = [[0.5, 0.4], [0.6, 0.3]]
    saved = []
    stand_in = types.SimpleNamespace(
        stop_training=False, save_weights=lambda p, overwrite=True: saved.append(p)
    )
    theirs.set_model(stand_in)
    for values in runs:
        for epoch, value in enumerate(values):
            theirs.on_epoch_begin(epoch)
            theirs.on_epoch_end(epoch, {"val_loss": value})
    keras_saved = [os.path.basename(p) for p in saved]
    for values in runs:
        fit(model, [scripted("val_loss", values), ours], epochs=len(values))
    assert (
        sorted(os.listdir(tmp_path))
        == sorted(set(keras_saved))
        == ["w-1.weights.h5", "w-2.weights.h5"]
    )
    assert keras_saved == ["w-1.weights.h5", "w-2.weights.h5", "w-2.weights.h5"]
    assert ours.best == theirs.best == pytest.approx(0.3)


@pytest.mark.parametrize("name", ["ModelCheckpoint", "EarlyStopping", "ReduceLROnPlateau"])
def test_unknown_mode_warns_and_falls_back_to_auto_as_keras(name, tmp_path):
    args = (str(tmp_path / "m.keras"),) if name == "ModelCheckpoint" else ()
    with pytest.warns(
        UserWarning, match=f"{name} mode 'unknown' is unknown, fallback to auto mode"
    ):
        getattr(keras.callbacks, name)(*args, mode="unknown")
    with pytest.warns(
        UserWarning, match=f"{name} mode 'unknown' is unknown, fallback to auto mode"
    ):
        ours = getattr(callbacks, name)(*args, mode="unknown")
    assert ours.mode == "auto"


def test_unknown_mode_model_checkpoint_saves_the_best_by_auto_mode(model, tmp_path):
    path = str(tmp_path / "w-{epoch}.weights.h5")
    with pytest.warns(UserWarning, match="fallback to auto mode"):
        ours = callbacks.ModelCheckpoint(path, save_best_only=True, mode="unknown")
    fit(model, [scripted("val_loss", [0.5, 0.6, 0.4]), ours], epochs=3)
    assert sorted(os.listdir(tmp_path)) == ["w-1.weights.h5", "w-3.weights.h5"]


def _inf_model():
    """Keras's test: a Dense(1) whose targets are inf, so the first loss is inf."""
    model = phalanx.Sequential([layers.Input(shape=(1,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model, np.array([[1.0], [2.0]], np.float32), np.array([[np.inf], [np.inf]], np.float32)


def test_terminate_on_nan_graceful_stop_as_keras():
    model, x, y = _inf_model()
    history = model.fit(
        x, y, epochs=2, batch_size=1, callbacks=[callbacks.TerminateOnNaN()], verbose=0
    )
    assert len(history.history["loss"]) == 1
    assert math.isinf(history.history["loss"][0])


def test_terminate_on_nan_raise_error_raises_and_skips_on_train_end():
    model, x, y = _inf_model()
    ended = []
    tracker = callbacks.LambdaCallback(on_train_end=lambda logs: ended.append(True))
    with pytest.raises(
        RuntimeError, match="NaN or Inf loss encountered at batch 0. Loss value: inf"
    ):
        model.fit(
            x,
            y,
            epochs=1,
            batch_size=1,
            callbacks=[tracker, callbacks.TerminateOnNaN(raise_error=True)],
            verbose=0,
        )
    assert ended == []
    theirs = keras.callbacks.TerminateOnNaN(raise_error=True)
    with pytest.raises(
        RuntimeError, match="NaN or Inf loss encountered at batch 0. Loss value: inf"
    ):
        theirs.on_train_batch_end(0, {"loss": math.inf})


def test_terminate_on_nan_raise_error_must_be_a_bool():
    with pytest.raises(ValueError, match=r"raise_error must be True or False; received 'yes'"):
        callbacks.TerminateOnNaN(raise_error="yes")


def test_lambda_callback_keeps_other_keywords_as_attributes_as_keras():
    def custom(logs):
        return "custom"

    ours, theirs = (
        callbacks.LambdaCallback(custom_method=custom),
        keras.callbacks.LambdaCallback(custom_method=custom),
    )
    assert ours.custom_method is theirs.custom_method is custom


def test_lambda_callback_custom_hooks_run_in_evaluate_and_predict():
    calls = []
    cb = callbacks.LambdaCallback(
        on_test_begin=lambda logs: calls.append("test_begin"),
        on_test_batch_end=lambda batch, logs: calls.append(f"test_batch_end {batch}"),
        on_predict_begin=lambda logs: calls.append("predict_begin"),
        on_predict_end=lambda logs: calls.append("predict_end"),
    )
    model = build_model()
    model.evaluate(X[:16], Y[:16], batch_size=BATCH, callbacks=[cb], verbose=0)
    model.predict(X[:16], batch_size=BATCH, callbacks=[cb], verbose=0)
    assert calls == [
        "test_begin",
        "test_batch_end 0",
        "test_batch_end 1",
        "predict_begin",
        "predict_end",
    ]


def test_lambda_callback_warns_on_a_name_like_a_hook():
    with pytest.warns(UserWarning, match=r"on_epoch_ends=\.\.\., which is no callback hook"):
        cb = callbacks.LambdaCallback(on_epoch_ends=print)
    assert cb.on_epoch_ends is print
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        callbacks.LambdaCallback(on_test_end=print)


def test_learning_rate_scheduler_on_a_model_built_by_fit_as_keras():
    """A Sequential without Input is built by fit after on_epoch_begin set the first rate."""
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
    y = x[:, :1] * 3.0
    ours = phalanx.Sequential([layers.Dense(1, kernel_initializer="ones")])
    theirs = keras.Sequential([keras.layers.Dense(1, kernel_initializer="ones")])
    runs = []
    for lib, model in ((phalanx, ours), (keras, theirs)):
        model.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
        schedule = lib.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
        history = model.fit(
            x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=[schedule]
        )
        runs.append(history.history)
    assert runs[0]["learning_rate"] == pytest.approx([0.05, 0.025, 0.0125])
    for key in runs[1]:
        np.testing.assert_allclose(runs[0][key], runs[1][key], rtol=1e-5, err_msg=key)
    assert float(ours.optimizer.learning_rate) == pytest.approx(0.0125)
