"""bench/gpu.py --dry-run: the accelerator check runs end to end on CPU at tiny sizes."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "gpu.py"


def test_dry_run_reports_rate_mfu_and_memory_fields():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--dry-run", "--epochs", "2", "--only", "mlp numpy"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(rows) == {"mlp numpy b8 flax", "mlp numpy b8 phalanx"}
    for row in rows.values():
        assert row["ex_s"] > 0 and row["mfu"] > 0
        assert set(row) == {"ex_s", "mfu", "peak_bytes"}
