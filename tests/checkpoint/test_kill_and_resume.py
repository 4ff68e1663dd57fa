"""A training process killed with SIGKILL and launched again ends bit-identical to one never killed.

Each test runs ``scripts/train.py`` (a user's script: ``fit`` with
``BackupAndRestore``) in subprocesses: once uninterrupted, once killed at a
random step (chosen with a printed seed; the kill lands while the execution
holding that step runs, so with ``steps_per_execution > 1`` mid-execution),
then again with the same backup folder until it finishes. The final weights
must be bit-identical for numpy input, a shuffled ``Dataset`` and a TFRecord
pipeline; restored onto another replica count (2 simulated devices -> 1),
the same batches give weights within 1e-5. A process killed while it
writes a backup (before its commit, the rename) leaves the previous backup, which the
relaunch restores.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from phalanx.data import TFRecordWriter, serialize_example
from tests_support import child_xla_flags, run_once

SCRIPT = Path(__file__).parent / "scripts" / "train.py"
TIMEOUT_S = 240
STEPS = 39  # 3 epochs of 13 batches (200 examples, batch 16)


def _run(out, *flags, expect_kill=False, expect_code=0):
    env = {
        **{k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
        "XLA_FLAGS": child_xla_flags(),
    }
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *map(str, flags)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
    )
    if expect_kill:
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-3000:])
    else:
        assert proc.returncode == expect_code, proc.stderr[-3000:]
    return proc


def _weights(path):
    with np.load(path) as f:
        return [f[k] for k in f.files if k.startswith("arr_")], f["loss"]


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory):
    """The script's arrays as TFRecord files of tf.train.Example (3 files)."""
    folder = tmp_path_factory.mktemp("records")
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, 12)).astype(np.float32)
    y = np.abs(x[:, :5]).argmax(1)
    for f in range(3):
        with TFRecordWriter(folder / f"part-{f}.tfrecord") as w:
            for i in range(f, 200, 3):
                w.write(serialize_example({"x": x[i], "y": np.int64([y[i]])}))
    return folder


def _reference(tmp_path_factory, input_kind, spe, *, devices=1, dropout=0.25, data=None):
    """The final weights and losses of the run never killed, once a session for each input,
    ``steps_per_execution``, device count, dropout rate and data: several tests compare with the
    same run. It backs up at each epoch's end whatever the test's ``--save-freq`` (2, 5,
    "epoch"): a backup only reads the training state, the weights do not depend on when."""
    flags = ["--input", input_kind, "--spe", spe, "--devices", devices, "--dropout", dropout]
    flags += [] if data is None else ["--data", data]

    def make(folder):
        _run(folder / "ref.npz", *flags, "--save-freq", "epoch", "--backup", folder / "backup")

    key = {"script": str(SCRIPT), "flags": [str(flag) for flag in flags]}
    return _weights(run_once(tmp_path_factory, key, make) / "ref.npz")


def _resume_case(
    tmp_path, tmp_path_factory, input_kind, spe, data=None, *, devices=(1, 1), dropout=0.25
):
    """(reference, resumed) final weights and losses; kills once at a random step."""
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    kill_at = rnd.randrange(3 * spe + 1, STEPS - 3)  # after the first backups are written
    delay_ms = rnd.choice([0.0, 1.0, 5.0])
    print(f"seed {seed}: kill at step {kill_at}, {delay_ms} ms into its execution")
    common = ["--input", input_kind, "--spe", spe, "--save-freq", 2, "--dropout", dropout]
    if data is not None:
        common += ["--data", data]
    out, backup = tmp_path / "out.npz", tmp_path / "backup"
    killed = ["--devices", devices[0], "--backup", backup, "--kill-at-step", kill_at]
    _run(out, *common, *killed, "--kill-delay-ms", delay_ms, expect_kill=True)
    assert backup.is_dir() and any(backup.iterdir()), "the killed run left no backup"
    resumed = _run(out, *common, "--devices", devices[1], "--backup", backup)
    assert "BackupAndRestore: resuming from" in resumed.stdout
    assert f"steps {STEPS} " in resumed.stdout
    assert not backup.exists(), "the backup is deleted once fit ends"
    ref = _reference(
        tmp_path_factory, input_kind, spe, devices=devices[1], dropout=dropout, data=data
    )
    return ref, _weights(out)


