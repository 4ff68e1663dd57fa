"""Strategies for the conformance suite: every kind, on 1, 2 and 8 devices."""

import jax
import pytest

import phalanx


def _make(kind: str, n: int) -> phalanx.Strategy:
    if kind == "one_device":
        return phalanx.OneDeviceStrategy(jax.devices()[0])
    if kind == "multi_worker":
        return phalanx.MultiWorkerMirroredStrategy()
    if kind == "tpu_sim":
        return phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    return phalanx.MirroredStrategy(jax.devices()[:n])


STRATEGY_PARAMS = [
    ("one_device", 1),
    ("mirrored", 1),
    ("mirrored", 2),
    ("mirrored", 8),
    ("multi_worker", 8),
    ("tpu_sim", 8),
]


@pytest.fixture(params=STRATEGY_PARAMS, ids=[f"{k}-{n}" for k, n in STRATEGY_PARAMS])
def strategy(request) -> phalanx.Strategy:
    """Each strategy kind a conformance test must pass on."""
    return _make(*request.param)


@pytest.fixture
def mirrored8() -> phalanx.Strategy:
    return phalanx.MirroredStrategy()
