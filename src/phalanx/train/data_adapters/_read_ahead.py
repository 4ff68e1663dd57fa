"""Reading the next epoch's input ahead, while this epoch's last executions run.

Each epoch of a streamed input (``_adapter.IterableAdapter``) is prepared by a
background thread (``data._prefetch.background``) one execution ahead. Without
more, the first execution of every epoch is prepared only when the epoch
starts, while the devices wait: with ``steps_per_execution=50`` that is 50
batches of pipeline work per epoch with nothing to compute.

So, when another epoch of ``fit`` follows and the input's next pass does not
depend on when it is read (a phalanx ``Dataset``: its pass is chosen by the
epoch number; or its iterator continued across epochs with
``steps_per_epoch``), the thread that prepared an epoch's last execution
starts the next epoch's thread (``NextEpoch``) once it is done. That thread
prepares the next epoch's *first* execution only, and waits at a gate until
``fit`` asks for that epoch (``adopt``): so a run that stops (EarlyStopping,
``stop_training``, an error) has read at most one execution more than it
used, and ``drop`` stops and joins the thread. The batches, their order, the
saved input positions and the warnings are those of the epoch read when it
starts: the next epoch is read by the same code, after the same adapter
state, only earlier; a warning that its input ran out is given when the epoch
is adopted (never for an epoch that is dropped). One-shot inputs
(generators, iterators) are never read ahead; neither is ``validation_data``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ...data import background

JOIN_S = 10.0  # how long ``drop`` waits for the thread to finish the batch it reads


class NextEpoch:
    """One epoch's executions, read ahead in a background thread that waits after the first."""

    def __init__(self, epoch: int, warn: Callable[[], None]):
        self.epoch = epoch
        self._warn = warn
        self._lock = threading.Lock()
        self._open = threading.Event()
        self._dropped = False
        self._warnings = 0
        self.feed: Any = None

    def start(self, executions: Iterator) -> None:
        """Starts preparing ``executions`` (its first one, until ``adopt``)."""
        self.feed = background(self._gated(executions), size=1)
        self.feed.start()

    def _gated(self, executions: Iterator) -> Iterator:
        for ex in executions:
            yield ex
            if not self._wait():
                return

    def _wait(self) -> bool:
        """Waits until the epoch is adopted (True) or dropped or stopped (False)."""
        while not self._open.wait(0.1):
            if self.feed.stop.is_set():
                return False
        return not self._dropped

    def warn(self) -> None:
        """The input ran out: warns now if the epoch is adopted, else when it is."""
        with self._lock:
            if not self._open.is_set():
                self._warnings += 1
                return
        self._warn()

    def adopt(self):
        """The epoch's executions (a ``background`` iterator); the thread reads on."""
        with self._lock:
            self._open.set()
            n, self._warnings = self._warnings, 0
        for _ in range(n):
            self._warn()
        return self.feed

    def drop(self) -> None:
        """Stops the thread and waits for it (``JOIN_S`` at most); what it read is dropped."""
        with self._lock:
            self._dropped = True
            self._open.set()
        self.feed.close()
        if self.feed.thread is not None:
            self.feed.thread.join(JOIN_S)


@contextlib.contextmanager
def reading_ahead(adapter, epochs: int):
    """Lets ``adapter`` read each next epoch ahead up to epoch ``epochs - 1`` (``fit``'s loop).

    On leaving (the last epoch, a stop, an error) a read-ahead not used is dropped.
    """
    if not hasattr(adapter, "drop_read_ahead"):  # arrays: nothing is streamed
        yield
        return
    adapter.epochs = epochs
    try:
        yield
    finally:
        adapter.epochs = None
        adapter.drop_read_ahead()
