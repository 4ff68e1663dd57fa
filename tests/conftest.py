"""Test set-up: JAX sees 8 simulated CPU devices, set before JAX starts.

Tests that need 1 or 2 devices build their strategies on a subset
(``MirroredStrategy(devices=jax.devices()[:2])``).
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

import jax  # noqa: E402
import pytest  # noqa: E402

assert jax.device_count() == 8, f"conftest wanted 8 CPU devices, JAX sees {jax.devices()}"


@pytest.fixture
def devices():
    """The 8 simulated CPU devices."""
    return jax.devices()


@pytest.fixture
def _fail_missing_testdata():
    from tests_support import ALLOW_MISSING, TFRECORD_VECTORS

    pytest.fail(
        f"The shared test data is not at {TFRECORD_VECTORS}: clone phalanx beside ../shared "
        f"(as CI does), set PHALANX_SHARED=/path/to/shared, or {ALLOW_MISSING}=1 to skip."
    )
