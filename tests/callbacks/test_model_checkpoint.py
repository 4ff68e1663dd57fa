"""ModelCheckpoint saves weights at the right epochs and steps, with Keras's file names."""

import os

import numpy as np
import pytest
from callback_fakes import fit

from phalanx.callbacks import ModelCheckpoint


def test_saves_every_epoch_with_formatted_names(model, tmp_path):
    pattern = str(tmp_path / "ckpt" / "w-{epoch:02d}-{val_loss:.2f}.npz")
    val = [{"loss": v} for v in (0.5, 0.25, 0.125)]
    fit(model, [ModelCheckpoint(pattern)], train_logs=[{"loss": 1.0}] * 3, val_logs=val)
    names = ["w-01-0.50.npz", "w-02-0.25.npz", "w-03-0.12.npz"]
    assert model.saved == [str(tmp_path / "ckpt" / n) for n in names]
    assert sorted(os.listdir(tmp_path / "ckpt")) == names
    with np.load(tmp_path / "ckpt" / "w-02-0.25.npz") as saved:
        assert np.all(saved["arr_0"] == 2)  # the weights at the end of epoch 2 (index 1)


def test_save_best_only_writes_only_on_improvement(model, tmp_path):
    pattern = str(tmp_path / "best-{epoch}.npz")
    val = [{"loss": v} for v in (0.5, 0.6, 0.4, 0.4, 0.3)]
    ckpt = ModelCheckpoint(pattern, save_best_only=True)
    fit(model, [ckpt], train_logs=[{"loss": 1.0}] * 5, val_logs=val)
    assert sorted(os.listdir(tmp_path)) == ["best-1.npz", "best-3.npz", "best-5.npz"]
    assert ckpt.best == 0.3


def test_save_best_only_overwrites_one_file_and_keeps_the_best(model, tmp_path):
    path = tmp_path / "best.npz"
    val = [{"accuracy": a} for a in (0.5, 0.7, 0.6)]
    fit(
        model,
        [ModelCheckpoint(str(path), monitor="val_accuracy", save_best_only=True)],
        train_logs=[{"loss": 1.0}] * 3,
        val_logs=val,
    )
    assert len(model.saved) == 2
    with np.load(path) as saved:
        assert np.all(saved["arr_0"] == 2)  # epoch index 1, the most accurate


def test_initial_value_threshold_must_be_beaten(model, tmp_path):
    ckpt = ModelCheckpoint(
        str(tmp_path / "{epoch}.npz"), save_best_only=True, initial_value_threshold=0.45
    )
    fit(
        model,
        [ckpt],
        train_logs=[{"loss": 1.0}] * 3,
        val_logs=[{"loss": v} for v in (0.5, 0.4, 0.42)],
    )
    assert sorted(os.listdir(tmp_path)) == ["2.npz"]


def test_verbose_messages(model, tmp_path, capsys):
    ckpt = ModelCheckpoint(str(tmp_path / "b.npz"), save_best_only=True, verbose=1)
    fit(model, [ckpt], train_logs=[{"loss": 1.0}] * 2, val_logs=[{"loss": v} for v in (0.5, 0.6)])
    out = capsys.readouterr().out
    assert (
        f"Epoch 1: val_loss improved from inf to 0.50000, saving model to {tmp_path / 'b.npz'}"
        in out
    )
    assert "Epoch 2: val_loss did not improve from 0.50000" in out


def test_missing_monitor_warns_and_saves(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "{epoch}.npz"), save_best_only=True)
    with pytest.warns(
        UserWarning, match=r"'val_loss'.*val_ values need validation data.*Available: loss"
    ):
        fit(model, [ckpt], train_logs=[{"loss": 1.0}] * 2)
    assert sorted(os.listdir(tmp_path)) == ["1.npz", "2.npz"]


@pytest.mark.parametrize(
    ("steps_per_execution", "expected"),
    [
        # 10 steps per epoch, save every 4 steps.
        (1, [4, 8, 12, 16, 20]),
        # Executions end at steps 3, 6, 9, 10 | 13, 16, 19, 20: saves when a multiple of 4 is passed.
        (3, [6, 9, 13, 16, 20]),
        # One execution per epoch: the multiples 4 and 8 are both passed at step 10.
        (10, [10, 20]),
    ],
)
def test_step_based_saving_with_fused_executions(model, tmp_path, steps_per_execution, expected):
    ckpt = ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.npz"), save_freq=4)
    fit(
        model,
        [ckpt],
        train_logs=[{"loss": 1.0}] * 2,
        steps=10,
        steps_per_execution=steps_per_execution,
    )
    # {batch} is the 1-based step within the epoch; turn names back into total steps.
    totals = []
    for path in model.saved:
        epoch, batch = os.path.basename(path)[1:-4].split("-b")
        totals.append((int(epoch) - 1) * 10 + int(batch))
    assert totals == expected


def test_step_based_saving_with_unknown_steps(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "s.npz"), save_freq=5)
    fit(
        model,
        [ckpt],
        train_logs=[{"loss": 1.0}] * 2,
        steps=4,
        steps_per_execution=2,
        steps_known=False,
    )
    assert len(model.saved) == 1  # after 6 of the 8 steps


@pytest.mark.parametrize("save_freq", ["batch", 0, 2.5, True])
def test_bad_save_freq_is_refused(save_freq):
    with pytest.raises(
        ValueError, match=r"save_freq must be 'epoch' or a positive number of steps"
    ):
        ModelCheckpoint("w.npz", save_freq=save_freq)


def test_filepath_naming_a_missing_value_is_explained(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "{val_acc:.2f}.npz"))
    with pytest.raises(
        ValueError, match=r"names 'val_acc', which is not in the logs. Available: epoch, loss"
    ):
        fit(model, [ckpt], train_logs=[{"loss": 1.0}])
