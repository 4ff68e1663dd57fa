"""Helpers for the multi-process tests: run a child script under ``phalanx launch``, load results.

Reuses ``tests/cluster/cluster_procs.py`` (the launcher with its output read as it
comes). The test process itself has 8 simulated devices (tests/conftest.py), so
the one-process references run here, on ``jax.devices()[:4]``; the children
get their own device count from ``--devices-per-process``.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent.parent / "cluster"))
sys.path.insert(0, str(Path(__file__).parent / "scripts"))

from cluster_procs import Launcher, _env

SCRIPTS = Path(__file__).parent / "scripts"


def launch(script: str, *args: str, n: int = 2, devices: int = 2, timeout: float = 60, env=None):
    """Runs ``script args`` in ``n`` processes of ``devices`` devices; returns (code, out, err, s)."""
    launcher = Launcher(
        "-n", str(n), "--devices-per-process", str(devices), "--timeout", str(timeout),
        "--grace", "2", "--", str(SCRIPTS / script), *map(str, args), env=env or _env(),
    )  # fmt: skip
    code, out, err, seconds = launcher.finish(timeout=timeout + 15)
    print(f"{script} {' '.join(map(str, args))}: {n} x {devices} devices, {seconds:.1f} s")
    assert code == 0, out + err
    return code, out, err, seconds


def load(out_dir: Path, n: int = 2) -> list[dict[str, np.ndarray]]:
    """The ``<process>.npz`` results of ``n`` processes."""
    results = []
    for p in range(n):
        with np.load(out_dir / f"{p}.npz") as f:
            results.append(dict(f))
    return results


def assert_all_close(got: dict, want: dict, *, atol: float, what: str) -> None:
    assert got.keys() == want.keys(), (sorted(got), sorted(want))
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=atol, err_msg=f"{what}: {key}")


def assert_identical(results: list[dict]) -> None:
    """Every process holds bit-identical values."""
    for p, other in enumerate(results[1:], start=1):
        for key, value in results[0].items():
            np.testing.assert_array_equal(other[key], value, err_msg=f"process {p} vs 0: {key}")
