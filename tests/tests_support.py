"""Helpers shared by tests: where the repository's test data lives."""

import os
from pathlib import Path

# TFRecord files TensorFlow wrote, and what it read back (see its README.md).
TFRECORD_VECTORS = Path(__file__).resolve().parent / "data" / "tf_vectors"


def child_xla_flags() -> str:
    """This process's ``XLA_FLAGS`` without its device count, for a subprocess that sets its
    own: the compile flags (tests/conftest.py) carry over, the 8 devices do not."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    return " ".join(f for f in flags if not f.startswith("--xla_force_host_platform_device_count"))


# XLA's own defaults for the compile flags tests/conftest.py changes: a test of a compiled
# program's structure compiles with these (``lowered.compile(XLA_DEFAULT_OPTIONS)``), as a
# user's process would (the legacy emitters expand a scatter into a ``while`` loop).
XLA_DEFAULT_OPTIONS = {"xla_cpu_use_fusion_emitters": True, "xla_backend_optimization_level": 2}
