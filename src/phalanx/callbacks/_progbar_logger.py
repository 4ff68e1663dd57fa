"""``ProgbarLogger``: Keras's progress bar for ``fit``, ``evaluate`` and ``predict``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from . import _process
from ._callback import Callback, Logs
from ._progbar import Progbar
from ._step_counter import steps_done


class ProgbarLogger(Callback):
    """Prints the progress bar and the metrics, as Keras does, on process 0 only.

    ``fit`` adds one when ``verbose`` is not 0. With ``verbose=1`` each epoch
    shows ``Epoch 1/10`` (when there is more than one epoch) and then a bar:

        59/59 ━━━━━━━━━━━━━━━━━━━━ 1s 9ms/step - accuracy: 0.9712 - loss: 0.0931 - val_accuracy: 0.9650 - val_loss: 0.1120

    On a terminal (or a notebook) the bar is one line that rich redraws at
    most every 50 ms, moving once per execution of ``steps_per_execution``
    steps. When the output is not a terminal (CI logs, a file, a pipe) only
    the finished line of each epoch is printed, with no carriage returns.
    ``verbose=2`` prints one summary line per epoch
    (``59/59 - 1s - 9ms/step - accuracy: ...``). During ``fit`` the
    validation run is silent; ``evaluate`` and ``predict`` get a bar of their
    own.

    Args:
        console: The rich console to draw on; by default a console on the
            current ``sys.stdout``, looked up when each bar starts.
        clock: Monotonic seconds; replaceable in tests.

    Examples:
        >>> import io
        >>> from rich.console import Console
        >>> from phalanx.callbacks import ProgbarLogger
        >>> out = io.StringIO()
        >>> bar = ProgbarLogger(console=Console(file=out), clock=lambda: 0.0)
        >>> bar.set_params({"epochs": 2, "steps": 4, "verbose": 1})
        >>> bar.on_train_begin()
        >>> bar.on_epoch_begin(0)
        >>> bar.on_train_batch_end(3, {"loss": 0.5})
        >>> bar.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.625})
        >>> print(out.getvalue(), end="")
        Epoch 1/2
        4/4 ━━━━━━━━━━━━━━━━━━━━ 0s 0s/step - loss: 0.5000 - val_loss: 0.6250
    """

    # Its batch hooks only record the logs they are given: fit may run ahead of it.
    batch_hooks_read_only_logs = True

    def __init__(
        self,
        *,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._console = console
        self._clock = clock
        self.verbose: int = 1
        self.epochs: int = 1
        self.target: int | None = None
        self.seen = 0
        self.progbar: Progbar | None = None
        self._called_in_fit = False

    def set_params(self, params: dict[str, Any]) -> None:
        """Reads ``verbose`` (``"auto"`` means 1), ``epochs`` and ``steps``."""
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose)
        self.epochs = params.get("epochs") or 1
        self.target = params.get("steps")

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Marks that the bar runs inside ``fit``: validation stays silent."""
        self._called_in_fit = True

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Closes a bar left open and leaves ``fit`` mode."""
        self._close()
        self._called_in_fit = False

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Starts a new bar, after ``Epoch e/E`` when there are several epochs."""
        self._start_bar()
        if self.verbose and self.epochs > 1 and self.progbar is not None:
            self.progbar.print_line(Text(f"Epoch {epoch + 1}/{self.epochs}"))

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Moves the bar to ``batch + 1`` steps done."""
        self._update(batch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Ends the bar with the epoch's logs (validation values included)."""
        self._finalize(logs)

    def on_test_begin(self, logs: Logs | None = None) -> None:
        """Starts a bar for ``evaluate`` (not for the validation inside ``fit``)."""
        if not self._called_in_fit:
            self._start_bar()

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Moves the ``evaluate`` bar."""
        if not self._called_in_fit:
            self._update(batch, logs)

    def on_test_end(self, logs: Logs | None = None) -> None:
        """Ends the ``evaluate`` bar with its results."""
        if not self._called_in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs: Logs | None = None) -> None:
        """Starts a bar for ``predict``."""
        self._start_bar()

    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Moves the ``predict`` bar (predictions are not shown)."""
        self._update(batch, None)

    def on_predict_end(self, logs: Logs | None = None) -> None:
        """Ends the ``predict`` bar."""
        self._finalize(None)

    def _start_bar(self) -> None:
        self._close()
        self.seen = 0
        if not self.verbose or not _process.is_chief():
            return
        self.progbar = Progbar(
            self.target, verbose=self.verbose, console=self._console, clock=self._clock
        )

    def _update(self, batch: int, logs: Logs | None) -> None:
        self.seen = steps_done(batch, self.target)  # steps are 0-based
        if self.progbar is not None and self.verbose == 1:
            self.progbar.update(self.seen, logs, finalize=False)

    def _finalize(self, logs: Logs | None) -> None:
        if self.target is None:  # unknown steps: the first epoch tells them
            self.target = self.seen
        if self.progbar is None:
            return
        if self.progbar.target is None:
            self.progbar.target = self.seen
        self.progbar.update(self.progbar.target, logs, finalize=True)
        self.progbar = None

    def _close(self) -> None:
        if self.progbar is not None:
            self.progbar.close()
            self.progbar = None
