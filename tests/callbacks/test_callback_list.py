"""CallbackList dispatches every hook in order; History, TerminateOnNaN and LambdaCallback.

Every test runs the real ``Model.fit`` (``real_fit``), except the one that
calls ``CallbackList`` as a custom training loop does.
"""

import doctest
import importlib
import io
import math
import pkgutil
import re

import numpy as np
import pytest
from real_fit import VAL, X, Y, fit
from rich.console import Console

import phalanx
import phalanx.callbacks
from phalanx import layers
from phalanx.callbacks import (
    Callback,
    CallbackList,
    EarlyStopping,
    History,
    LambdaCallback,
    ProgbarLogger,
    TerminateOnNaN,
)


class Recorder(Callback):
    """Records every hook call as (hook, argument)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if name.startswith("on_") and not name.startswith("on_batch"):
            calls = super().__getattribute__("calls")

            def record(*args, **kwargs):
                calls.append((name, *args[:1]) if args and isinstance(args[0], int) else (name,))
                return attr(*args, **kwargs)

            return record
        return attr


def test_fit_protocol_order_with_fused_steps_and_validation(make_model):
    rec = Recorder()
    # 5 steps in executions of 2 (the last one short); validation after the second epoch only.
    fit(
        make_model(2),
        [rec],
        epochs=2,
        steps_per_epoch=5,
        validation=True,
        validation_freq=2,
    )
    epoch = [
        ("on_train_batch_begin", 0), ("on_train_batch_end", 1),
        ("on_train_batch_begin", 2), ("on_train_batch_end", 3),
        ("on_train_batch_begin", 4), ("on_train_batch_end", 5),  # Keras 3: 4 + 2 - 1
    ]  # fmt: skip
    validation = [  # VAL is 2 steps: one execution of 2
        ("on_test_begin",),
        ("on_test_batch_begin", 0),
        ("on_test_batch_end", 1),
        ("on_test_end",),
    ]
    assert rec.calls == [
        ("on_train_begin",),
        ("on_epoch_begin", 0), *epoch, ("on_epoch_end", 0),
        ("on_epoch_begin", 1), *epoch, *validation, ("on_epoch_end", 1),
        ("on_train_end",),
    ]  # fmt: skip


def test_params_model_and_default_callbacks(model, capsys):
    rec = Recorder()
    history = fit(model, [[rec], None], epochs=3, steps_per_epoch=7, verbose=2)
    assert rec.params == {"epochs": 3, "steps": 7, "verbose": 2}
    assert rec.model is model
    # fit added a History (returned, and model.history) and a ProgbarLogger (verbose=2 lines).
    assert isinstance(history, History) and model.history is history
    assert capsys.readouterr().out.count("7/7 - ") == 3


def test_user_history_and_progbar_are_not_duplicated(model, capsys):
    out = io.StringIO()
    history, bar = History(), ProgbarLogger(console=Console(file=out, force_terminal=False))
    returned = fit(model, [bar, history], epochs=2, verbose=1)
    assert returned is history and model.history is history
    assert history.epoch == [0, 1]
    assert out.getvalue().count("4/4 ") == 2  # the user's bar drew each epoch once
    assert capsys.readouterr().out == ""  # and fit added no second bar


def test_batch_logs_become_sorted_python_floats(model):
    seen = []
    spy = LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(logs))
    fit(model, [spy], steps_per_epoch=2)
    assert len(seen) == 2
    for logs in seen:
        assert list(logs) == ["accuracy", "loss"]  # fit logs the loss first; Keras sorts
        assert all(type(v) is float for v in logs.values())


def test_a_custom_loop_gets_batch_logs_cleaned():
    """A custom training loop calls ``CallbackList`` itself, with numpy values."""
    seen = []
    spy = LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(logs))
    cbs = CallbackList([spy], epochs=1, steps=1)
    cbs.on_train_batch_end(0, {"loss": np.float32(0.5), "accuracy": np.array(0.25), "note": "x"})
    assert seen == [{"accuracy": 0.25, "loss": 0.5, "note": "x"}]
    assert list(seen[0]) == ["accuracy", "loss", "note"]
    assert type(seen[0]["loss"]) is float


def test_epoch_logs_are_one_shared_dict(model):
    def add(epoch, logs):
        logs["extra"] = 1.0

    history = fit(model, [LambdaCallback(on_epoch_end=add)])
    assert history.history["extra"] == [1.0]  # History comes after the callback that added it


def test_non_callbacks_are_refused(model):
    with pytest.raises(
        TypeError,
        match=r"callbacks\[1\] must be a phalanx.callbacks.Callback; received <built-in function print> \(builtin_function_or_method\)",
    ):
        fit(model, [History(), print])


def test_fit_takes_one_callback_without_a_list(model):
    """As Keras 3 (it flattens ``callbacks``): ``fit(callbacks=EarlyStopping(...))``."""
    stopper = EarlyStopping(monitor="loss", patience=0)
    history = model.fit(X, Y, batch_size=8, epochs=2, callbacks=stopper, verbose=0)
    assert stopper.model is model and history.epoch == [0, 1]


@pytest.mark.parametrize(("callbacks", "shown"), [("abc", "'abc' (str)"), (5, "5 (int)")])
def test_fit_refuses_what_is_not_a_callback(model, callbacks, shown):
    with pytest.raises(
        TypeError,
        match=rf"callbacks\[0\] must be a phalanx.callbacks.Callback; received {re.escape(shown)}",
    ):
        model.fit(X, Y, batch_size=8, callbacks=callbacks, verbose=0)


def test_history_records_each_epoch(model):
    history = fit(model, epochs=2, validation=True)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert all(len(v) == 2 for v in history.history.values())
    assert history.epoch == [0, 1]
    assert history.params == {"epochs": 2, "steps": 4, "verbose": 0}
    assert model.history is history
    # The last epoch's validation values are the trained model's evaluation.
    final = model.evaluate(*VAL, batch_size=8, verbose=0, return_dict=True)
    assert history.history["val_loss"][-1] == pytest.approx(final["loss"])
    assert history.history["val_accuracy"][-1] == pytest.approx(final["accuracy"])


def test_terminate_on_nan_stops_inside_the_epoch(make_model, capsys):
    """The weights turn NaN at step 3 of epoch 1 (``set_weights`` in ``on_train_batch_begin``).

    With executions of 3 steps the execution of steps 3-5 is the first whose
    loss is NaN: training stops after it, and the epoch ends there.
    """
    model = make_model(3)
    ends = []

    def poison(batch, logs):
        if len(ends) >= 4 and batch == 3:  # epoch 0 ended at 2, 5, 8, 11 (Keras: 9 + 3 - 1)
            model.set_weights([np.full_like(w, np.nan) for w in model.get_weights()])

    cbs = [
        LambdaCallback(on_train_batch_begin=poison),
        LambdaCallback(on_train_batch_end=lambda batch, logs: ends.append(batch)),
        TerminateOnNaN(),
    ]
    history = fit(model, cbs, epochs=4, steps_per_epoch=10)
    assert "Batch 5: Invalid loss, terminating training" in capsys.readouterr().out
    assert ends == [2, 5, 8, 11, 2, 5]
    assert history.epoch == [0, 1]
    assert math.isnan(history.history["loss"][1])


def test_terminate_on_nan_catches_infinity(capsys):
    """A linear model whose weights are near float32's largest predicts inf: the loss is inf."""
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.set_weights([np.full_like(w, 3e38) for w in model.get_weights()])
    history = model.fit(
        np.abs(X),
        Y.astype(np.float32),
        batch_size=8,
        epochs=2,
        callbacks=[TerminateOnNaN()],
        verbose=0,
    )
    assert "Batch 0: Invalid loss, terminating training" in capsys.readouterr().out
    assert history.history["loss"] == [math.inf]


