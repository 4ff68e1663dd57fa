"""``ReduceLROnPlateau``: lower the learning rate when a watched value stalls."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import CallbackArgumentError
from . import _process
from ._args import check_count as _check_count
from ._callback import Logs
from ._learning_rate import get_learning_rate, set_learning_rate
from ._monitor import MonitorCallback


class ReduceLROnPlateau(MonitorCallback):
    """Multiplies the learning rate by ``factor`` after ``patience`` epochs without improvement.

    The semantics are Keras 3's. At each epoch end the current learning rate
    is added to the logs as ``learning_rate`` (so ``History``, ``CSVLogger``
    and the progress bar after this callback show it). An epoch that beats
    the best value by more than ``min_delta`` resets the wait counter;
    otherwise, outside the cooldown, the counter grows and at ``patience`` the
    rate becomes ``max(lr * factor, min_lr)`` (unless already at
    ``min_lr``), the counter restarts and ``cooldown`` epochs follow in which
    the counter stays at 0.

    Args:
        monitor: The value of the epoch logs to watch.
        factor: The multiplier, in ``[0, 1)``.
        patience: Epochs without improvement before a reduction.
        verbose: 1 prints a line at each reduction.
        mode: ``"min"``, ``"max"``, or ``"auto"`` (inferred from the name;
            a name it cannot place is minimized, as Keras does).
        min_delta: Least absolute change that counts as an improvement.
        cooldown: Epochs after a reduction in which no wait is counted.
        min_lr: The learning rate never goes below this.

    Raises:
        ValueError: ``factor >= 1``, an unknown ``mode``, or a negative count.
        TypeError: (in ``fit``, at the first reduction) the optimizer's
            learning rate is a schedule, which can be read but not set.

    Examples:
        >>> from types import SimpleNamespace
        >>> from phalanx.callbacks import ReduceLROnPlateau
        >>> model = SimpleNamespace(optimizer=SimpleNamespace(learning_rate=0.1))
        >>> reduce = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
        >>> reduce.set_model(model)
        >>> reduce.on_train_begin()
        >>> for epoch, loss in enumerate([1.0, 1.0, 1.0]):
        ...     reduce.on_epoch_end(epoch, {"loss": loss})
        >>> model.optimizer.learning_rate
        0.025
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
    ) -> None:
        super().__init__(monitor, mode, min_delta=min_delta)
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not 0 <= factor < 1:
            raise CallbackArgumentError(
                f"ReduceLROnPlateau: factor must be in [0, 1) (new_lr = lr * factor); "
                f"received factor={factor!r}. Pass e.g. factor=0.5 to halve the rate."
            )
        self.factor = float(factor)
        self.patience = _check_count("ReduceLROnPlateau", "patience", patience)
        self.cooldown = _check_count("ReduceLROnPlateau", "cooldown", cooldown)
        self.min_lr = float(min_lr)
        self.verbose = verbose
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Resets the wait and cooldown counters and the best value (to ``None``, as Keras)."""
        self.wait = 0
        self.cooldown_counter = 0
        self._warned_missing = False
        self._direction = None
        self._resolve_direction(fallback="min")
        self._reset_best()

    def in_cooldown(self) -> bool:
        """Whether the epochs after the last reduction are still cooling down."""
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Adds ``learning_rate`` to the logs and reduces it after a plateau."""
        if self._direction is None:  # used without on_train_begin
            self.on_train_begin()
        if logs is None:
            logs = {}
        logs["learning_rate"] = get_learning_rate("ReduceLROnPlateau", self.model)
        current = self._monitor_value(logs)
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                self._reduce(epoch)

    def _reduce(self, epoch: int) -> None:
        old_lr = get_learning_rate("ReduceLROnPlateau", self.model)
        if old_lr <= np.float32(self.min_lr):
            return
        new_lr = max(old_lr * self.factor, self.min_lr)
        set_learning_rate("ReduceLROnPlateau", self.model, new_lr)
        if self.verbose > 0:
            _process.print_msg(
                f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}."
            )
        self.cooldown_counter = self.cooldown
        self.wait = 0
