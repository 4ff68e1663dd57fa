"""Helpers shared by tests: where the shared test data lives, and what to do without it."""

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("PHALANX_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TFRECORD_VECTORS = SHARED / "testdata" / "tfrecord"
ALLOW_MISSING = "PHALANX_ALLOW_MISSING_TESTDATA"


def needs_shared_testdata(path: Path):
    """A mark for tests that read ``path``: they fail without it, unless allowed to skip.

    CI has ``../shared`` beside the checkout: a missing directory there is a broken
    set-up, not a reason to pass. Set ``PHALANX_ALLOW_MISSING_TESTDATA=1`` to skip on
    a machine without it, or ``PHALANX_SHARED`` to point at it.
    """
    missing = not (path / "manifest.json").is_file()
    if missing and not os.environ.get(ALLOW_MISSING):
        return pytest.mark.usefixtures("_fail_missing_testdata")
    return pytest.mark.skipif(missing, reason=f"shared test data not at {path} ({ALLOW_MISSING})")
