"""A checkpoint saved mid-epoch by 2 processes resumes under 1, and one saved by 1 under 2.

``scripts/reshard_train.py`` runs under ``phalanx launch -n N`` (``fit`` with
``BackupAndRestore`` every 5 steps, one device a process, no dropout); process 0
is SIGKILLed at step 23 (mid-epoch 2, the backup holds step 20), and the job is
launched again with the other process count. Arrays and a ``Dataset`` auto-sharded
by DATA (each process takes rows of every global batch: every process is at the
same position) resume there: the same running losses step for step (the same
batches in the same order) and final weights within 1e-5 of the uninterrupted
1-process run. A TFRecord pipeline auto-sharded by FILE (each process reads its
own files) is refused both ways with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phalanx.data import TFRecordWriter, serialize_example
from tests_support import child_xla_flags, run_once

SCRIPT = Path(__file__).parent / "scripts" / "reshard_train.py"
JOB_TIMEOUT_S = 120
DIE_AT = 23  # mid-epoch 2 (12 steps an epoch); the last backup before it is at step 20
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _env() -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "TF_CONFIG", "SLURM_"))
    }
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=child_xla_flags())
    return env


def _launch(n, out, backup, *flags):
    out.mkdir(exist_ok=True)
    argv = ["-n", n, "--devices-per-process", 1, "--timeout", JOB_TIMEOUT_S, "--grace", 2]
    proc = subprocess.run(
        [sys.executable, "-m", "phalanx.cli", "launch", *map(str, argv), "--"]
        + [str(SCRIPT), str(out), str(backup), *map(str, flags)],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S + 60,
        env=_env(),
    )
    return proc.returncode, proc.stdout + proc.stderr


def _results(out, n):
    results = []
    for p in range(n):
        with np.load(out / f"{p}.npz") as f:
            results.append(dict(f))
    return results


def _reference(tmp_path_factory, kind):
    """The uninterrupted 1-process run, once a session per input kind."""
    flags = ["--input", kind]

    def make(tmp):
        code, log = _launch(1, tmp / "out", tmp / "backup", *flags)
        assert code == 0, log[-3000:]

    key = {"script": str(SCRIPT), "processes": 1, "devices": 1, "flags": flags}
    return _results(run_once(tmp_path_factory, key, make) / "out", 1)[0]


def _killed(tmp_path, n, *flags):
    """A run of ``n`` processes killed at step ``DIE_AT``; returns the backup folder."""
    backup = tmp_path / "backup"
    code, log = _launch(n, tmp_path / "killed", backup, *flags, "--die-at-step", DIE_AT)
    assert code != 0 and "killed by SIGKILL" in log, log[-3000:]
    assert len([p for p in backup.iterdir() if "tmp" not in p.name]) == 1, log[-3000:]
    return backup


def _assert_resumed_like(results, reference):
    for r in results[1:]:
        for key in results[0]:
            np.testing.assert_array_equal(r[key], results[0][key], err_msg=key)
    got = results[0]
    assert int(got["first_step"]) == 20 and int(got["steps"]) == 36
    # the running losses from step 20 (epoch 2, batch 8) on: the same batches, same order
    want = reference["losses"][20:]
    np.testing.assert_array_equal(got["losses"][:, :2], want[:, :2])
    np.testing.assert_allclose(got["losses"][:, 2], want[:, 2], atol=1e-5, rtol=0)
    weights = [k for k in reference if k.startswith("arr_")]
    assert weights
    for k in weights:
        np.testing.assert_allclose(got[k], reference[k], atol=1e-5, rtol=0, err_msg=k)


@pytest.mark.parametrize("kind", ["dataset", "numpy"])
def test_two_processes_save_mid_epoch_one_resumes(tmp_path, tmp_path_factory, kind):
    backup = _killed(tmp_path, 2, "--input", kind)
    code, log = _launch(1, tmp_path / "out", backup, "--input", kind)
    assert code == 0, log[-3000:]
    assert "resuming from" in log and "(epoch 2, 8 steps done in it)" in log, log[-3000:]
    _assert_resumed_like(_results(tmp_path / "out", 1), _reference(tmp_path_factory, kind))


def test_one_process_saves_mid_epoch_two_resume(tmp_path, tmp_path_factory):
    backup = _killed(tmp_path, 1, "--input", "dataset")
    code, log = _launch(2, tmp_path / "out", backup, "--input", "dataset")
    assert code == 0, log[-3000:]
    assert "(epoch 2, 8 steps done in it)" in log, log[-3000:]
    _assert_resumed_like(_results(tmp_path / "out", 2), _reference(tmp_path_factory, "dataset"))


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory):
    """The script's arrays as 4 TFRecord files (FILE sharding: 2 files a process)."""
    folder = tmp_path_factory.mktemp("records")
    rng = np.random.default_rng(7)
    x = rng.normal(size=(192, 12)).astype(np.float32)
    y = np.abs(x[:, :5]).argmax(1)
    for f in range(4):
        with TFRecordWriter(folder / f"part-{f}.tfrecord") as w:
            for i in range(f, 192, 4):
                w.write(serialize_example({"x": x[i], "y": np.int64([y[i]])}))
    return folder


@pytest.mark.parametrize("saved, restored", [(2, 1), (1, 2)])
def test_file_sharded_position_is_refused_under_another_count(tmp_path, tfrecords, saved, restored):
    flags = ["--input", "files", "--data", tfrecords]
    backup = _killed(tmp_path, saved, *flags)
    code, log = _launch(restored, tmp_path / "out", backup, *flags)
    assert code != 0, log[-3000:]
    assert "FILE sharding: each process reads its own files" in log, log[-3000:]
    # refused when the checkpoint is read (2 -> 1) or when the pipeline takes it (1 -> 2)
    assert f"Restore it with {saved} " in log, log[-3000:]
