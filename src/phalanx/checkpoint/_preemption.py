"""``PreemptionCheckpointHandler``: on a termination notice, save at the same step everywhere, exit.

TensorFlow's ``tf.distribute.experimental.PreemptionCheckpointHandler``, for
phalanx. A job about to be preempted is told so: a signal (SIGTERM from
Kubernetes, ``phalanx launch`` and most schedulers; SIGUSR1 from Slurm's
``--signal``), or a notice read by a watcher polled in a background thread
(Google Compute Engine's metadata server, or ``TerminationConfig``'s
``termination_watcher_fn``; ``_termination.py``). The handler records it,
and at the next step boundary where it is asked (``run``,
``save_checkpoint_if_preempted``, or ``BackupAndRestore(
save_before_preemption=True)`` after each execution of ``fit``) every
process learns whether *any* process was told. If one was, all save a
checkpoint at that same step and exit with ``RESTARTABLE_EXIT_CODE`` (42,
TensorFlow's), which tells a supervisor to start the job again; the
restarted job resumes from the checkpoint. With a ``grace_period``, they
save at once, train on, and save again and exit when the time left nears
three times what a save and a step take.

Agreement goes through the cluster's key-value store (``_kv.gather``: one
small exchange per boundary, no device collective, a deadline on every
wait), so processes that are between executions in step stay in step. With
one process it costs nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import jax

from ..cluster import _agree, _kv, watchdog
from ..errors import CheckpointError
from ..io import gfile
from . import _io
from ._checkpoint import Checkpoint
from ._io import as_path
from ._manager import CheckpointManager
from ._termination import (
    WATCH_INTERVAL_S,
    TerminationConfig,
    Watch,
    default_watcher,
    termination_signals,
)

log = logging.getLogger("phalanx")

#: The exit status of a process that saved on preemption and should be restarted.
RESTARTABLE_EXIT_CODE = 42
#: TensorFlow's margin: exit when the time left is this many (save + step) times.
GRACE_BUFFER_FACTOR = 3

_NONE, _NOTICE, _EXIT = "", "n", "x"  # a process's vote at a boundary
_clock = time.monotonic  # the grace period's clock (tests replace it)


class PreemptionCheckpointHandler:
    """Saves a checkpoint and exits, on every process, when any process is told to stop.

    Args:
      checkpoint: a ``CheckpointManager`` (the save is numbered as its next
        checkpoint) or a ``Checkpoint`` (then give ``checkpoint_dir``).
      checkpoint_dir: where a ``Checkpoint`` is saved (``<dir>/ckpt-<n>``).
      termination_config: a ``TerminationConfig`` (watcher, exit, grace period,
        save function); default: the platform's (signals, and on Google
        Compute Engine its metadata server's preemption notice).
      signals: the signals that mean "about to be preempted", as numbers or
        names (default SIGTERM, and SIGUSR1 under Slurm: ``sbatch
        --signal=USR1@<seconds>``).
      exit_code: the status of the exit after the save (default 42).
      exit_fn: called with ``exit_code`` instead of ``sys.exit`` (tests, custom
        exits); ``termination_config.exit_fn`` is the no-argument alternative.
      timeout_s: the deadline of each agreement between processes.

    Raises:
      CheckpointError: ``checkpoint`` is neither a ``CheckpointManager`` nor a
        ``Checkpoint`` with ``checkpoint_dir``; ``termination_config`` is not a
        ``TerminationConfig``; both ``exit_fn`` and ``termination_config.exit_fn``
        are given; a signal that is unknown or cannot be caught.

    Examples:
      >>> import tempfile, phalanx
      >>> from phalanx import layers
      >>> model = phalanx.Sequential([layers.Input(shape=(2,)), layers.Dense(1)])
      >>> model.compile(optimizer="sgd", loss="mse")
      >>> manager = phalanx.checkpoint.CheckpointManager(
      ...     tempfile.mkdtemp(), checkpoint=phalanx.checkpoint.Checkpoint(model=model))
      >>> handler = phalanx.checkpoint.PreemptionCheckpointHandler(manager)
      >>> handler.run(lambda: 1)  # no signal: runs the step, saves nothing
      1
      >>> handler.close()
    """

    def __init__(
        self,
        checkpoint: Any,
        checkpoint_dir: Any = None,
        termination_config: TerminationConfig | None = None,
        *,
        signals: Any = None,
        exit_code: int = RESTARTABLE_EXIT_CODE,
        exit_fn: Callable[[int], Any] | None = None,
        timeout_s: float | None = None,
    ):
        self._save, self._wait = _saver(checkpoint, checkpoint_dir)
        config = _check_config(termination_config, exit_fn)
        if (
            isinstance(exit_code, bool)
            or not isinstance(exit_code, int)
            or not 0 <= exit_code < 256
        ):
            raise CheckpointError(
                f"PreemptionCheckpointHandler: exit_code must be a process exit status, an int "
                f"in [0, 255], got {exit_code!r} ({type(exit_code).__name__}). Default: "
                f"{RESTARTABLE_EXIT_CODE} (RESTARTABLE_EXIT_CODE), which phalanx's launcher restarts."
            )
        if exit_fn is not None and not callable(exit_fn):
            raise CheckpointError(
                f"PreemptionCheckpointHandler: exit_fn must be a function of the exit code, got "
                f"{exit_fn!r} ({type(exit_fn).__name__}). Pass the function itself."
            )
        if timeout_s is not None and (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, int | float)
            or not 0 < timeout_s < float("inf")
        ):
            raise CheckpointError(
                f"PreemptionCheckpointHandler: timeout_s must be a positive number of seconds "
                f"(each agreement's deadline) or None (the cluster watchdog's), got "
                f"{timeout_s!r} ({type(timeout_s).__name__})."
            )
        sigs = termination_signals(signals)
        self._config = config
        self._exit_code = exit_code
        self._exit_fn = exit_fn or sys.exit
        self._timeout_s = timeout_s
        self._received = threading.Event()
        self._received_at: float | None = None
        self._countdown_saved = False  # the grace period's first save is done
        self._save_s = 0.0  # how long the last save took
        self._last_boundary: float | None = None
        self._rounds = None
        self._checks = 0
        self.total_run_calls = 0
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in sigs:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        else:
            log.warning(
                "phalanx: PreemptionCheckpointHandler made outside the main thread cannot "
                "install signal handlers; call notify() when a termination notice arrives."
            )
        watcher = config.termination_watcher_fn or default_watcher()
        self._watch = None if watcher is None else Watch(watcher, self._on_notice, WATCH_INTERVAL_S)

    def _on_signal(self, signum, frame) -> None:
        del frame
        self._record(signal.Signals(signum).name)

    def _on_notice(self) -> None:
        self._record("a termination notice")

    def _record(self, what: str) -> None:
        if not self._received.is_set():
            self._received_at = _clock()
            log.warning(
                "phalanx: received %s: saving a checkpoint at the next step boundary, then "
                "exiting with status %d (restartable).",
                what,
                self._exit_code,
            )
        self._received.set()

    def notify(self) -> None:
        """Records a termination notice read some other way (a cloud metadata watch)."""
        self._record("a termination notice")

    @property
    def received(self) -> bool:
        """Whether this process received a termination signal or notice."""
        return self._received.is_set()

    def _vote(self, now: float, interval: float) -> str:
        """This process's say at a boundary: nothing, a notice (grace time left), or exit."""
        if not self.received:
            return _NONE
        grace = self._config.grace_period
        if grace <= 0:
            return _EXIT
        left = self._received_at + grace - now
        margin = GRACE_BUFFER_FACTOR * (self._save_s + interval)
        return _EXIT if left <= margin else _NOTICE

    def _agree(self, vote: str) -> str:
        """Every process's votes joined: exit if any says exit, else notice if any says so."""
        if jax.process_count() == 1:
            votes = [vote]
        else:
            if self._rounds is None:
                self._rounds = _agree.new_round()
            tag = f"preempt/{self._rounds}/{self._checks}"
            self._checks += 1
            timeout = self._timeout_s if self._timeout_s is not None else watchdog.timeout
            what = "whether they were told to stop"
            votes = _kv.gather(tag, vote, timeout_s=timeout, what=what)
        if _EXIT in votes:
            return _EXIT
        return _NOTICE if _NOTICE in votes else _NONE

    def save_checkpoint_if_preempted(self) -> None:
        """At a step boundary: when any process was told to stop, all save here and exit.

        With a ``grace_period``, the first such boundary saves and training goes
        on; the boundary where some process's time left nears the margin saves
        again and exits. Every process must call it at the same boundaries (as
        every worker runs the same loop).
        """
        now = _clock()
        interval = 0.0 if self._last_boundary is None else now - self._last_boundary
        self._last_boundary = now
        decision = self._agree(self._vote(now, interval))
        if decision == _NONE:
            return
        if decision == _NOTICE:
            if not self._countdown_saved:
                path = self._save_now()
                self._countdown_saved = True
                log.warning(
                    "phalanx: saved %s on a termination notice; training on within the grace "
                    "period of %.0f s.",
                    path,
                    self._config.grace_period,
                )
            return
        path = self._save_now()
        log.warning(
            "phalanx: saved %s before preemption; exiting with status %d.", path, self._exit_code
        )
        self.close()
        if self._config.exit_fn is not None:
            self._config.exit_fn()
        else:
            self._exit_fn(self._exit_code)

    def _save_now(self) -> Any:
        start = _clock()
        path = self._config.save_fn() if self._config.save_fn is not None else self._save()
        self._wait()
        self._save_s = _clock() - start
        return path

    def run(self, distributed_train_function: Callable, *args: Any, **kwargs: Any) -> Any:
        """Runs one step (``distributed_train_function(*args, **kwargs)``), then saves and
        exits if a process was told to stop. Returns the step's result."""
        result = distributed_train_function(*args, **kwargs)
        self.total_run_calls += 1
        self.save_checkpoint_if_preempted()
        return result

    def close(self) -> None:
        """Puts the previous signal handlers back and stops the termination watcher."""
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}
        if self._watch is not None:
            self._watch.stop()
            self._watch = None


