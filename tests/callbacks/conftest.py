"""Fixtures of the callback tests (the fakes live in ``callback_fakes``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from callback_fakes import FakeModel

from phalanx.callbacks import _process


@pytest.fixture
def model() -> FakeModel:
    """A fresh fake model with learning rate 0.1."""
    return FakeModel()


@pytest.fixture
def as_process(monkeypatch) -> Callable[[int], None]:
    """Makes the callbacks believe they run in process ``index``."""

    def set_index(index: int) -> None:
        monkeypatch.setattr(_process, "process_index", lambda: index)

    return set_index
