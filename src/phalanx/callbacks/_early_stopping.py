"""``EarlyStopping``: stop ``fit`` when a watched value stops improving."""

from __future__ import annotations

import numpy as np

from . import _process
from ._args import check_count as _check_count
from ._callback import Logs
from ._monitor import MonitorCallback


class EarlyStopping(MonitorCallback):
    """Stops training when ``monitor`` has not improved for ``patience`` epochs.

    The semantics are Keras 3's: at each epoch end from ``start_from_epoch``
    on, a value better than the best so far by more than ``min_delta``
    becomes the best and resets the wait counter (when it also beats
    ``baseline``); otherwise, once ``wait >= patience`` (and not on the first
    epoch), ``model.stop_training`` is set. With ``restore_best_weights``,
    the weights of the best epoch are put back when training ends, whether
    or not training stopped early.

    Args:
        monitor: The value of the epoch logs to watch.
        min_delta: Least absolute change that counts as an improvement.
        patience: Epochs without improvement before stopping.
        verbose: 1 prints a line when stopping and when restoring weights.
        mode: ``"min"``, ``"max"``, or ``"auto"`` (inferred from the name:
            losses go down, accuracies up).
        baseline: A value to beat: until it is, the wait counter keeps
            counting from the first watched epoch.
        restore_best_weights: Restore the best epoch's weights at the end.
        start_from_epoch: Epochs to let pass before watching (warm-up).

    Raises:
        ValueError: ``mode`` is not one of the three, or ``patience`` or
            ``start_from_epoch`` is not a count; at the first epoch end, when
            ``mode="auto"`` cannot infer the direction of ``monitor``.

    Examples:
        >>> from phalanx.callbacks import EarlyStopping
        >>> stop = EarlyStopping(monitor="loss", patience=2)
        >>> class Model:
        ...     stop_training = False
        >>> stop.set_model(Model())
        >>> stop.on_train_begin()
        >>> for epoch, loss in enumerate([1.0, 0.5, 0.6, 0.7, 0.4]):
        ...     stop.on_epoch_end(epoch, {"loss": loss})
        ...     if stop.model.stop_training:
        ...         break
        >>> stop.stopped_epoch, stop.best
        (3, 0.5)
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = _check_count("EarlyStopping", "patience", patience)
        self.start_from_epoch = _check_count("EarlyStopping", "start_from_epoch", start_from_epoch)
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = 0
        self.best_weights: list[np.ndarray] | None = None

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Resets the counters, the best value (to ``None``, as Keras) and the saved weights.

        Instances are reusable: a second ``fit`` starts from no best value.
        """
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_epoch = 0
        self.best_weights = None
        self._warned_missing = False
        self._direction = None

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Updates the best value and the wait counter; sets ``model.stop_training``."""
        current = self._monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        self._resolve_direction()
        self.wait += 1
        improved = self._is_improvement(current, self.best)
        if self.restore_best_weights and (improved or self.best_weights is None):
            # Before any improvement the first watched epoch's weights count as the best.
            self.best_weights = [np.array(w) for w in self.model.get_weights()]
            self.best_epoch = epoch
        if improved:
            self.best = current
            self.best_epoch = epoch
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Reports the stop and restores the best weights when asked to."""
        if self.stopped_epoch > 0 and self.verbose > 0:
            _process.print_msg(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                _process.print_msg(
                    f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}."
                )
            self.model.set_weights(self.best_weights)
