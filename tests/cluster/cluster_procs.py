"""Helpers for the multi-process tests: run ``phalanx launch`` and read its output as it comes."""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests_support import child_xla_flags

SCRIPTS = Path(__file__).parent / "scripts"


def _env(**extra) -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "TF_CONFIG", "SLURM_"))
    }
    env.pop("JOB_COMPLETION_INDEX", None)
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=child_xla_flags(), **extra)
    return env


class Launcher:
    """``python -m phalanx launch ...`` with its stdout lines in a queue."""

    def __init__(self, *args: str, env: dict | None = None):
        self.start = time.monotonic()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "phalanx.cli", "launch", *args],
            env=env or _env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.popen.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(self.popen.stderr, self.stderr), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, lines: list):
        for line in stream:
            lines.append(line)

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        """Returns the first output line (seen so far or to come) matching ``pattern``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stdout):
                if match := re.search(pattern, line):
                    return match
            if self.popen.poll() is not None and not self.readers[0].is_alive():
                break
            time.sleep(0.1)
        self.popen.kill()
        pytest.fail(
            f"no line matching {pattern!r} within {timeout} s; output:\n{''.join(self.stdout)}"
        )

    def finish(self, timeout: float) -> tuple[int, str, str, float]:
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            pytest.fail(f"launcher still running after {timeout} s:\n{''.join(self.stdout)}")
        seconds = time.monotonic() - self.start
        for reader in self.readers:
            reader.join(timeout=5)
        return self.popen.returncode, "".join(self.stdout), "".join(self.stderr), seconds
