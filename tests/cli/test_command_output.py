"""What the long-running commands say, through the real command: summaries and progress bars."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from cli_support import phalanx

from phalanx.data import TFRecordWriter, serialize_example


def _files(folder, n=3, records=50):
    paths = []
    for f in range(n):
        path = folder / f"train-{f:05d}.tfrecord"
        with TFRecordWriter(path) as w:
            for i in range(records):
                w.write(serialize_example({"x": np.float32([i, f])}))
        paths.append(str(path))
    return paths


def test_records_verify_ends_with_a_summary(tmp_path):
    paths = _files(tmp_path)
    damaged = bytearray(Path(paths[1]).read_bytes())
    damaged[40] ^= 0xFF
    Path(paths[1]).write_bytes(bytes(damaged))
    run = phalanx("records", "verify", *paths, str(tmp_path / "missing.tfrecord"))
    assert run.returncode == 1
    last = run.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"verified 4 files \([\d.,]+ [kM]?B\) in [\d.]+ s: 2 OK, 1 damaged, 1 missing; "
        r"\d+ good records", last
    ), run.stdout  # fmt: skip


def test_records_verify_shows_a_progress_bar_on_a_terminal(tmp_path):
    paths = _files(tmp_path)
    run = phalanx("records", "verify", *paths, TTY_COMPATIBLE="1", TTY_INTERACTIVE="1")
    assert run.returncode == 0, run.stderr
    assert "verifying" in run.stderr and "3/3 files" in run.stderr, run.stderr
    plain = phalanx("records", "verify", *paths)
    assert plain.stderr == ""  # no bar in a log or a pipe


def test_launch_says_how_the_job_ended(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("print('hello')\n")
    run = phalanx("launch", "-n", "2", "--", str(script), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "[0] hello" in run.stdout and "[1] hello" in run.stdout
    assert re.search(r"phalanx launch: all 2 processes exited 0 in [\d.]+ s", run.stderr), (
        run.stderr
    )


def test_launch_drops_the_runtimes_noise_lines(tmp_path):
    """Gloo's per-job connection lines and the C++ preemption notifier's line on a failure
    (both on the processes' stderr) are not relayed, nor in the failed process's tail."""
    script = tmp_path / "job.py"
    script.write_text(
        "import os, sys\n"
        "rank = os.environ.get('PHALANX_PROCESS_ID', '0')\n"
        "print(f'[Gloo] Rank {rank} is connected to 1 peer ranks. Expected number of connected "
        "peer ranks is : 1', file=sys.stderr)\n"
        "print('hello', flush=True)\n"
        "print('E0000 00:00:1733100000.000000   123 preemption_notifier.cc:89] Error: CANCELLED: "
        "Preemption notifier is being deleted.', file=sys.stderr)\n"
        "sys.exit(3 if rank == '1' else 0)\n"
    )
    run = phalanx("launch", "-n", "2", "--", str(script), timeout=120)
    assert run.returncode != 0
    assert "[0] hello" in run.stdout and "[1] hello" in run.stdout, run.stdout
    both = run.stdout + run.stderr
    assert "[Gloo]" not in both and "preemption_notifier" not in both, both
