"""ModelCheckpoint saves the real weights at the right epochs and steps, with Keras's file names.

Where a test needs chosen ``val_`` values (file names, ``save_best_only``), a
``LambdaCallback`` placed before ``ModelCheckpoint`` (``real_fit.scripted``)
writes them into the real fit's epoch logs before the checkpoint reads them.
Saved files are read back with ``model.load_weights`` and compared with the
weights a callback copied at each epoch end.
"""

import os

import numpy as np
import pytest
from real_fit import X, Y, fit, scripted

import phalanx
from phalanx.callbacks import LambdaCallback, ModelCheckpoint


def _keeper(model, snapshots):
    return LambdaCallback(on_epoch_end=lambda e, logs: snapshots.append(model.get_weights()))


def _loaded(model, path):
    """The weights in ``path``, read by ``model.load_weights``."""
    model.load_weights(str(path))
    return model.get_weights()


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _run(model, ckpt, values, monitor="val_loss", snapshots=None):
    callbacks = [scripted(monitor, values), ckpt]
    if snapshots is not None:
        callbacks.append(_keeper(model, snapshots))
    return fit(model, callbacks, epochs=len(values), validation=True)


def test_saves_every_epoch_with_formatted_names(model, tmp_path):
    pattern = str(tmp_path / "ckpt" / "w-{epoch:02d}-{val_loss:.2f}.npz")
    snapshots = []
    _run(model, ModelCheckpoint(pattern), [0.5, 0.25, 0.125], snapshots=snapshots)
    names = ["w-01-0.50.npz", "w-02-0.25.npz", "w-03-0.12.npz"]
    assert sorted(os.listdir(tmp_path / "ckpt")) == names
    for name, weights in zip(names, snapshots, strict=True):
        assert _same(_loaded(model, tmp_path / "ckpt" / name), weights)
    assert not _same(snapshots[0], snapshots[1])  # each file holds its own epoch's weights


def test_save_best_only_writes_only_on_improvement(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "best-{epoch}.npz"), save_best_only=True)
    _run(model, ckpt, [0.5, 0.6, 0.4, 0.4, 0.3])
    assert sorted(os.listdir(tmp_path)) == ["best-1.npz", "best-3.npz", "best-5.npz"]
    assert ckpt.best == 0.3


def test_save_best_only_overwrites_one_file_and_keeps_the_best(model, tmp_path, capsys):
    path = tmp_path / "best.npz"
    ckpt = ModelCheckpoint(str(path), monitor="val_accuracy", save_best_only=True, verbose=1)
    snapshots = []
    _run(model, ckpt, [0.5, 0.7, 0.6], monitor="val_accuracy", snapshots=snapshots)
    assert capsys.readouterr().out.count("saving model to") == 2
    assert os.listdir(tmp_path) == ["best.npz"]
    assert _same(_loaded(model, path), snapshots[1])  # epoch index 1, the most accurate


def test_initial_value_threshold_must_be_beaten(model, tmp_path):
    ckpt = ModelCheckpoint(
        str(tmp_path / "{epoch}.npz"), save_best_only=True, initial_value_threshold=0.45
    )
    _run(model, ckpt, [0.5, 0.4, 0.42])
    assert sorted(os.listdir(tmp_path)) == ["2.npz"]


def test_verbose_messages(model, tmp_path, capsys):
    ckpt = ModelCheckpoint(str(tmp_path / "b.npz"), save_best_only=True, verbose=1)
    _run(model, ckpt, [0.5, 0.6])
    out = capsys.readouterr().out
    assert (
        f"Epoch 1: val_loss improved from None to 0.50000, saving model to {tmp_path / 'b.npz'}"
        in out
    )
    assert "Epoch 2: val_loss did not improve from 0.50000" in out


def test_missing_monitor_warns_and_saves(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "{epoch}.npz"), save_best_only=True)
    with pytest.warns(
        UserWarning,
        match=r"'val_loss'.*val_ values need validation data.*Available: accuracy, loss",
    ):
        fit(model, [ckpt], epochs=2)  # no validation data
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
def test_step_based_saving_with_fused_executions(
    make_model, tmp_path, steps_per_execution, expected
):
    ckpt = ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.npz"), save_freq=4)
    fit(make_model(steps_per_execution), [ckpt], epochs=2, steps_per_epoch=10)
    # {batch} is the 1-based step within the epoch; turn names back into total steps.
    totals = []
    for name in os.listdir(tmp_path):
        epoch, batch = name[1:-4].split("-b")
        totals.append((int(epoch) - 1) * 10 + int(batch))
    assert sorted(totals) == expected


def test_step_based_saving_mid_epoch_holds_that_steps_weights(make_model, tmp_path):
    """The file saved after step 2 of 4 holds the weights of 2 steps, not of the epoch."""
    model = make_model(2)
    weights = []
    keep = LambdaCallback(
        on_train_batch_end=lambda batch, logs: weights.append(model.get_weights())
    )
    fit(model, [ModelCheckpoint(str(tmp_path / "b{batch}.npz"), save_freq=2), keep])
    assert sorted(os.listdir(tmp_path)) == ["b2.npz", "b4.npz"]
    assert _same(_loaded(model, tmp_path / "b2.npz"), weights[0])
    assert _same(_loaded(model, tmp_path / "b4.npz"), weights[1])
    assert not _same(weights[0], weights[1])


def test_step_based_saving_with_unknown_steps(make_model, tmp_path):
    """A generator dataset has no known length: fit learns the 4 steps of an epoch by running them."""

    def batches():
        for i in range(0, len(X), 8):
            yield X[i : i + 8], Y[i : i + 8]

    spec = phalanx.data.TensorSpec
    dataset = phalanx.data.Dataset.from_generator(
        batches, output_signature=(spec((None, 3), np.float32), spec((None,), np.int32))
    )
    seen = []
    spy = LambdaCallback(on_train_begin=lambda logs: seen.append(spy.params["steps"]))
    ckpt = ModelCheckpoint(str(tmp_path / "s-{epoch}-{batch}.npz"), save_freq=5)
    history = make_model(2).fit(dataset, epochs=2, callbacks=[spy, ckpt], verbose=0)
    assert seen == [None] and history.epoch == [0, 1]
    assert os.listdir(tmp_path) == ["s-2-2.npz"]  # after 6 of the 8 steps


@pytest.mark.parametrize("save_freq", ["batch", 0, 2.5, True])
def test_bad_save_freq_is_refused(save_freq):
    with pytest.raises(
        ValueError, match=r"save_freq must be 'epoch' or a positive number of steps"
    ):
        ModelCheckpoint("w.npz", save_freq=save_freq)


def test_filepath_naming_a_missing_value_is_explained(model, tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "{val_acc:.2f}.npz"))
    with pytest.raises(
        ValueError,
        match=r"names 'val_acc', which is not in the logs. Available: accuracy, epoch, loss",
    ):
        fit(model, [ckpt])
