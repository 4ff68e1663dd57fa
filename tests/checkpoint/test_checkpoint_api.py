"""``phalanx.checkpoint``: Checkpoint and CheckpointManager, driven through the real ``fit``."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from phalanx.data import Dataset
from phalanx.errors import CheckpointError, CheckpointMismatchError, CheckpointNotFoundError

X = np.random.default_rng(0).normal(size=(96, 6)).astype(np.float32)
Y = (np.abs(X[:, :4]).argmax(1)).astype(np.int32)


def _model(hidden=16, devices=1, spe=1, built=True):
    """The seeds' MLP, smaller; ``built=False``: no Input layer (built by the first fit)."""
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:devices])
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(6,))] * built
            + [
                layers.Dense(hidden, activation="relu"),
                layers.Dropout(0.3),
                layers.Dense(4, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


def _same(a, b):
    for u, v in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


def test_restore_into_a_fresh_model_continues_bit_identical(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    path = Checkpoint(model=model).save(tmp_path / "ckpt")
    assert path.endswith("ckpt-1")
    model.fit(X, Y, batch_size=16, epochs=2, initial_epoch=1, verbose=0)

    fresh = _model(built=False)  # not built: the arrays wait until fit builds it
    Checkpoint(model=fresh).restore(path)
    assert not fresh.built and fresh.optimizer.iterations == 0
    fresh.fit(X, Y, batch_size=16, epochs=2, initial_epoch=1, verbose=0)
    assert fresh.optimizer.iterations == model.optimizer.iterations == 12
    _same(model, fresh)


def test_restore_into_a_built_model_replaces_its_state_at_once(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    path = Checkpoint(model=model).write(tmp_path / "w")
    other = _model()
    other.fit(X[:32], Y[:32], batch_size=16, verbose=0)  # built, another state
    Checkpoint(model=other).read(path)
    assert other.optimizer.iterations == 6
    _same(model, other)


def test_checkpoint_saves_a_dataset_iterator_with_the_model(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    ds = Dataset.from_tensor_slices(np.arange(20)).shuffle(20, seed=1).batch(3)
    it = iter(ds)
    next(it), next(it)
    ckpt = Checkpoint(model=model, optimizer=model.optimizer, iterator=it)
    path = ckpt.save(tmp_path / "ckpt")
    rest = [b.tolist() for b in it]
    it2 = iter(ds)
    restored = _model()
    Checkpoint(model=restored, iterator=it2).restore(path)
    assert [b.tolist() for b in it2] == rest


def test_another_model_is_refused_naming_the_arrays_that_differ(tmp_path):
    model = _model(hidden=16)
    model.fit(X, Y, batch_size=16, verbose=0)
    path = Checkpoint(model=model).save(tmp_path / "ckpt")
    wider = _model(hidden=8)
    wider.build((6,))
    with pytest.raises(CheckpointMismatchError) as error:
        Checkpoint(model=wider).restore(path)
    message = str(error.value)
    assert (
        "params/layers/0/linear/kernel: checkpoint shape (6, 16) float32, model shape (6, 8)"
        in (message)
    )
    assert "opt_state/" in message and "same layers, optimizer and metrics" in message
    # A model restored before it is built is checked when fit builds it.
    lazy = _model(hidden=8, built=False)
    Checkpoint(model=lazy).restore(path)
    with pytest.raises(CheckpointMismatchError, match=r"params/layers/2/linear/kernel"):
        lazy.fit(X, Y, batch_size=16, verbose=0)


def test_manager_keeps_max_to_keep_and_every_nth(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    ckpt = Checkpoint(model=model)
    manager = CheckpointManager(tmp_path, max_to_keep=2, checkpoint=ckpt, keep_every_n_steps=3)
    assert manager.latest_checkpoint is None
    for _ in range(7):
        manager.save()
    names = [p.rsplit("/", 1)[1] for p in manager.checkpoints]
    assert names == ["ckpt_3", "ckpt_6", "ckpt_7"]
    assert manager.latest_checkpoint.endswith("ckpt_7")
    assert latest_checkpoint(tmp_path) == manager.latest_checkpoint
    # A new manager (a restarted process) sees them, and restores the newest.
    again = CheckpointManager(Checkpoint(model=_model()), tmp_path, 2)  # TensorFlow's order
    assert again.restore_or_initialize() == manager.latest_checkpoint
    assert again.checkpoint.save_counter == 7


def test_manager_save_interval_and_init_fn(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    called = []
    manager = CheckpointManager(
        tmp_path,
        checkpoint=Checkpoint(model=model),
        save_interval_steps=10,
        init_fn=lambda: called.append(1),
    )
    assert manager.restore_or_initialize() is None and called == [1]
    assert manager.save(checkpoint_number=5) is not None
    assert manager.save(checkpoint_number=9) is None  # within the interval
    assert manager.save(checkpoint_number=9, check_interval=False) is not None
    assert manager.save(checkpoint_number=20).endswith("ckpt_20")
    with pytest.raises(CheckpointError, match=r"checkpoint_number 20 is not above the newest"):
        manager.save(checkpoint_number=20)


def test_async_save_restores_what_was_saved(tmp_path):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    expected = model.get_weights()
    manager = CheckpointManager(tmp_path, checkpoint=Checkpoint(model=model), async_save=True)
    path = manager.save()
    model.fit(X, Y, batch_size=16, verbose=0)  # donates the state while the save writes
    manager.wait_until_finished()
    manager.close()
    restored = _model()
    Checkpoint(model=restored).restore(path)
    assert restored.optimizer.iterations == 6
    for u, v in zip(restored.get_weights(), expected, strict=True):
        np.testing.assert_array_equal(u, v)


def test_model_checkpoint_saves_the_whole_state(tmp_path):
    model = _model()
    pattern = str(tmp_path / "state-{epoch:02d}")
    saver = phalanx.callbacks.ModelCheckpoint(pattern, save_weights_only=False)
    model.fit(X, Y, batch_size=16, epochs=3, callbacks=[saver], verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state-01", "state-02", "state-03"]
    reference = _model()
    reference.fit(X, Y, batch_size=16, epochs=3, verbose=0)
    resumed = _model()
    Checkpoint(model=resumed).restore(tmp_path / "state-02")
    resumed.fit(X, Y, batch_size=16, epochs=3, initial_epoch=2, verbose=0)
    _same(reference, resumed)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda m: Checkpoint(), CheckpointError, r"needs at least one object"),
        (lambda m: Checkpoint(model=3), CheckpointError, r"got int, which has no state"),
        (
            lambda m: Checkpoint(optimizer=m.optimizer),
            CheckpointError,
            r"without its model.*Checkpoint\(model=model, optimizer=model.optimizer\)",
        ),
        (lambda m: Checkpoint(model=m).save(b"x"), CheckpointError, r"expects a path"),
        (
            lambda m: CheckpointManager("d", max_to_keep=0, checkpoint=Checkpoint(model=m)),
            CheckpointError,
            r"max_to_keep must be a positive int or None, got 0",
        ),
        (lambda m: CheckpointManager("d"), CheckpointError, r"needs checkpoint=Checkpoint"),
    ],
)
def test_bad_arguments_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make(_model())


def test_missing_checkpoint_and_unsaved_model(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match=r"No checkpoint at .*does not exist"):
        Checkpoint(model=_model()).restore(tmp_path / "nothing")
    with pytest.raises(CheckpointError, match=r"has no training state to save yet"):
        Checkpoint(model=_model(built=False)).save(tmp_path / "ckpt")
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    path = Checkpoint(model=model).save(tmp_path / "ckpt")
    with pytest.raises(CheckpointMismatchError, match=r"holds no 'net'.*holds \['model'\]"):
        Checkpoint(net=_model()).restore(path)


def test_backup_and_restore_arguments_are_checked():
    with pytest.raises(ValueError, match=r"save_freq must be 'epoch' or a positive number"):
        phalanx.callbacks.BackupAndRestore("b", save_freq=0)
    with pytest.raises(ValueError, match=r"backup_dir must be a folder"):
        phalanx.callbacks.BackupAndRestore(None)


class _Interrupt(Exception):
    pass


class _StopAt(phalanx.callbacks.Callback):
    """Ends fit (as a crash would) once ``steps`` steps are done."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def on_train_batch_end(self, batch, logs=None):
        if self.model.optimizer.iterations >= self.steps:
            raise _Interrupt


@pytest.mark.parametrize("stop_at, epochs_left", [(4, 3), (5, 3), (6, 2)])
def test_resume_before_a_short_last_batch(tmp_path, stop_at, epochs_left):
    """96 examples in batches of 20 (5 steps an epoch, the last of 16): a resumed epoch may
    begin with its short last batch (4), or have no step left but its end (5)."""
    ds = Dataset.from_tensor_slices((X, Y)).shuffle(96, seed=2).batch(20).map(lambda a, b: (a, b))
    reference = _model(built=False)
    reference.fit(ds, epochs=3, verbose=0)
    model = _model(built=False)
    backup = phalanx.callbacks.BackupAndRestore(tmp_path / "b", save_freq=1)
    with pytest.raises(_Interrupt):
        model.fit(ds, epochs=3, callbacks=[backup, _StopAt(stop_at)], verbose=0)
    resumed = _model(built=False)
    history = resumed.fit(ds, epochs=3, callbacks=[backup], verbose=0)
    assert len(history.history["loss"]) == epochs_left
    _same(reference, resumed)


def test_preemption_handler_saves_and_exits_on_sigterm(tmp_path):
    import os
    import signal

    from phalanx.checkpoint import RESTARTABLE_EXIT_CODE, PreemptionCheckpointHandler

    model = _model()
    manager = CheckpointManager(tmp_path, checkpoint=Checkpoint(model=model))
    exits = []
    previous = signal.getsignal(signal.SIGTERM)
    handler = PreemptionCheckpointHandler(manager, exit_fn=exits.append)
    try:
        assert handler.run(model.train_on_batch, X[:16], Y[:16]) is not None
        assert exits == [] and manager.latest_checkpoint is None
        os.kill(os.getpid(), signal.SIGTERM)  # the handler records it; the process lives on
        handler.run(model.train_on_batch, X[:16], Y[:16])
    finally:
        handler.close()
    assert exits == [RESTARTABLE_EXIT_CODE] == [42]
    assert handler.total_run_calls == 2
    assert manager.latest_checkpoint.endswith("ckpt_1")
    assert signal.getsignal(signal.SIGTERM) is previous
    restored = _model()
    Checkpoint(model=restored).restore(manager.latest_checkpoint)
    assert restored.optimizer.iterations == 2
    with pytest.raises(CheckpointError, match=r"needs a CheckpointManager, or a Checkpoint and"):
        PreemptionCheckpointHandler(Checkpoint(model=model))


def test_async_backups_every_step_then_deleted(tmp_path):
    """Asynchronous backups at every step (old ones deleted in the background): fit ends
    with the same weights, and the backup folder is gone."""
    reference = _model()
    reference.fit(X, Y, batch_size=16, epochs=2, verbose=0)
    model = _model()
    backup = phalanx.callbacks.BackupAndRestore(tmp_path / "b", save_freq=1, async_save=True)
    model.fit(X, Y, batch_size=16, epochs=2, callbacks=[backup], verbose=0)
    assert not (tmp_path / "b").exists()
    _same(reference, model)