def test_lambda_callback_hooks(make_model):
    calls = []
    cb = LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(f"epoch_begin {epoch}"),
        on_train_batch_end=lambda batch, logs: calls.append(f"batch_end {batch}"),
        on_test_end=lambda logs: calls.append(f"test_end {logs['loss']}"),
    )
    history = fit(make_model(2), [cb], steps_per_epoch=2, validation=True)
    val_loss = history.history["val_loss"][0]
    assert calls == ["train_begin", "epoch_begin 0", "batch_end 1", f"test_end {val_loss}"]


def test_lambda_callback_refuses_non_functions():
    with pytest.raises(TypeError, match=r"on_epoch_end must be a function; received 3 \(int\)"):
        LambdaCallback(on_epoch_end=3)


def _callback_modules():
    for info in pkgutil.iter_modules(phalanx.callbacks.__path__, "phalanx.callbacks."):
        yield importlib.import_module(info.name)


@pytest.mark.parametrize("module", list(_callback_modules()), ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_every_public_name_is_documented():
    for name in phalanx.callbacks.__all__:
        obj = getattr(phalanx.callbacks, name)
        assert obj.__doc__ and "Examples:" in obj.__doc__, name
        for attr, member in vars(obj).items():
            if callable(member) and not attr.startswith("_"):
                assert member.__doc__, f"{name}.{attr}"
