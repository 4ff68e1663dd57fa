"""The ``s3`` fixture of the checkpoint tests: tests/io's moto server (``s3://phalanx-test``),
started on first use; it skips, with the reason, where moto or s3fs is missing."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "io"))
try:
    from test_s3_server import s3
except (ImportError, pytest.skip.Exception) as missing:
    _why = str(missing)

    @pytest.fixture
    def s3():
        pytest.skip(_why)
