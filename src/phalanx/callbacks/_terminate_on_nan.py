"""``TerminateOnNaN``: stop ``fit`` when the loss becomes NaN or infinite."""

from __future__ import annotations

import math

from ..errors import CallbackArgumentError
from . import _process
from ._callback import Callback, Logs


class TerminateOnNaN(Callback):
    """Stops training at the first execution whose running loss is NaN or infinite.

    It checks ``logs["loss"]`` after every execution of steps (each
    ``on_train_batch_end``) and sets
    ``model.stop_training``; ``fit`` stops after that execution and calls
    ``on_train_end`` as usual. With ``raise_error=True`` it raises
    ``RuntimeError`` instead, as Keras 3: ``fit`` ends with that error and
    no callback's ``on_train_end`` runs (a ``BackupAndRestore`` keeps its
    backup to resume from).

    Args:
        raise_error: ``False`` (default): stop gracefully; ``True``: raise.

    Raises:
        RuntimeError: (in ``fit``, with ``raise_error=True``) the loss is NaN
            or infinite: ``"NaN or Inf loss encountered at batch 4. ..."``.

    Examples:
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

    def __init__(self, raise_error: bool = False) -> None:
        super().__init__()
        if not isinstance(raise_error, bool):
            raise CallbackArgumentError(
                f"TerminateOnNaN: raise_error must be True or False; received {raise_error!r} "
                f"({type(raise_error).__name__})."
            )
        self.raise_error = raise_error

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Sets ``model.stop_training`` (or raises) when the loss is not finite."""
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(float(loss)):
            return
        if self.raise_error:
            raise RuntimeError(
                f"NaN or Inf loss encountered at batch {batch}. Loss value: {loss}. "
                "Terminating training immediately."
            )
        _process.print_msg(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
