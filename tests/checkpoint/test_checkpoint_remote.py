"""Checkpoints on fsspec URLs (memory://, file://, s3:// on a local moto server), driven through
the public API: save/restore, managers, BackupAndRestore, and a writer that dies mid-upload."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import jax
import numpy as np
import pytest
from remote_support import s3_env

import phalanx
from phalanx import layers
from phalanx.callbacks import BackupAndRestore, ModelCheckpoint
from phalanx.checkpoint import Checkpoint, CheckpointManager, _remote, latest_checkpoint
from phalanx.errors import CheckpointError, CheckpointNotFoundError
from phalanx.io import gfile
from tests_support import child_xla_flags

X = np.random.default_rng(0).normal(size=(96, 6)).astype(np.float32)
Y = (np.abs(X[:, :4]).argmax(1)).astype(np.int32)


def _model(built=True, spe=1):
    """The seeds' MLP, small, with dropout and Adam (RNG and optimizer state must resume)."""
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:1])
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(6,))] * built
            + [
                layers.Dense(16, activation="relu"),
                layers.Dropout(0.3),
                layers.Dense(4, activation="softmax"),
            ]
        )
        model.compile(
            "adam",
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


def _same(a, b):
    for u, v in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


@pytest.fixture
def memory():
    """A fresh memory:// folder, deleted afterwards."""
    url = f"memory://ckpt-{uuid.uuid4().hex[:8]}"
    yield url
    if gfile.exists(url):
        gfile.rmtree(url)


@pytest.fixture(params=["memory", "file"])
def base(request, tmp_path):
    if request.param == "file":
        return f"file://{tmp_path}"
    return request.getfixturevalue("memory")


def test_checkpoint_round_trip_continues_bit_identical(base):
    model = _model()
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    path = Checkpoint(model=model).save(f"{base}/run/ckpt")
    assert path.endswith("/run/ckpt-1") and Checkpoint(model=model).write(f"{base}/w")
    model.fit(X, Y, batch_size=16, epochs=2, initial_epoch=1, verbose=0)

    for restore in ("restore", "read"):
        fresh = _model(built=False)
        getattr(Checkpoint(model=fresh), restore)(path if restore == "restore" else f"{base}/w")
        fresh.fit(X, Y, batch_size=16, epochs=2, initial_epoch=1, verbose=0)
        assert fresh.optimizer.iterations == 12
        _same(model, fresh)


@pytest.mark.parametrize("async_save", [False, True])
def test_manager_keeps_max_to_keep_and_lists_committed_ones(base, async_save):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    directory = f"{base}/managed"
    manager = CheckpointManager(
        directory,
        max_to_keep=2,
        keep_every_n_steps=3,
        checkpoint=Checkpoint(model=model, async_save=async_save),
        async_save=async_save,
    )
    assert manager.latest_checkpoint is None and latest_checkpoint(directory) is None
    for _ in range(7):
        manager.save()
    manager.wait_until_finished()
    manager.close()
    names = [p.rsplit("/", 1)[1] for p in manager.checkpoints]
    assert names == ["ckpt_3", "ckpt_6", "ckpt_7"]
    kept = gfile.glob(f"{directory}/ckpt_*")
    assert sorted(p.rsplit("/", 1)[1] for p in kept) == names  # the others were deleted
    assert latest_checkpoint(directory) == manager.latest_checkpoint
    restored = _model()
    again = CheckpointManager(directory, 2, checkpoint=Checkpoint(model=restored))
    assert again.restore_or_initialize() == manager.latest_checkpoint
    assert again.checkpoint.save_counter == 7
    _same(model, restored)


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


@pytest.mark.parametrize("async_save", [False, True])
def test_backup_and_restore_resumes_fit_bit_identical_on_memory(memory, async_save):
    reference = _model(built=False)
    reference.fit(X, Y, batch_size=16, epochs=3, verbose=0)
    for _ in range(2):  # twice: the background upload must not change what is resumed
        backup = BackupAndRestore(f"{memory}/backup", save_freq=4, async_save=async_save)
        with pytest.raises(_Interrupt):
            _model(built=False).fit(
                X, Y, batch_size=16, epochs=3, callbacks=[backup, _StopAt(9)], verbose=0
            )
        # The failed fit released the backup's writer, after its upload finished.
        assert backup._manager is None
        assert latest_checkpoint(f"{memory}/backup").endswith("ckpt_2")  # at steps 4 and 8
        resumed = _model(built=False)
        history = resumed.fit(X, Y, batch_size=16, epochs=3, callbacks=[backup], verbose=0)
        assert len(history.history["loss"]) == 2  # epoch 2 (from its 3rd of 6 steps) and 3
        _same(reference, resumed)
        assert not gfile.exists(f"{memory}/backup")  # delete_checkpoint


def test_model_checkpoint_saves_the_whole_state_to_a_url(memory):
    model = _model()
    model.fit(
        X,
        Y,
        batch_size=16,
        epochs=2,
        verbose=0,
        callbacks=[ModelCheckpoint(memory + "/e{epoch}", save_weights_only=False)],
    )
    restored = _model()
    Checkpoint(model=restored).restore(f"{memory}/e2")
    _same(model, restored)
    assert restored.optimizer.iterations == 12


def _dies_after(monkeypatch, files):
    """fsspec's put uploads ``files`` files of the next checkpoint, then the writer dies."""
    import fsspec.implementations.memory as memfs

    original = memfs.MemoryFileSystem.put

    def put(self, sources, targets, **kwargs):
        original(self, sources[:files], targets[:files], **kwargs)
        raise OSError("connection reset (simulated crash mid-upload)")

    monkeypatch.setattr(memfs.MemoryFileSystem, "put", put)


@pytest.mark.parametrize("async_save", [False, True])
def test_a_crash_mid_upload_leaves_the_previous_checkpoint_the_one_restored(
    memory, monkeypatch, async_save
):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    saved = model.get_weights()
    directory = f"{memory}/run"
    manager = CheckpointManager(
        directory,
        max_to_keep=1,
        checkpoint=Checkpoint(model=model, async_save=async_save),
        async_save=async_save,
    )
    first = manager.save()
    manager.wait_until_finished()
    model.fit(X, Y, batch_size=16, verbose=0)

    with monkeypatch.context() as patch:
        _dies_after(patch, 2)
        with pytest.raises(CheckpointError, match="connection reset"):
            manager.save()
            manager.wait_until_finished()  # async: the upload's error is raised here
    partial = f"{directory}/ckpt_2"
    # Its file uploaded, its marker never written: never committed.
    assert gfile.glob(f"{partial}/*") == [f"{partial}/state.phalanx"]
    assert latest_checkpoint(directory) == first and manager.checkpoints == [first]
    with pytest.raises(CheckpointNotFoundError, match="marker .* is missing"):
        Checkpoint(model=_model()).restore(partial)

    restored = _model()
    restarted = CheckpointManager(directory, 1, checkpoint=Checkpoint(model=restored))
    assert restarted.restore_or_initialize() == first
    for u, v in zip(restored.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(u, v)
    # The next save commits; max_to_keep deletes the first, and the leftover goes with it
    # (a save that failed at once did not move the counter: its number is written again).
    newest = manager.save()
    manager.close()
    number = 3 if async_save else 2
    assert newest == f"{directory}/ckpt_{number}" and latest_checkpoint(directory) == newest
    assert gfile.glob(f"{directory}/*") == [newest]


def test_checkpoint_and_manager_on_s3(s3):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    path = Checkpoint(model=model).save(f"{s3}/ckpt/one")
    assert path == f"{s3}/ckpt/one-1" and gfile.exists(f"{path}/{_remote.MARKER}")
    restored = _model()
    Checkpoint(model=restored).restore(path)
    _same(model, restored)

    manager = CheckpointManager(
        f"{s3}/managed", 2, checkpoint=Checkpoint(model=model, async_save=True), async_save=True
    )
    for _ in range(3):
        model.fit(X, Y, batch_size=16, verbose=0)
        manager.save()
    manager.close()
    assert [p.rsplit("/", 1)[1] for p in manager.checkpoints] == ["ckpt_2", "ckpt_3"]
    assert latest_checkpoint(f"{s3}/managed") == f"{s3}/managed/ckpt_3"
    again = CheckpointManager(f"{s3}/managed", 2, checkpoint=Checkpoint(model=restored))
    assert again.restore_or_initialize() == f"{s3}/managed/ckpt_3"
    _same(model, restored)


class _SaveEachExecution(phalanx.callbacks.Callback):
    """Saves asynchronously after every execution and records the weights saved."""

    def __init__(self, manager):
        super().__init__()
        self.manager, self.saved = manager, {}

    def on_train_batch_end(self, batch, logs=None):
        self.saved[self.manager.save()] = self.model.get_weights()


@pytest.mark.parametrize(
    "repeat, split",
    [(0, False), (1, False), (0, True)],  # twice: the copy races the next execution
)
def test_async_saves_at_every_execution_hold_the_weights_of_their_step(
    base, repeat, split, monkeypatch
):
    """The next execution donates the state while the background thread writes the copy.

    ``split``: as when arrays are split over processes (no whole host copy), orbax's
    AsyncCheckpointer copies them and phalanx's thread waits for it (then uploads)."""
    from phalanx.checkpoint import _background

    if split:
        monkeypatch.setattr(_background, "host_arrays", lambda arrays: None)
    model = _model(spe=2)
    manager = CheckpointManager(
        f"{base}/every-{repeat}",
        max_to_keep=None,
        checkpoint=Checkpoint(model=model, async_save=True),
        async_save=True,
    )
    saver = _SaveEachExecution(manager)
    model.fit(X, Y, batch_size=16, epochs=2, callbacks=[saver], verbose=0)
    manager.close()
    assert len(saver.saved) == 6 and manager.checkpoints == list(saver.saved)
    for path, weights in saver.saved.items():
        restored = _model(spe=2)
        Checkpoint(model=restored).restore(path)
        for u, v in zip(restored.get_weights(), weights, strict=True):
            np.testing.assert_array_equal(u, v)


def test_an_async_save_that_fails_raises_at_the_next_wait(tmp_path, monkeypatch):
    model = _model()
    model.fit(X, Y, batch_size=16, verbose=0)
    (tmp_path / "a-file").write_text("not a folder")
    checkpoint = Checkpoint(model=model, async_save=True)
    with pytest.raises(CheckpointError, match="is a file, not a folder"):  # known at once
        checkpoint.save(tmp_path / "a-file" / "ckpt")

    def full(fd):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full)
        checkpoint.save(tmp_path / "ckpt")  # returns: the write runs in the background
        with pytest.raises(CheckpointError, match="ckpt-1' was not written .*No space left"):
            checkpoint.wait_until_finished()
    checkpoint.wait_until_finished()  # the error was raised once
    assert checkpoint.save(tmp_path / "ok") == f"{tmp_path}/ok-2"
    checkpoint.close()
    assert latest_checkpoint(tmp_path) is None and (tmp_path / "ok-2").is_dir()


def _launch_two(script_args, env, timeout=240):
    import subprocess

    argv = [sys.executable, "-m", "phalanx.cli", "launch", "-n", "2", "--devices-per-process"]
    argv += ["1", "--timeout", "150", "--grace", "2", "--max-restarts", "1", "--"]
    argv += [str(Path(__file__).parent / "scripts" / "remote_backup.py"), *map(str, script_args)]
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "TF_CONFIG"))}
    keep.update(JAX_PLATFORMS="cpu", XLA_FLAGS=child_xla_flags(), **env)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=keep)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _results(out):
    results = []
    for p in range(2):
        with np.load(out / f"{p}.npz") as f:
            results.append(dict(f))
    return results


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_processes_back_up_to_s3_asynchronously_and_resume_after_a_kill(s3, tmp_path):
    """2 processes share the staging folder (process 0 writes and uploads the replicated
    variables, process 1 agrees), and commit once; process 1 is SIGKILLed mid-epoch, the launcher restarts the job, and it resumes from s3:// to end
    bit-identical to an uninterrupted run."""
    env = {**s3_env(), "PHALANX_CHECKPOINT_STAGING": str(tmp_path / "staging")}
    (tmp_path / "staging").mkdir()
    runs = {}
    for name, extra in (("ref", []), ("kill", ["--die-at-step", 19])):
        out = tmp_path / name
        out.mkdir()
        done = _launch_two([out, f"{s3}/mp-{name}/backup", *extra], env)
        runs[name] = (_results(out), done)
        assert not gfile.exists(f"{s3}/mp-{name}/backup")  # deleted at the end of fit
    (ref, _), (kill, done) = runs["ref"], runs["kill"]
    assert "restarting it (1 of 1)" in done.stderr and "resuming from s3://" in done.stdout
    assert [int(r["first_step"]) for r in ref] == [0, 0]
    assert all(0 < int(r["first_step"]) <= 19 for r in kill)
    for got in ref[1:] + kill:
        assert int(got["steps"]) == 36
        for key in [k for k in ref[0] if k.startswith("weight_")]:
            np.testing.assert_array_equal(got[key], ref[0][key], err_msg=key)
    # The killed process's staging folders may remain; every committed save removed its own.
    assert len(os.listdir(tmp_path / "staging")) <= 2