@pytest.mark.parametrize(
    "input_kind, spe",
    [
        pytest.param("numpy", 1, marks=pytest.mark.slow),
        ("numpy", 3),
        pytest.param("dataset", 1, marks=pytest.mark.slow),
        ("dataset", 3),
    ],
)
def test_killed_run_resumes_bit_identical(tmp_path, tmp_path_factory, input_kind, spe):
    (ref, ref_loss), (got, got_loss) = _resume_case(tmp_path, tmp_path_factory, input_kind, spe)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ref_loss[-1] == got_loss[-1]  # the last epoch's loss, over all its steps


@pytest.mark.slow
def test_killed_tfrecord_pipeline_resumes_bit_identical(tmp_path, tmp_path_factory, tfrecords):
    (ref, ref_loss), (got, got_loss) = _resume_case(
        tmp_path, tmp_path_factory, "tfrecord", 2, tfrecords
    )
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_array_equal(a, b)
    assert ref_loss[-1] == got_loss[-1]


@pytest.mark.slow
@pytest.mark.parametrize("input_kind", ["numpy", "dataset"])
def test_resume_on_another_replica_count(tmp_path, tmp_path_factory, input_kind):
    """Saved under 2 replicas, resumed under 1: the same batches, weights within 1e-5.

    Without dropout: each replica draws its own dropout keys, so dropout masks
    depend on the replica count (as in TensorFlow).
    """
    (ref, ref_loss), (got, got_loss) = _resume_case(
        tmp_path, tmp_path_factory, input_kind, 2, devices=(2, 1), dropout=0.0
    )
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    np.testing.assert_allclose(ref_loss[-1], got_loss[-1], atol=1e-5)


def test_process_killed_while_writing_keeps_the_previous_backup(tmp_path, tmp_path_factory):
    common = ["--input", "dataset", "--spe", 1, "--save-freq", 5]
    out, backup = tmp_path / "out.npz", tmp_path / "backup"
    env = {
        **{k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
        "XLA_FLAGS": child_xla_flags(),
    }
    argv = [sys.executable, str(SCRIPT), str(out), *map(str, common)]
    proc = subprocess.Popen(
        [*argv, "--backup", str(backup), "--hang-in-save", "3"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker = Path(str(backup) + ".hung")
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not marker.exists():
            assert proc.poll() is None, "the script ended before its 3rd backup"
            assert time.monotonic() < deadline, "the 3rd backup never started"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    committed = sorted(p.name for p in backup.iterdir() if "tmp" not in p.name)
    assert committed == ["ckpt_2"], sorted(p.name for p in backup.iterdir())
    resumed = _run(out, *common, "--backup", backup)
    assert f"resuming from {backup / 'ckpt_2'} " in resumed.stdout
    (ref_w, _), (got_w, _) = _reference(tmp_path_factory, "dataset", 1), _weights(out)
    for a, b in zip(ref_w, got_w, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("spe", [pytest.param(1, marks=pytest.mark.slow), 3])
def test_sigterm_saves_at_the_next_boundary_and_exits_restartable(tmp_path, tmp_path_factory, spe):
    """SIGTERM (preemption) during fit: a backup after the executions in flight, exit 42,
    and the relaunch resumes there and ends bit-identical."""
    common = ["--input", "dataset", "--spe", spe, "--save-freq", "epoch"]
    out, backup = tmp_path / "out.npz", tmp_path / "backup"
    step = random.randrange(14, 26)  # in the second epoch: after one epoch-end backup
    print(f"SIGTERM at step {step}")
    _run(out, *common, "--backup", backup, "--sigterm-at-step", step, expect_code=42)
    resumed = _run(out, *common, "--backup", backup)
    # Epoch 2 holds steps 13..25; its executions start at 0, spe, 2 spe ... within it. fit
    # runs one execution ahead: the signal comes as the execution holding the step is
    # dispatched, the backup follows the end of the one before it, and holds both (the state
    # and the position move together); for the epoch's first, after the next is dispatched.
    first = (step - 13) // spe * spe
    within = min(first + (2 if first == 0 else 1) * spe, 13)
    assert f"(epoch 2, {within} steps done in it)" in resumed.stdout, resumed.stdout
    (ref_w, _), (got_w, _) = _reference(tmp_path_factory, "dataset", spe), _weights(out)
    for a, b in zip(ref_w, got_w, strict=True):
        np.testing.assert_array_equal(a, b)
