"""What the monitoring callbacks share: the direction of a metric, improvement, missing values.

``EarlyStopping``, ``ReduceLROnPlateau`` and ``ModelCheckpoint`` watch one
value of the epoch logs. As in Keras 3, ``mode="auto"`` infers the direction
from the name: losses and errors go down, accuracies and other scores go up,
and a metric object on ``model.metrics`` that says its ``direction``
(``"up"``/``"down"``) settles it for custom names.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import CallbackArgumentError
from ._callback import Callback, Logs

MODES = ("auto", "min", "max")

_DOWN_NAMES = frozenset(
    {
        "mse", "mae", "mape", "msle", "rmse", "huber", "logcosh", "log_cosh", "hinge",
        "squared_hinge", "categorical_hinge", "kld", "kl_divergence", "poisson",
        "false_positives", "false_negatives",
    }
)  # fmt: skip
_DOWN_SUFFIXES = ("loss", "crossentropy", "error", "divergence")
_UP_PREFIXES = (
    "auc", "precision", "recall", "f1", "fbeta", "iou", "mean_iou", "r2",
    "sensitivity", "specificity", "true_positives", "true_negatives",
)  # fmt: skip


def check_mode(owner: str, mode: Any) -> str:
    """Returns ``mode`` when it is one of ``auto``/``min``/``max``.

    Another string is what Keras 3 warns about and replaces by ``"auto"``
    (``"ModelCheckpoint mode 'unknown' is unknown, fallback to auto mode."``);
    phalanx does the same. Anything but a string raises ValueError.
    """
    if not isinstance(mode, str):
        raise CallbackArgumentError(
            f"{owner}: mode must be 'auto', 'min' or 'max'; received mode={mode!r}. "
            "Use 'min' for losses and errors, 'max' for accuracies and scores."
        )
    if mode not in MODES:
        warnings.warn(
            f"{owner} mode '{mode}' is unknown, fallback to auto mode. "
            "Pass mode='min' for losses and errors, 'max' for accuracies and scores.",
            stacklevel=4,
        )
        return "auto"
    return mode


def check_monitor(owner: str, monitor: Any) -> str:
    """Returns ``monitor`` when it is a non-empty string, else raises TypeError."""
    if not isinstance(monitor, str) or not monitor:
        raise CallbackArgumentError(
            f"{owner}: monitor must be the name of a value in the epoch logs such as "
            f"'val_loss'; received {monitor!r} ({type(monitor).__name__})."
        )
    return monitor


def infer_mode(monitor: str, model: Any = None) -> str | None:
    """``"min"``, ``"max"`` or ``None`` (unknown) for the value named ``monitor``."""
    name = monitor.removeprefix("val_")
    metrics = []
    for metric in getattr(model, "metrics", None) or ():  # compile_metrics holds the objects
        metrics.extend(getattr(metric, "metrics", None) or (metric,))
    for metric in metrics:
        if getattr(metric, "name", None) == name:
            direction = getattr(metric, "direction", getattr(metric, "_direction", None))
            if direction in ("up", "down"):
                return "max" if direction == "up" else "min"
    if name in _DOWN_NAMES or name.endswith(_DOWN_SUFFIXES):
        return "min"
    if "acc" in name or name.startswith(_UP_PREFIXES):
        return "max"
    return None


class MonitorCallback(Callback):
    """Base of the callbacks that watch one value of the logs for improvement.

    Args:
        monitor: The name in the logs to watch.
        mode: ``"auto"``, ``"min"`` or ``"max"``.
        min_delta: Least change (absolute) that counts as an improvement.
        initial_best: The best value before the first epoch. ``None`` (the
            default) means none yet, as Keras 3: the first value watched is
            always an improvement, even NaN.
    """

    def __init__(
        self, monitor: str, mode: str, *, min_delta: float = 0.0, initial_best: float | None = None
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.monitor = check_monitor(owner, monitor)
        self.mode = check_mode(owner, mode)
        self.min_delta = abs(float(min_delta))
        self._initial_best = initial_best
        self._direction: str | None = None  # "min"/"max" once resolved
        self.best: float | None = initial_best
        self._warned_missing = False

    def _resolve_direction(self, *, fallback: str | None = None) -> str:
        """The direction to watch in; raises ValueError when auto cannot tell."""
        if self._direction is None:
            direction = self.mode if self.mode != "auto" else infer_mode(self.monitor, self.model)
            if direction is None and fallback is None:
                raise ValueError(
                    f"{type(self).__name__}: cannot tell whether monitor={self.monitor!r} "
                    "should go up or down. Pass mode='max' (higher is better) or mode='min'."
                )
            self._direction = direction or fallback
        return self._direction

    def _reset_best(self) -> None:
        self.best = None if self._initial_best is None else float(self._initial_best)

    def _is_improvement(self, value: float, reference: float | None) -> bool:
        """Whether ``value`` beats ``reference`` by more than ``min_delta`` (``None``: yes)."""
        if reference is None:
            return True
        if self._direction == "min":
            return value + self.min_delta < reference
        return value - self.min_delta > reference

    def _monitor_value(self, logs: Logs | None) -> float | None:
        """The watched value, or ``None`` with one warning naming the keys there are."""
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            if not self._warned_missing:
                self._warned_missing = True
                available = ", ".join(sorted(logs)) or "(none)"
                hint = (
                    " (val_ values need validation data)" if self.monitor.startswith("val_") else ""
                )
                warnings.warn(
                    f"{type(self).__name__} is conditioned on {self.monitor!r}, which is not in "
                    f"the logs{hint}. Available: {available}.",
                    stacklevel=3,
                )
            return None
        return float(value)
