"""Callbacks driven by the real fit/evaluate/predict: the hooks they are told, in Keras's order."""

import numpy as np
import pytest
from callback_fakes import read_scalars

import phalanx
from phalanx import layers
from phalanx.callbacks import Callback, TensorBoard


def _data(n=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


def _model(spe=1):
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(
        optimizer=phalanx.optimizers.SGD(0.1),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=spe,
    )
    return model


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
def test_fit_validation_tells_the_test_hooks_between_training_and_epoch_end(spe):
    x, y = _data()
    rec = Recorder()
    _model(spe).fit(
        x, y, batch_size=8, epochs=1, validation_data=(x[:16], y[:16]), callbacks=[rec], verbose=0
    )
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


def test_tensorboard_writes_evaluation_vs_iterations_during_fit(tmp_path):
    x, y = _data()
    board = TensorBoard(log_dir=str(tmp_path))
    history = _model().fit(
        x,
        y,
        batch_size=8,
        epochs=3,
        validation_data=(x[:16], y[:16]),
        callbacks=[board],
        verbose=0,
    )
    val = read_scalars(str(tmp_path / "validation"))
    assert set(val) == {
        "epoch_loss",
        "epoch_accuracy",
        "evaluation_loss_vs_iterations",
        "evaluation_accuracy_vs_iterations",
    }
    # Validation results against the training steps done (4 per epoch), as Keras.
    assert [s for s, _ in val["evaluation_loss_vs_iterations"]] == [4, 8, 12]
    assert [v for _, v in val["evaluation_loss_vs_iterations"]] == pytest.approx(
        history.history["val_loss"]
    )


@pytest.mark.parametrize("verbose", [1, 2])
def test_progress_bar_stays_silent_during_fit_validation(capsys, verbose):
    x, y = _data()
    _model().fit(x, y, batch_size=8, epochs=2, validation_data=(x[:16], y[:16]), verbose=verbose)
    out = capsys.readouterr().out
    assert out.count("val_loss") == 2
    assert out.count("Epoch ") == 2
    assert "1/2 " not in out and "2/2 " not in out  # validation's 2 steps draw no bar
