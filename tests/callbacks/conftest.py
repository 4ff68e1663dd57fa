"""Fixtures of the callback tests: a real compiled model, playing another process."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from real_fit import shared_model

import phalanx
from phalanx.callbacks import _process


@pytest.fixture
def model() -> phalanx.Model:
    """A compiled model (``steps_per_execution=1``) with its first weights and rate 0.1."""
    return shared_model(1)


@pytest.fixture
def make_model() -> Callable[[int], phalanx.Model]:
    """``make_model(steps_per_execution)``: a compiled model as the ``model`` fixture gives."""
    return shared_model


@pytest.fixture
def as_process(monkeypatch) -> Callable[[int], None]:
    """Makes the callbacks believe they run in process ``index``."""

    def set_index(index: int) -> None:
        monkeypatch.setattr(_process, "process_index", lambda: index)

    return set_index
