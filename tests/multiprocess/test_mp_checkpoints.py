"""Checkpoints across 2 processes: a worker killed (SIGKILL) or preempted (SIGTERM) once.

``phalanx launch -n 2 --max-restarts 1`` runs ``scripts/backup_mlp.py`` (``fit``
with ``BackupAndRestore`` under ``MultiWorkerMirroredStrategy``, one device a
process); one worker dies at a chosen step of the first attempt, the launcher
starts the job again, it resumes from the backup and ends with weights
bit-identical to an uninterrupted 2-process run, on both processes.
"""

import re

import numpy as np
import pytest
from mp_procs import SCRIPTS, Launcher, _env, assert_identical, launch, load

from tests_support import run_once

JOB_TIMEOUT_S = 90  # the launcher's deadline for each attempt


def _run(tmp_path, name, *args, restarts=1):
    out = tmp_path / name
    out.mkdir()
    launcher = Launcher(
        "-n", "2", "--devices-per-process", "1", "--timeout", str(JOB_TIMEOUT_S),
        "--grace", "2", "--max-restarts", str(restarts), "--",
        str(SCRIPTS / "backup_mlp.py"), str(out), str(out / "backup"), *map(str, args),
        env=_env(),
    )  # fmt: skip
    code, stdout, stderr, seconds = launcher.finish(timeout=(restarts + 1) * JOB_TIMEOUT_S + 30)
    print(f"{name}: {seconds:.1f} s")
    return code, stdout, stderr, out


def reference(tmp_path_factory, kind: str) -> dict:
    """The uninterrupted 2-process run's results for ``kind`` input (3 epochs of 12 steps,
    backups every 5 steps), run once a session: the kill and SIGTERM tests compare with the
    same run (its weights do not depend on the backups' frequency)."""

    flags = ["--input", kind, "--save-freq", 5]

    def make(tmp):
        code, stdout, stderr, out = _run(tmp, "ref", *flags)
        assert code == 0, stdout + stderr
        results = load(out)
        assert_identical(results)
        assert int(results[0]["steps"]) == 36 and int(results[0]["first_step"]) == 0
        assert not (out / "backup").exists()  # delete_checkpoint=True at the end of fit
        np.savez(tmp / "ref.npz", **results[0])

    key = {"script": "backup_mlp.py", "processes": 2, "devices": 1, "flags": flags}
    with np.load(run_once(tmp_path_factory, key, make) / "ref.npz") as f:
        return dict(f)


def _assert_same_weights(got, want):
    keys = [k for k in want if k.startswith("weight_")]
    assert keys
    for key in keys:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["numpy", "dataset"])
def test_sigkill_of_one_worker_restarts_and_ends_bit_identical(tmp_path, tmp_path_factory, kind):
    # "dataset": each process reads its own share of a shuffled Dataset, so each resumes
    # from its own input position (gathered into the checkpoint by process 0).
    # A backup when the step count reaches or passes a multiple of 5 (steps_per_execution=2):
    # its hook runs after the next execution is dispatched and saves that one's state
    # (docs/checkpoints.md), so the backup taken at count 16 holds step 18, the 7th step
    # of epoch 2; process 1 dies when the execution of steps 18-19 begins.
    code, stdout, stderr, out = _run(
        tmp_path, "kill", "--input", kind, "--save-freq", 5, "--die-at-step", 19, "--signal", "KILL"
    )
    assert code == 0, stdout + stderr
    assert "process 1 was killed by SIGKILL" in stderr
    assert "restarting it (1 of 1)" in stderr
    assert "BackupAndRestore: resuming from" in stdout
    results = load(out)
    assert_identical(results)
    assert [int(r["first_step"]) for r in results] == [18, 18]
    assert int(results[0]["steps"]) == 36
    want = reference(tmp_path_factory, kind)
    _assert_same_weights(results[0], want)
    # the relaunch's History holds the epochs it ran (2 and 3), equal to the reference's
    np.testing.assert_array_equal(results[0]["loss"], want["loss"][1:])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_to_one_worker_both_save_same_step_and_resume_there(tmp_path, tmp_path_factory):
    code, stdout, stderr, out = _run(
        tmp_path, "term", "--save-freq", "epoch", "--die-at-step", 19, "--signal", "TERM"
    )
    assert code == 0, stdout + stderr
    assert "status 42 (saved before preemption); restarting it (1 of 1)" in stderr
    exits = re.search(
        r"process (\d) exited with code 42 .*Process (\d) then exited with code 42", stderr
    )
    assert exits and {exits[1], exits[2]} == {"0", "1"}, stderr  # both exited restartable
    saved = re.findall(
        r"\[(\d)\] .*phalanx: saved (\S+) before preemption; exiting with status 42",
        stdout + stderr,
    )
    # (the launcher repeats the last lines of the processes that failed: a set)
    assert set(saved) == {("0", saved[0][1]), ("1", saved[0][1])}, saved  # one checkpoint
    results = load(out)
    assert_identical(results)
    first = [int(r["first_step"]) for r in results]
    # SIGTERM lands when the execution of steps 18-19 begins; the agreement runs in the next
    # batch-end hook and the save holds the newest dispatched execution: step 20, mid-epoch 2.
    assert first == [20, 20], first
    assert int(results[0]["steps"]) == 36
    _assert_same_weights(results[0], reference(tmp_path_factory, "numpy"))


# Another process count: tests/checkpoint/test_resume_other_process_count.py (a DATA-sharded
# Dataset and arrays resume mid-epoch under it; FILE-sharded input is refused with the reason).


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_custom_loop_trees_resume_on_two_processes(tmp_path):
    """Issue 27 item 5: a custom loop's params and optax state by name, 2 processes."""
    launch("ctl_trees.py", tmp_path / "ckpts", tmp_path / "out", devices=2, timeout=120)
    results = load(tmp_path / "out")
    for r in results:
        np.testing.assert_array_equal(r["resumed"], r["went_on"])
    np.testing.assert_array_equal(results[0]["params"], results[1]["params"])
    np.testing.assert_array_equal(results[0]["went_on"], results[1]["went_on"])
