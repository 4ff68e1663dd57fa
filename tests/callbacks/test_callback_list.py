"""CallbackList dispatches every hook in order; History, TerminateOnNaN and LambdaCallback."""

import doctest
import importlib
import math
import pkgutil

import numpy as np
import pytest
from callback_fakes import fit

import phalanx.callbacks
from phalanx.callbacks import (
    Callback,
    CallbackList,
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


def test_fit_protocol_order_with_fused_steps_and_validation(model):
    rec = Recorder()
    fit(
        model,
        [rec],
        train_logs=[{"loss": 1.0}] * 2,
        val_logs=[None, {"loss": 2.0}],
        steps=5,
        steps_per_execution=2,
    )
    epoch = [
        ("on_train_batch_begin", 0), ("on_train_batch_end", 1),
        ("on_train_batch_begin", 2), ("on_train_batch_end", 3),
        ("on_train_batch_begin", 4), ("on_train_batch_end", 4),
    ]  # fmt: skip
    validation = [
        ("on_test_begin",),
        ("on_test_batch_begin", 0),
        ("on_test_batch_end", 0),
        ("on_test_end",),
    ]
    assert rec.calls == [
        ("on_train_begin",),
        ("on_epoch_begin", 0), *epoch, ("on_epoch_end", 0),
        ("on_epoch_begin", 1), *epoch, *validation, ("on_epoch_end", 1),
        ("on_train_end",),
    ]  # fmt: skip


def test_params_model_and_default_callbacks(model):
    rec = Recorder()
    cbs = CallbackList(
        [[rec], None], add_history=True, add_progbar=True, model=model, epochs=3, steps=7, verbose=2
    )
    assert cbs.callbacks[0] is rec
    assert isinstance(cbs.callbacks[1], History) and isinstance(cbs.callbacks[2], ProgbarLogger)
    assert rec.params == {"epochs": 3, "steps": 7, "verbose": 2}
    assert rec.model is model
    assert model.history is cbs.history


def test_user_history_and_progbar_are_not_duplicated(model):
    history, bar = History(), ProgbarLogger()
    cbs = CallbackList([bar, history], add_history=True, add_progbar=True, model=model)
    assert cbs.callbacks == [bar, history]
    assert cbs.history is history


def test_batch_logs_become_sorted_python_floats(model):
    seen = []
    spy = LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(logs))
    cbs = CallbackList([spy], model=model)
    cbs.on_train_batch_end(0, {"loss": np.float32(0.5), "accuracy": np.array(0.25), "note": "x"})
    assert seen == [{"accuracy": 0.25, "loss": 0.5, "note": "x"}]
    assert list(seen[0]) == ["accuracy", "loss", "note"]
    assert type(seen[0]["loss"]) is float


def test_epoch_logs_are_one_shared_dict(model):
    def add(epoch, logs):
        logs["extra"] = 1.0

    cbs = fit(model, [LambdaCallback(on_epoch_end=add)], train_logs=[{"loss": 1.0}])
    assert cbs.history.history == {"loss": [1.0], "extra": [1.0]}


def test_non_callbacks_are_refused():
    with pytest.raises(
        TypeError,
        match=r"callbacks\[1\] must be a phalanx.callbacks.Callback; received <built-in function print> \(builtin_function_or_method\)",
    ):
        CallbackList([History(), print])


def test_history_records_each_epoch(model):
    cbs = fit(
        model,
        [],
        train_logs=[{"loss": 0.5}, {"loss": 0.25}],
        val_logs=[{"loss": 0.75}, {"loss": 0.5}],
    )
    assert cbs.history.history == {"loss": [0.5, 0.25], "val_loss": [0.75, 0.5]}
    assert cbs.history.epoch == [0, 1]
    assert cbs.history.params == {"epochs": 2, "steps": 4, "verbose": 0}
    assert model.history is cbs.history


def test_terminate_on_nan_stops_inside_the_epoch(model, capsys):
    def batch_logs(epoch, last):
        return {"loss": math.nan if (epoch, last) >= (1, 5) else 1.0}

    cbs = fit(
        model,
        [TerminateOnNaN()],
        train_logs=[{"loss": 1.0}] * 4,
        steps=10,
        steps_per_execution=3,
        batch_logs=batch_logs,
    )
    assert "Batch 5: Invalid loss, terminating training" in capsys.readouterr().out
    assert model.epochs_trained == [0, 1]
    assert cbs.history.epoch == [0, 1]


def test_terminate_on_nan_catches_infinity(model):
    guard = TerminateOnNaN()
    guard.set_model(model)
    guard.on_train_batch_end(0, {"loss": math.inf})
    assert model.stop_training


def test_lambda_callback_hooks(model):
    calls = []
    cb = LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(f"epoch_begin {epoch}"),
        on_train_batch_end=lambda batch, logs: calls.append(f"batch_end {batch}"),
        on_test_end=lambda logs: calls.append(f"test_end {logs['loss']}"),
    )
    fit(
        model,
        [cb],
        train_logs=[{"loss": 1.0}],
        val_logs=[{"loss": 2.0}],
        steps=2,
        steps_per_execution=2,
    )
    assert calls == ["train_begin", "epoch_begin 0", "batch_end 1", "test_end 2.0"]


def test_lambda_callback_refuses_unknown_hooks_and_non_functions():
    with pytest.raises(
        TypeError,
        match=r"on_epoch_ends=\.\.\., which is not a callback hook. Hooks: .*on_epoch_end",
    ):
        LambdaCallback(on_epoch_ends=print)
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
        assert obj.__doc__ and "Example:" in obj.__doc__, name
        for attr, member in vars(obj).items():
            if callable(member) and not attr.startswith("_"):
                assert member.__doc__, f"{name}.{attr}"
