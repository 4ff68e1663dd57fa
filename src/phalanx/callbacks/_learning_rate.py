"""Reading and setting the optimizer's learning rate, for the callbacks that need it."""

from __future__ import annotations

from typing import Any


def get_learning_rate(owner: str, model: Any) -> float:
    """``model.optimizer.learning_rate`` as a float; TypeError naming ``owner`` otherwise."""
    try:
        return float(model.optimizer.learning_rate)
    except TypeError as error:
        raise TypeError(f"{owner} needs a float learning rate to read and set: {error}") from error


def set_learning_rate(model: Any, value: float) -> None:
    """Sets ``model.optimizer.learning_rate`` to ``value``."""
    model.optimizer.learning_rate = float(value)


def try_learning_rate(model: Any) -> float | None:
    """The learning rate when it is a plain number, else ``None`` (a schedule, no optimizer)."""
    try:
        return float(model.optimizer.learning_rate)
    except (AttributeError, TypeError, ValueError):
        return None