def _saver(checkpoint: Any, checkpoint_dir: Any) -> tuple[Callable, Callable]:
    """``(save, wait)`` of a ``CheckpointManager``, or of a ``Checkpoint`` in ``checkpoint_dir``."""
    if isinstance(checkpoint, CheckpointManager):
        return checkpoint.save, checkpoint.wait_until_finished
    if isinstance(checkpoint, Checkpoint) and checkpoint_dir is not None:
        text = as_path(checkpoint_dir, "PreemptionCheckpointHandler's checkpoint_dir")
        if not _io.is_remote(text) and os.path.lexists(text) and not os.path.isdir(text):
            raise CheckpointError(  # now, not when the notice comes and the save must succeed
                f"PreemptionCheckpointHandler: checkpoint_dir {text!r} is a file, not a folder. "
                "Give the folder its checkpoints go in (created if missing)."
            )
        prefix = gfile.join(os.fspath(checkpoint_dir), "ckpt")  # a URL stays a URL
        return (lambda: checkpoint.save(prefix)), checkpoint.wait_until_finished
    raise CheckpointError(
        "PreemptionCheckpointHandler needs a CheckpointManager, or a Checkpoint and "
        f"checkpoint_dir=; got {type(checkpoint).__name__} and checkpoint_dir="
        f"{checkpoint_dir!r}."
    )


def check_termination_config(config: Any, owner: str) -> TerminationConfig:
    """``config``, or the default ``TerminationConfig()`` for None; else ``CheckpointError``."""
    if config is None:
        return TerminationConfig()
    if not isinstance(config, TerminationConfig):
        raise CheckpointError(
            f"{owner}(termination_config=...) must be a phalanx.checkpoint.TerminationConfig, "
            f"got {config!r} ({type(config).__name__}); build one, e.g. "
            "TerminationConfig(termination_watcher_fn=my_fn, grace_period=30)."
        )
    return config


def _check_config(config: Any, exit_fn: Any) -> TerminationConfig:
    config = check_termination_config(config, "PreemptionCheckpointHandler")
    if exit_fn is not None and config.exit_fn is not None:
        raise CheckpointError(
            "PreemptionCheckpointHandler got exit_fn= and termination_config.exit_fn: give one."
        )
    return config
