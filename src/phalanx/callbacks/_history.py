"""``History``: the per-epoch logs that ``fit`` returns."""

from __future__ import annotations

from typing import Any

from ._callback import Callback, Logs


class History(Callback):
    """Records every epoch's logs; ``fit`` returns it (``model.history``).

    ``fit`` adds one automatically. Each key of the epoch logs (``loss``,
    metrics, ``val_`` values, ``learning_rate`` when a callback added it)
    gets a list with one value per epoch in which it appeared.

    Attributes:
        history: ``{name: [value per epoch]}``.
        epoch: The 0-based indices of the epochs recorded.
        params: The run's parameters (``epochs``, ``steps``, ``verbose``).

    Examples:
        >>> from phalanx.callbacks import History
        >>> history = History()
        >>> history.on_train_begin()
        >>> history.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.6})
        >>> history.on_epoch_end(1, {"loss": 0.25, "val_loss": 0.4})
        >>> history.history["loss"], history.epoch
        ([0.5, 0.25], [0, 1])
    """

    # Its batch hooks only record the logs they are given: fit may run ahead of it.
    batch_hooks_read_only_logs = True

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[Any]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Starts a fresh record."""
        self.history = {}
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Appends this epoch's values and sets ``model.history`` to this object."""
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
