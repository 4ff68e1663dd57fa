"""A ``fit`` that raises releases what phalanx's callbacks hold (``_release_after_error``):
BackupAndRestore's SIGTERM handler and writer thread, TensorBoard's event files. As in Keras,
``on_train_end`` is not called."""

from __future__ import annotations

import signal
import threading

import numpy as np
import pytest

import phalanx
from phalanx import layers

X = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
Y = np.zeros((64, 1), np.float32)


class Boom(RuntimeError):
    pass


class RaiseAt(phalanx.callbacks.Callback):
    def __init__(self, batch):
        super().__init__()
        self.batch = batch
        self.ended = False

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            raise Boom("stop here")

    def on_train_end(self, logs=None):
        self.ended = True


def _model():
    model = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _writer_threads():
    return [t for t in threading.enumerate() if t.name.startswith("phalanx-checkpoint")]


def test_a_failed_fit_releases_the_backup_handlers_and_threads(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    backup = phalanx.callbacks.BackupAndRestore(
        tmp_path / "backup", save_freq=2, async_save=True, save_before_preemption=True
    )
    raiser = RaiseAt(5)
    with pytest.raises(Boom):
        _model().fit(X, Y, batch_size=8, epochs=2, callbacks=[backup, raiser], verbose=0)
    assert not raiser.ended  # Keras does not call on_train_end either
    assert signal.getsignal(signal.SIGTERM) is before
    assert _writer_threads() == []
    # The backups taken before the error are kept: the next fit resumes from them.
    assert phalanx.checkpoint.latest_checkpoint(tmp_path / "backup") is not None


def test_a_failed_fit_closes_the_tensorboard_event_files(tmp_path):
    board = phalanx.callbacks.TensorBoard(tmp_path / "logs", update_freq=1)
    with pytest.raises(Boom):
        _model().fit(X, Y, batch_size=8, epochs=1, callbacks=[board, RaiseAt(3)], verbose=0)
    assert board._writers == {}
    events = list((tmp_path / "logs").rglob("events.out.tfevents.*"))
    assert events and all(e.stat().st_size > 0 for e in events)
