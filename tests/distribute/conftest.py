"""Strategies for the conformance suite: every kind, on 1, 2 and 8 devices."""

import jax
import pytest

import phalanx


def _make(kind: str, n: int) -> phalanx.Strategy:
    if kind == "one_device":
        return phalanx.OneDeviceStrategy(jax.devices()[0])
    return phalanx.MirroredStrategy(jax.devices()[:n])


STRATEGY_PARAMS = [("one_device", 1), ("mirrored", 1), ("mirrored", 2), ("mirrored", 8)]


@pytest.fixture(params=STRATEGY_PARAMS, ids=[f"{k}-{n}" for k, n in STRATEGY_PARAMS])
def strategy(request) -> phalanx.Strategy:
    """Each strategy kind a conformance test must pass on."""
    return _make(*request.param)


@pytest.fixture
def mirrored8() -> phalanx.Strategy:
    return phalanx.MirroredStrategy()
