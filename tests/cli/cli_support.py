"""Runs the real ``phalanx`` command in a subprocess, in a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys

from tests_support import child_xla_flags

# Variables that would change what the command finds (a cluster, a device count).
_CLEARED = (
    "XLA_FLAGS",
    "PHALANX_CPU_DEVICES",
    "PHALANX_CLUSTER",
    "PHALANX_COORDINATOR_ADDRESS",
    "PHALANX_NUM_PROCESSES",
    "PHALANX_PROCESS_ID",
    "TF_CONFIG",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "JOB_COMPLETION_INDEX",
    "TPU_WORKER_ID",
    "TPU_WORKER_HOSTNAMES",
)


def clean_env(**extra: str) -> dict[str, str]:
    """``os.environ`` without cluster or device variables, on CPU, plus ``extra``: the
    suite's compile flags carry over (tests/conftest.py), its device count does not."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(JAX_PLATFORMS="cpu", COLUMNS="100", XLA_FLAGS=child_xla_flags(), **extra)
    return env


def phalanx(*args: str, timeout: float = 120, cwd=None, **env: str):
    """Runs ``python -m phalanx ARGS``; returns the CompletedProcess (text, both streams)."""
    return subprocess.run(
        [sys.executable, "-m", "phalanx", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=clean_env(**env),
    )
