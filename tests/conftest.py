"""Test set-up: JAX sees 8 simulated CPU devices, set before JAX starts.

Tests that need 1 or 2 devices build their strategies on a subset
(``MirroredStrategy(devices=jax.devices()[:2])``).
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA:CPU compiles a program 2-3x faster with its legacy fusion emitters and LLVM's
# optimization level 0; the suite compiles thousands of tiny programs and runs each once or
# twice, so compile time is most of its CPU time (CI budget; the programs' results are the
# same, only the generated code is less optimized). A flag the caller set is kept as given;
# tests/tests_support.child_xla_flags carries them into subprocesses.
_TEST_FLAGS = (
    "--xla_force_host_platform_device_count=8",
    "--xla_cpu_use_fusion_emitters=false",
    "--xla_backend_optimization_level=0",
)
for _flag in _TEST_FLAGS:
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

# One persistent compilation cache per test process (and the subprocesses it starts, which
# inherit the variable): the suite builds the same small models in hundreds of tests, and
# XLA compiles each program once instead of once per test (about a third of the suite's
# CPU time). A cache the caller set is used as given.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="phalanx-tests-xla-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# The suite starts hundreds of Python subprocesses (launches, doc blocks, kill-and-resume
# runs), each importing phalanx from this source tree. Where PYTHONDONTWRITEBYTECODE is set,
# each one compiled phalanx's 60k lines again (about 1.6 s CPU a process): they are
# byte-compiled once here, and Python reads those files whatever the variable says.
if sys.dont_write_bytecode:
    import compileall
    import importlib.util

    _src = importlib.util.find_spec("phalanx").submodule_search_locations[0]
    compileall.compile_dir(_src, quiet=1, workers=1)

import jax  # noqa: E402
import pytest  # noqa: E402

assert jax.device_count() == 8, f"conftest wanted 8 CPU devices, JAX sees {jax.devices()}"


@pytest.fixture
def devices():
    """The 8 simulated CPU devices."""
    return jax.devices()


@pytest.fixture(autouse=True)
def _fresh_random_defaults():
    """Every test starts, and leaves, a process without ``set_random_seed``: models built
    without a seed start from seed 0, as most tests' expected values assume."""
    from phalanx import _random

    _random.clear_global_seed()
    yield
    _random.clear_global_seed()


def pytest_collection_modifyitems(config, items):
    """The tests marked ``slow`` (multi-process, tens of seconds each) run first: with
    ``-n 2 --dist worksteal`` (the README's command) the workers end together on the short
    tests instead of one finishing a long one alone (CI time). Under ``--dist load`` one
    worker would get them all in its first chunk of consecutive tests."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
