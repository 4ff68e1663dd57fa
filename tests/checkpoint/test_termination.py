"""Termination notices beyond SIGTERM: ``TerminationConfig``, GCE's metadata server, Slurm's SIGUSR1.

In-process: a custom ``termination_watcher_fn`` makes ``PreemptionCheckpointHandler``
save at the step boundary after it fires and exit through ``exit_fn``; a grace
period saves at once, trains on and exits near its end; ``save_fn`` replaces the
save; bad configurations are refused. The GCE watcher reads a local fake
metadata server (``fake_metadata.py``, pointed to by ``GCE_METADATA_HOST``).
In subprocesses (``scripts/notice_train.py``, ``fit`` with ``BackupAndRestore``):
the fake server flips ``preempted`` to TRUE mid-fit, or the script gets SIGUSR1
under Slurm; the run saves, exits 42, and the relaunch ends bit-identical to a
run never stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fake_metadata import FakeMetadata

import phalanx
from phalanx import layers
from phalanx.checkpoint import (
    RESTARTABLE_EXIT_CODE,
    Checkpoint,
    CheckpointManager,
    PreemptionCheckpointHandler,
    TerminationConfig,
    _preemption,
    _termination,
    gce_termination_watcher,
)
from phalanx.errors import CheckpointError
from tests_support import child_xla_flags, run_once

SCRIPT = Path(__file__).parent / "scripts" / "notice_train.py"
TIMEOUT_S = 240
WAIT_S = 20.0  # the longest a watched notice may take to arrive (it is polled every 1 s)
X = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
Y = X.sum(1, keepdims=True)


def _model():
    model = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(3), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", seed=1)
    return model


def _step(model, i):
    rows = slice(8 * (i % 8), 8 * (i % 8) + 8)
    return model.train_on_batch(X[rows], Y[rows])


def _train_until(handler, model, stop, *, most=2000):
    """Runs steps through ``handler`` until ``stop()``; returns the steps run."""
    deadline = time.monotonic() + WAIT_S
    for i in range(most):
        handler.run(_step, model, i)
        if stop():
            return i + 1
        assert time.monotonic() < deadline, "the notice never came"
        time.sleep(0.01)
    raise AssertionError("the loop ended before the notice")


@pytest.fixture
def manager(tmp_path):
    model = _model()
    return model, CheckpointManager(tmp_path / "ckpt", checkpoint=Checkpoint(model=model))


def test_custom_watcher_saves_at_the_next_boundary_and_exits(manager):
    model, mgr = manager
    told = []
    exits = []
    config = TerminationConfig(
        termination_watcher_fn=lambda: bool(told), exit_fn=lambda: exits.append("exit")
    )
    previous = signal.getsignal(signal.SIGTERM)
    handler = PreemptionCheckpointHandler(mgr, termination_config=config)
    try:
        for i in range(3):
            handler.run(_step, model, i)
        assert mgr.latest_checkpoint is None and not handler.received
        told.append(True)
        steps = _train_until(handler, model, lambda: bool(exits))
    finally:
        handler.close()
    assert exits == ["exit"] and handler.received
    assert signal.getsignal(signal.SIGTERM) is previous
    assert handler.total_run_calls == 3 + steps
    # the checkpoint holds the state after the step at which the handler exited
    restored = _model()
    Checkpoint(model=restored).restore(mgr.latest_checkpoint)
    assert restored.optimizer.iterations == model.optimizer.iterations == 3 + steps
    for a, b in zip(restored.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_save_fn_replaces_the_save_and_exit_fn_takes_no_argument(manager):
    model, mgr = manager
    saved, exits = [], []
    config = TerminationConfig(
        termination_watcher_fn=lambda: True,
        save_fn=lambda: saved.append(model.optimizer.iterations),
        exit_fn=lambda: exits.append(True),
    )
    handler = PreemptionCheckpointHandler(mgr, termination_config=config)
    try:
        _train_until(handler, model, lambda: bool(exits))
    finally:
        handler.close()
    assert saved == [model.optimizer.iterations]
    assert mgr.latest_checkpoint is None  # the manager's save did not run


def test_a_failing_watcher_is_logged_once_and_its_later_notice_still_counts(
    manager, monkeypatch, caplog
):
    model, mgr = manager
    monkeypatch.setattr(_preemption, "WATCH_INTERVAL_S", 0.01)  # polled every 10 ms here
    calls, exits = [], []

    def flaky():
        calls.append(1)
        if len(calls) <= 20:
            raise ConnectionError("metadata down")
        return True

    config = TerminationConfig(termination_watcher_fn=flaky, exit_fn=lambda: exits.append(1))
    handler = PreemptionCheckpointHandler(mgr, termination_config=config)
    try:
        with caplog.at_level("WARNING", logger="phalanx"):
            _train_until(handler, model, lambda: bool(exits))
    finally:
        handler.close()
    assert len(calls) > 20 and exits == [1] and mgr.latest_checkpoint is not None
    raised = [r for r in caplog.records if "termination watcher raised" in r.getMessage()]
    assert len(raised) == 1 and "ConnectionError('metadata down')" in raised[0].getMessage()


def test_grace_period_saves_at_once_trains_on_and_exits_near_its_end(manager, monkeypatch):
    model, mgr = manager
    now = [1000.0]
    monkeypatch.setattr(_preemption, "_clock", lambda: now[0])
    exits = []
    config = TerminationConfig(termination_watcher_fn=lambda: True, grace_period=60)
    handler = PreemptionCheckpointHandler(mgr, termination_config=config, exit_fn=exits.append)
    try:
        _train_until(handler, model, lambda: mgr.latest_checkpoint is not None)
        first = mgr.latest_checkpoint
        at_notice = model.optimizer.iterations
        for i in range(5):  # 1 s a step, well within the grace period: training goes on
            now[0] += 1.0
            handler.run(_step, model, i)
        assert exits == [] and mgr.latest_checkpoint == first
        now[0] += 40.0  # a step of 40 s: 3 x (save + step) no longer fits in the time left
        handler.run(_step, model, 5)
    finally:
        handler.close()
    assert exits == [RESTARTABLE_EXIT_CODE]
    assert model.optimizer.iterations == at_notice + 6
    restored = _model()
    Checkpoint(model=restored).restore(mgr.latest_checkpoint)
    assert mgr.latest_checkpoint != first
    assert restored.optimizer.iterations == model.optimizer.iterations


def test_usr1_counts_under_slurm_and_signals_are_configurable(manager, monkeypatch):
    model, mgr = manager
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    assert _termination.termination_signals() == (signal.SIGTERM, signal.SIGUSR1)
    monkeypatch.delenv("SLURM_JOB_ID")
    assert _termination.termination_signals() == (signal.SIGTERM,)
    exits = []
    handler = PreemptionCheckpointHandler(mgr, signals=["USR2"], exit_fn=exits.append)
    try:
        handler.run(_step, model, 0)
        os.kill(os.getpid(), signal.SIGUSR2)
        handler.run(_step, model, 1)
    finally:
        handler.close()
    assert exits == [42] and mgr.latest_checkpoint is not None


def test_bad_configurations_are_refused(manager):
    _, mgr = manager
    with pytest.raises(CheckpointError, match=r"termination_watcher_fn=...\) must be a function"):
        TerminationConfig(termination_watcher_fn=True)
    with pytest.raises(CheckpointError, match=r"exit_fn=...\) must be a function.*got 42"):
        TerminationConfig(exit_fn=42)
    with pytest.raises(CheckpointError, match=r"save_fn=...\) must be a function"):
        TerminationConfig(save_fn="save")
    for bad in (-1, float("nan"), float("inf"), "30", True, np.float32("nan")):
        with pytest.raises(CheckpointError, match=r"grace_period=...\) must be a finite number"):
            TerminationConfig(grace_period=bad)
    for good in (np.int64(30), np.float32(30)):  # numpy's numbers are numbers
        assert TerminationConfig(grace_period=good).grace_period == 30.0
    with pytest.raises(CheckpointError, match=r"must be a phalanx.checkpoint.TerminationConfig"):
        PreemptionCheckpointHandler(mgr, termination_config={"grace_period": 5})
    with pytest.raises(CheckpointError, match=r"got exit_fn= and termination_config.exit_fn"):
        PreemptionCheckpointHandler(
            mgr, termination_config=TerminationConfig(exit_fn=print), exit_fn=print
        )
    with pytest.raises(CheckpointError, match=r"SIGKILL cannot be caught"):
        PreemptionCheckpointHandler(mgr, signals=[signal.SIGKILL])
    with pytest.raises(CheckpointError, match=r"'SIGNOPE' is not a signal"):
        PreemptionCheckpointHandler(mgr, signals=["SIGNOPE"])
    with pytest.raises(CheckpointError, match=r"signals: 3.5 is not a signal"):
        PreemptionCheckpointHandler(mgr, signals=3.5)


def test_gce_watcher_reads_the_metadata_server(monkeypatch):
    with FakeMetadata(preempted_after=3) as server:
        monkeypatch.setenv("GCE_METADATA_HOST", server.host)
        assert _termination.on_gce()
        assert _termination.default_watcher() is not None
        watch = gce_termination_watcher()
        assert [watch(), watch(), watch()] == [False, False, True]
        assert server.unflavored == 0  # every request says Metadata-Flavor: Google
        server.preempted_after = None
        server.maintenance = "MIGRATE_ON_HOST_MAINTENANCE"
        assert watch() is False  # a live migration is no termination
        server.maintenance = "TERMINATE_ON_HOST_MAINTENANCE"
        assert watch() is True
    assert watch() is False  # no server: no notice (logged once), and no wait beyond 1 s


def test_not_on_gce_without_its_environment(monkeypatch):
    monkeypatch.delenv("GCE_METADATA_HOST", raising=False)
    monkeypatch.setattr(_termination, "_DMI_PRODUCT", "/nonexistent/product_name")
    assert not _termination.on_gce() and _termination.default_watcher() is None
    monkeypatch.setenv("GCE_METADATA_ROOT", "metadata.example:81")
    assert _termination.gce_metadata_url("instance/preempted") == (
        "http://metadata.example:81/computeMetadata/v1/instance/preempted"
    )


def _run(out, *flags, env=None, expect=0):
    # The suite's compile flags without its 8 devices.
    env = {**os.environ, "XLA_FLAGS": child_xla_flags(), **(env or {})}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *map(str, flags)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
    )
    assert proc.returncode == expect, (proc.returncode, proc.stderr[-3000:])
    return proc


def _reference(tmp_path_factory):
    """The weights of the run never stopped (``ref.npz``), which the three runs stopped by a
    notice and relaunched end equal to: run once a session (the same script and flags)."""

    def make(folder):
        _run(folder / "ref.npz", "--backup", folder / "backup")

    return run_once(tmp_path_factory, {"script": str(SCRIPT), "flags": []}, make) / "ref.npz"


def _same_weights(a_path, b_path):
    with np.load(a_path) as a, np.load(b_path) as b:
        keys = [k for k in a.files if k.startswith("arr_")]
        assert keys
        for k in keys:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.slow
def test_gce_preemption_notice_mid_fit_saves_exits_and_resumes_bit_identical(
    tmp_path, tmp_path_factory
):
    out, backup = tmp_path / "out.npz", tmp_path / "backup"
    # The watcher asks at fit's start, then every second: TRUE from its 3rd request on,
    # while 39 steps of 100 ms run.
    with FakeMetadata(preempted_after=3) as server:
        env = {"GCE_METADATA_HOST": server.host}
        stopped = _run(out, "--backup", backup, "--sleep-ms", 100, env=env, expect=42)
    assert "received a termination notice" in stopped.stderr
    assert "before preemption; exiting with status 42" in stopped.stderr
    assert not out.exists() and any(backup.iterdir())
    resumed = _run(out, "--backup", backup)
    assert "BackupAndRestore: resuming from" in resumed.stdout
    assert "steps 39 " in resumed.stdout
    _same_weights(_reference(tmp_path_factory), out)


@pytest.mark.slow
def test_slurm_usr1_saves_exits_and_resumes_bit_identical(tmp_path, tmp_path_factory):
    out, backup = tmp_path / "out.npz", tmp_path / "backup"
    flags = ["--backup", backup, "--signal-at-step", 17, "--signal", "SIGUSR1"]
    stopped = _run(out, *flags, env={"SLURM_JOB_ID": "77"}, expect=42)
    assert "received SIGUSR1" in stopped.stderr
    resumed = _run(out, "--backup", backup)
    assert "BackupAndRestore: resuming from" in resumed.stdout
    _same_weights(_reference(tmp_path_factory), out)


@pytest.mark.slow
def test_custom_watcher_through_backup_and_restore_resumes_bit_identical(
    tmp_path, tmp_path_factory
):
    out, backup, notice = tmp_path / "out.npz", tmp_path / "backup", tmp_path / "notice"
    flags = ["--backup", backup, "--sleep-ms", 100, "--watch-file", notice]
    stopped = _run(out, *flags, "--touch-at-step", 10, expect=42)
    assert notice.exists() and "received a termination notice" in stopped.stderr
    resumed = _run(out, "--backup", backup)
    assert "BackupAndRestore: resuming from" in resumed.stdout
    _same_weights(_reference(tmp_path_factory), out)


def test_backup_and_restore_refuses_a_bad_termination_config(tmp_path):
    with pytest.raises(CheckpointError, match=r"termination_config=...\) must be a phalanx"):
        phalanx.callbacks.BackupAndRestore(tmp_path, termination_config=lambda: True)
    backup = phalanx.callbacks.BackupAndRestore(
        tmp_path, termination_config=TerminationConfig(grace_period=5)
    )
    assert backup.save_before_preemption


def test_checkpoint_and_a_url_checkpoint_dir_save_under_the_url(tmp_path, monkeypatch):
    """A Checkpoint with checkpoint_dir='memory://...' saves at that URL (a local folder
    named 'memory:' was written when the prefix was joined as a local path)."""
    import uuid

    from phalanx.io import gfile

    monkeypatch.chdir(tmp_path)
    url = f"memory://preempt-{uuid.uuid4().hex}/run"
    model = _model()
    exits = []
    config = TerminationConfig(termination_watcher_fn=lambda: True, exit_fn=lambda: exits.append(1))
    handler = PreemptionCheckpointHandler(
        Checkpoint(model=model), checkpoint_dir=url, termination_config=config
    )
    try:
        _train_until(handler, model, lambda: bool(exits))
    finally:
        handler.close()
    assert exits == [1]
    assert list(tmp_path.iterdir()) == []  # nothing local
    saved = phalanx.checkpoint.latest_checkpoint(url)
    assert saved is not None and saved.startswith(url + "/ckpt")
    restored = _model()
    Checkpoint(model=restored).restore(saved)
    assert restored.optimizer.iterations == model.optimizer.iterations
    assert gfile.exists(url)
    with pytest.raises(
        CheckpointError, match=r"checkpoint_dir expects a path .* got 3 of type int"
    ):
        PreemptionCheckpointHandler(Checkpoint(model=model), checkpoint_dir=3)
