"""``TerminateOnNaN``: stop ``fit`` when the loss becomes NaN or infinite."""

from __future__ import annotations

import math

from . import _process
from ._callback import Callback, Logs


class TerminateOnNaN(Callback):
    """Stops training at the first execution whose running loss is NaN or infinite.

    It checks ``logs["loss"]`` after every execution of steps (each
    ``on_train_batch_end``) and sets ``model.stop_training``; ``fit`` stops
    after that execution.

    Example:
        >>> from types import SimpleNamespace
        >>> from phalanx.callbacks import TerminateOnNaN
        >>> model = SimpleNamespace(stop_training=False)
        >>> guard = TerminateOnNaN()
        >>> guard.set_model(model)
        >>> guard.on_train_batch_end(4, {"loss": float("nan")})
        Batch 4: Invalid loss, terminating training
        >>> model.stop_training
        True
    """

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Sets ``model.stop_training`` when the loss is not finite."""
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            _process.print_msg(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True
