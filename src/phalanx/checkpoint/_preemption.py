"""``PreemptionCheckpointHandler``: on a termination signal, save at the same step everywhere, exit.

TensorFlow's ``tf.distribute.experimental.PreemptionCheckpointHandler``, for
phalanx. A job about to be preempted receives SIGTERM (Slurm with
``--signal``, Kubernetes before a pod is evicted, ``phalanx launch`` when it
ends a job); the handler records it, and at the next step boundary where it
is asked (``run``, ``save_checkpoint_if_preempted``, or
``BackupAndRestore(save_before_preemption=True)`` after each execution of
``fit``) every process learns whether *any* process received it. If one did,
all save a checkpoint at that same step and exit with
``RESTARTABLE_EXIT_CODE`` (42, TensorFlow's), which tells a supervisor to
start the job again; the restarted job resumes from the checkpoint.

Agreement goes through the cluster's key-value store
(``phalanx.cluster._agree``: one small exchange per boundary, no device
collective, a deadline on every wait), so processes that are between
executions in step stay in step. With one process it costs nothing.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import CheckpointError

log = logging.getLogger("phalanx")

#: The exit status of a process that saved on preemption and should be restarted.
RESTARTABLE_EXIT_CODE = 42


class PreemptionCheckpointHandler:
    """Saves a checkpoint and exits, on every process, when any process is told to stop.

    Args:
      checkpoint: a ``CheckpointManager`` (the save is numbered as its next
        checkpoint) or a ``Checkpoint`` (then give ``checkpoint_dir``).
      checkpoint_dir: where a ``Checkpoint`` is saved (``<dir>/ckpt-<n>``).
      signals: the signals that mean "about to be preempted" (default SIGTERM).
      exit_code: the status of the exit after the save (default 42).
      exit_fn: called instead of ``sys.exit(exit_code)`` (tests, custom exits).
      timeout_s: the deadline of each agreement between processes.

    Raises:
      CheckpointError: ``checkpoint`` is neither a ``CheckpointManager`` nor a
        ``Checkpoint`` with ``checkpoint_dir``.

    Example:
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
        *,
        signals: tuple[int, ...] = (signal.SIGTERM,),
        exit_code: int = RESTARTABLE_EXIT_CODE,
        exit_fn: Callable[[int], Any] | None = None,
        timeout_s: float | None = None,
    ):
        from ._checkpoint import Checkpoint
        from ._manager import CheckpointManager

        if isinstance(checkpoint, CheckpointManager):
            self._save = checkpoint.save
            self._wait = checkpoint.wait_until_finished
        elif isinstance(checkpoint, Checkpoint) and checkpoint_dir is not None:
            from pathlib import Path

            prefix = str(Path(checkpoint_dir) / "ckpt")
            self._save = lambda: checkpoint.save(prefix)
            self._wait = checkpoint.wait_until_finished
        else:
            raise CheckpointError(
                "PreemptionCheckpointHandler needs a CheckpointManager, or a Checkpoint and "
                f"checkpoint_dir=; got {type(checkpoint).__name__} and checkpoint_dir="
                f"{checkpoint_dir!r}."
            )
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise CheckpointError(f"exit_code must be an int, got {exit_code!r}.")
        self._exit_code = exit_code
        self._exit_fn = exit_fn or sys.exit
        self._timeout_s = timeout_s
        self._received = threading.Event()
        self._rounds = None
        self._checks = 0
        self.total_run_calls = 0
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in signals:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        else:
            log.warning(
                "phalanx: PreemptionCheckpointHandler made outside the main thread cannot "
                "install signal handlers; call notify() when a termination notice arrives."
            )

    def _on_signal(self, signum, frame) -> None:
        del frame
        if not self._received.is_set():
            log.warning(
                "phalanx: received %s: saving a checkpoint at the next step boundary, then "
                "exiting with status %d (restartable).",
                signal.Signals(signum).name,
                self._exit_code,
            )
        self._received.set()

    def notify(self) -> None:
        """Records a termination notice read some other way (a cloud metadata watch)."""
        self._received.set()

    @property
    def received(self) -> bool:
        """Whether this process received a termination signal or notice."""
        return self._received.is_set()

    def _any_received(self) -> bool:
        import jax

        if jax.process_count() == 1:
            return self.received
        from ..cluster import _agree, watchdog

        if self._rounds is None:
            self._rounds = _agree.new_round()
        tag = f"preempt/{self._rounds}/{self._checks}"
        self._checks += 1
        timeout = self._timeout_s if self._timeout_s is not None else watchdog.timeout
        return any(_agree.all_have(tag, self.received, timeout_s=timeout))

    def save_checkpoint_if_preempted(self) -> None:
        """At a step boundary: when any process was told to stop, all save here and exit.

        Every process must call it at the same boundaries (as every worker runs
        the same loop).
        """
        if not self._any_received():
            return
        path = self._save()
        self._wait()
        log.warning(
            "phalanx: saved %s before preemption; exiting with status %d.", path, self._exit_code
        )
        self.close()
        self._exit_fn(self._exit_code)

    def run(self, distributed_train_function: Callable, *args: Any, **kwargs: Any) -> Any:
        """Runs one step (``distributed_train_function(*args, **kwargs)``), then saves and
        exits if a process was told to stop. Returns the step's result."""
        result = distributed_train_function(*args, **kwargs)
        self.total_run_calls += 1
        self.save_checkpoint_if_preempted()
        return result

    def close(self) -> None:
        """Puts the previous signal handlers back."""
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}
