"""bench/models.py at its ``--quick`` sizes: every workload builds, trains and reports.

The figures are not checked (never a timed test); what is checked is that each
side ran the epochs it was asked for and reported finite, positive rates.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "models.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_models", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["conv b4 spe2", "mlp tfrecord spe2"])
def test_quick_case_runs_both_sides(name):
    bench = _bench()
    case = next(c for c in bench._cases(quick=True) if c["name"] == name)
    for run in (bench.run_flax, bench.run_phalanx):
        out = run(case, epochs=2)
        assert set(out) == {"wall", "cpu", "first_s", "first_cpu_s", "compile_s", "rss_mb"}
        assert all(math.isfinite(v) and v > 0 for v in out.values()), out


def test_quick_cases_cover_every_workload():
    models = {c["model"] for c in _bench()._cases(quick=True)}
    assert models == {"conv", "transformer", "tfrecord", "mlp"}


@pytest.mark.slow
def test_quick_command_prints_a_row_per_framework():
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--quick",
            "--rounds",
            "1",
            "--epochs",
            "2",
            "--only",
            "transformer",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    lines = done.stdout.splitlines()
    assert lines[2].split()[:2] == ["transformer", "b4"]
    assert lines[3].split()[0] == "phalanx" and float(lines[3].split()[-1]) > 0
