"""``phalanx launch --max-restarts N``: a job that fails or saved on preemption (exit 42) starts
again, and a training script with ``BackupAndRestore`` resumes and ends as if never stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests_support import child_xla_flags

TIMEOUT_S = 240
TRAIN = Path(__file__).parent / "scripts" / "train.py"

# Exits with the status given for its n-th run (counted in a file), 0 past the list.
STATUSES = """
import sys
from pathlib import Path

count = Path(sys.argv[1])
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
codes = [int(c) for c in sys.argv[2:]]
sys.exit(codes[n] if n < len(codes) else 0)
"""


def _launch(*argv, cwd):
    env = {
        **{k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
        "XLA_FLAGS": child_xla_flags(),
    }
    return subprocess.run(
        [sys.executable, "-m", "phalanx.cli", "launch", "-n", "1", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize(
    "restarts, codes, status, runs",
    [(1, [42], 0, 2), (2, [1, 42], 0, 3), (1, [1, 1], 1, 2), (0, [42], 42, 1), (3, [124], 124, 1)],
)
def test_restarts_after_failure_or_preemption(tmp_path, restarts, codes, status, runs):
    (tmp_path / "job.py").write_text(STATUSES)
    count = tmp_path / "count"
    proc = _launch("--max-restarts", restarts, "--", "job.py", count, *codes, cwd=tmp_path)
    assert proc.returncode == status, proc.stderr
    assert int(count.read_text()) == runs
    assert proc.stderr.count("restarting it") == runs - 1
    if 42 in codes[: runs - 1]:
        assert "status 42 (saved before preemption); restarting it" in proc.stderr


def test_negative_max_restarts_is_refused(tmp_path):
    (tmp_path / "job.py").write_text(STATUSES)
    proc = _launch("--max-restarts", -1, "--", "job.py", tmp_path / "c", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--max-restarts must be >= 0, got -1" in proc.stderr


@pytest.mark.slow
def test_preempted_training_restarts_and_ends_bit_identical(tmp_path):
    common = ["--input", "dataset", "--spe", 2, "--save-freq", "epoch"]
    env = {
        **{k: v for k, v in os.environ.items() if k != "XLA_FLAGS"},
        "XLA_FLAGS": child_xla_flags(),
    }
    ref = tmp_path / "ref.npz"
    subprocess.run(
        [sys.executable, str(TRAIN), str(ref), *map(str, common), "--backup", "rb"],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
        cwd=tmp_path,
        env=env,
    )
    out = tmp_path / "out.npz"
    flags = [*common, "--backup", "b", "--sigterm-at-step", 20]
    proc = _launch("--max-restarts", 1, "--", str(TRAIN), out, *flags, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "status 42 (saved before preemption); restarting it (1 of 1)" in proc.stderr
    assert "BackupAndRestore: resuming from" in proc.stdout
    with np.load(ref) as a, np.load(out) as b:
        for k in a.files:
            if k.startswith("arr_"):
                np.testing.assert_array_equal(a[k], b[k])
