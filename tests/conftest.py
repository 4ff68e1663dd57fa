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
