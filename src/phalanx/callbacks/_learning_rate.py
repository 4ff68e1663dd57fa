"""Reading and setting the optimizer's learning rate, for the callbacks that need it."""

from __future__ import annotations

from typing import Any


def get_learning_rate(owner: str, model: Any) -> float:
    """``model.optimizer.learning_rate`` as a float; TypeError naming ``owner`` otherwise."""
    try:
        return float(model.optimizer.learning_rate)
    except TypeError as error:
        raise TypeError(f"{owner} needs a float learning rate to read and set: {error}") from error


def set_learning_rate(owner: str, model: Any, value: float) -> None:
    """Sets ``model.optimizer.learning_rate`` to ``value``; TypeError naming ``owner`` otherwise.

    A schedule's rate can be read (its current value, as in Keras) but not
    set: the model refuses, and the message says which callback tried.
    """
    try:
        model.optimizer.learning_rate = float(value)
    except TypeError as error:
        raise TypeError(f"{owner} needs a float learning rate to read and set: {error}") from error


def try_learning_rate(model: Any) -> float | None:
    """The learning rate as a float, else ``None`` (no optimizer, or a rate it cannot read)."""
    try:
        return float(model.optimizer.learning_rate)
    except (AttributeError, TypeError, ValueError):
        return None
