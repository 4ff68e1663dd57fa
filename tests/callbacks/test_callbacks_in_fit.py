"""Callbacks driven by the real fit/evaluate/predict: the hooks they are told, in Keras's order."""

import numpy as np
import pytest
from real_fit import X, Y, fit
from tb_events import read_scalars

from phalanx.callbacks import Callback, LambdaCallback, TensorBoard


class Recorder(Callback):
    """Records every hook it is told, with the batch index where there is one."""

    def __init__(self):
        super().__init__()
        self.events = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            events = object.__getattribute__(self, "events")

            def record(*args, **kwargs):
                batch = args[0] if args and isinstance(args[0], int) else None
                events.append(name if batch is None else (name, batch))

            return record
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("spe", [1, 2])
def test_fit_validation_tells_the_test_hooks_between_training_and_epoch_end(make_model, spe):
    rec = Recorder()
    fit(make_model(spe), [rec], validation=True)
    train = [
        ev
        for k in range(0, 4, spe)
        for ev in (("on_train_batch_begin", k), ("on_train_batch_end", k + spe - 1))
    ]
    test = [
        ev
        for k in range(0, 2, spe)
        for ev in (("on_test_batch_begin", k), ("on_test_batch_end", k + spe - 1))
    ]
    assert rec.events == [
        "on_train_begin",
        ("on_epoch_begin", 0),
        *train,
        "on_test_begin",
        *test,
        "on_test_end",
        ("on_epoch_end", 0),
        "on_train_end",
    ]


def test_tensorboard_writes_evaluation_vs_iterations_during_fit(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path))
    start = model.optimizer.iterations  # the shared model may have trained before
    history = fit(model, [board], epochs=3, validation=True)
    val = read_scalars(str(tmp_path / "validation"))
    assert set(val) == {
        "epoch_loss",
        "epoch_accuracy",
        "evaluation_loss_vs_iterations",
        "evaluation_accuracy_vs_iterations",
    }
    # Validation results against the training steps done (4 per epoch), as Keras.
    assert [s - start for s, _ in val["evaluation_loss_vs_iterations"]] == [4, 8, 12]
    assert [v for _, v in val["evaluation_loss_vs_iterations"]] == pytest.approx(
        history.history["val_loss"]
    )


@pytest.mark.parametrize("verbose", [1, 2])
def test_progress_bar_stays_silent_during_fit_validation(model, capsys, verbose):
    fit(model, epochs=2, validation=True, verbose=verbose)
    out = capsys.readouterr().out
    assert out.count("val_loss") == 2
    assert out.count("Epoch ") == 2
    assert "1/2 " not in out and "2/2 " not in out  # validation's 2 steps draw no bar


@pytest.mark.parametrize("spe", [1, 2])
def test_evaluate_and_predict_tell_their_own_hooks(make_model, spe):
    model = make_model(spe)
    rec = Recorder()
    model.evaluate(X, Y, batch_size=8, callbacks=[rec], verbose=0)
    model.predict(X, batch_size=8, callbacks=[rec], verbose=0)
    test = [
        ev
        for k in range(0, 4, spe)
        for ev in (("on_test_batch_begin", k), ("on_test_batch_end", k + spe - 1))
    ]
    predict = [
        ev
        for k in range(0, 4, spe)
        for ev in (("on_predict_batch_begin", k), ("on_predict_batch_end", k + spe - 1))
    ]
    assert rec.events == [
        "on_test_begin",
        *test,
        "on_test_end",
        "on_predict_begin",
        *predict,
        "on_predict_end",
    ]


def test_predict_batch_end_logs_hold_that_executions_outputs(make_model):
    """As Keras: ``on_predict_batch_end(batch, {"outputs": ...})``, one execution's outputs."""
    model = make_model(2)
    seen = []
    spy = LambdaCallback(on_predict_batch_end=lambda batch, logs: seen.append(logs["outputs"]))
    predictions = model.predict(X, batch_size=8, callbacks=[spy], verbose=0)
    assert [len(outputs) for outputs in seen] == [16, 16]  # 2 steps of 8 examples each
    np.testing.assert_array_equal(np.concatenate(seen), predictions)


def test_stop_training_is_read_after_each_batch(model):
    """As Keras: set before an epoch's first batch (``on_epoch_begin``), it stops after that batch."""
    ends = []

    def stop(epoch, logs):
        model.stop_training = True

    spy = LambdaCallback(on_epoch_begin=stop, on_train_batch_end=lambda b, logs: ends.append(b))
    history = fit(model, [spy], epochs=3)
    assert ends == [0]
    assert history.epoch == [0] and len(history.history["loss"]) == 1
