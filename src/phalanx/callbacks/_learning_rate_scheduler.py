"""``LearningRateScheduler``: set the learning rate from a function of the epoch."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable

import numpy as np

from ..errors import CallbackArgumentError
from . import _process
from ._callback import Callback, Logs
from ._learning_rate import get_learning_rate, set_learning_rate


def _takes_lr(schedule: Callable[..., float]) -> bool:
    """Whether ``schedule`` accepts ``(epoch, lr)``; Keras also allows ``schedule(epoch)``."""
    try:
        parameters = inspect.signature(schedule).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume the documented form
        return True
    positional = 0
    for p in parameters:
        if p.kind is p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to ``schedule(epoch, lr)``.

    ``epoch`` is 0-based and ``lr`` the current rate (a one-argument
    ``schedule(epoch)`` is accepted too, as Keras does). The rate in force is
    added to the epoch logs as ``learning_rate``. The optimizer must have a
    float learning rate, not a schedule of its own.

    Args:
        schedule: ``schedule(epoch: int, lr: float) -> float``.
        verbose: 1 prints the new rate at each epoch.

    Raises:
        TypeError: ``schedule`` is not callable.
        ValueError: (in ``fit``) ``schedule`` returned something that is not a number.

    Examples:
        >>> from types import SimpleNamespace
        >>> from phalanx.callbacks import LearningRateScheduler
        >>> model = SimpleNamespace(optimizer=SimpleNamespace(learning_rate=0.1))
        >>> halve_after_1 = LearningRateScheduler(lambda epoch, lr: lr if epoch < 1 else lr / 2)
        >>> halve_after_1.set_model(model)
        >>> for epoch in range(3):
        ...     halve_after_1.on_epoch_begin(epoch)
        >>> model.optimizer.learning_rate
        0.025
    """

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        if not callable(schedule):
            raise CallbackArgumentError(
                "LearningRateScheduler: schedule must be a function schedule(epoch, lr) -> lr; "
                f"received {schedule!r} ({type(schedule).__name__})."
            )
        self.schedule = schedule
        self.verbose = verbose
        self._takes_lr = _takes_lr(schedule)

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Sets the learning rate for this epoch."""
        if self._takes_lr:
            lr = get_learning_rate("LearningRateScheduler", self.model)
            new_lr = self.schedule(epoch, lr)
        else:
            new_lr = self.schedule(epoch)
        if isinstance(new_lr, bool) or not isinstance(
            new_lr, (numbers.Real, np.ndarray, np.generic)
        ):
            raise ValueError(
                f"LearningRateScheduler: schedule({epoch}, lr) must return a float; "
                f"received {new_lr!r} ({type(new_lr).__name__})."
            )
        set_learning_rate("LearningRateScheduler", self.model, float(new_lr))
        if self.verbose > 0:
            _process.print_msg(
                f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(new_lr)}."
            )

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Adds ``learning_rate`` to the epoch logs."""
        if logs is not None:
            logs["learning_rate"] = get_learning_rate("LearningRateScheduler", self.model)
