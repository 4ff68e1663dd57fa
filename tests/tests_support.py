"""Helpers shared by tests: where the repository's test data lives, the compile flags of a
subprocess, and reference runs made once a session."""

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable
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


def run_once(tmp_path_factory, key: dict, make: Callable[[Path], None]) -> Path:
    """The folder in which ``make(folder)`` left a run's results, run once a test session for
    ``key`` and shared by every test, in every pytest-xdist worker, that passes the same key.

    For the uninterrupted reference runs that the kill-and-resume tests compare against (CI
    time: several tests need the same one). ``key`` names everything the run's results depend
    on -- the script, its flags, the device and process counts, the input -- so that two tests
    share a run only where it is the same run; what its results do not depend on (the backup
    folder, a URL) stays out of it. Another worker asking for the key meanwhile waits for the
    run instead of running it again. A ``make`` that raises leaves nothing behind: the next
    test asking runs it again (and fails the same way).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, which holds every worker's own
    text = json.dumps(key, sort_keys=True, default=str)
    folder = root / "run-once" / hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.parent.mkdir(exist_ok=True)
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not folder.exists():
            partial = folder.with_suffix(".partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            (partial / "key.json").write_text(text)
            make(partial)
            partial.rename(folder)
    return folder
