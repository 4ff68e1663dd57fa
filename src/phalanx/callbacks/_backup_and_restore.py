"""``BackupAndRestore``: a ``fit`` that dies resumes where it stopped, bit-exactly."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Protocol

import numpy as np

from ..checkpoint import (
    Checkpoint,
    CheckpointManager,
    PreemptionCheckpointHandler,
    as_path,
    check_termination_config,
    is_checkpoint,
    is_remote,
)
from ..errors import CallbackArgumentError, CheckpointError, CheckpointMismatchError
from . import _process
from ._args import check_path
from ._callback import Callback, Logs
from ._step_counter import steps_done


class Resumable(Protocol):
    """What ``BackupAndRestore`` asks of its model (``phalanx.Model``; ``train``, a layer
    above, implements it)."""

    def _resume_restored(self) -> Any:
        """A checkpoint was just restored into the model: the next ``fit`` starts at its
        position (epoch, steps done in it), which this returns."""
        ...


def _is_checkpoint(path: str) -> bool:
    return is_checkpoint(path)


def _not_a_checkpoint(path: str) -> str:
    """Why the folder ``path``, under a backup's name, is no checkpoint."""
    try:
        entries = sorted(os.listdir(path))
    except OSError as error:
        return f"it cannot be read ({error})"
    if not entries:
        return "the folder is empty"
    return f"it holds {entries[:5]} but no checkpoint (no state.phalanx, no meta/metadata)"


class BackupAndRestore(Callback):
    """Backs up the whole training state during ``fit``; a new ``fit`` resumes from it.

    Keras's callback, exact: the backup is a ``phalanx.checkpoint`` checkpoint
    of the model's whole training state (weights, optimizer state, step, RNG
    key, metric accumulators) and of ``fit``'s position (epoch, steps done in
    it, and the input iterator's state). A ``fit`` started again with the same
    callback (after a crash, a kill, a preemption) skips the completed epochs
    and steps, mid-epoch included, and ends with the same weights, bit for
    bit, as a run never interrupted (same replica count; on another replica
    count, the same batches in the same order).

    Inputs: arrays resume anywhere (their order follows from the seed and the
    epoch); a phalanx ``Dataset`` (TFRecord pipelines included) resumes
    anywhere through its iterator state; a Python generator resumes at epoch
    boundaries only.

    Args:
      backup_dir: the folder of the backup (one checkpoint, replaced
        atomically at each save: a process killed while writing leaves the
        previous backup intact).
      save_freq: ``"epoch"`` (at each epoch end) or a number of training
        steps (when the step count reaches or passes a multiple of it; with
        ``steps_per_execution`` the check runs once per execution).
      delete_checkpoint: delete the backup when ``fit`` ends normally (its
        checkpoints, and ``backup_dir`` when nothing else is in it; Keras 3
        deletes ``backup_dir`` with whatever else it holds, tf_keras keeps
        other files, as phalanx).
      async_save: write the backup in background threads (``fit`` waits only
        for the copy off the devices, and for the previous write).
      save_before_preemption: on a termination notice to any process (SIGTERM;
        SIGUSR1 under Slurm; Google Compute Engine's metadata server), every
        process backs up after the execution in progress and exits with status
        42 (``phalanx.checkpoint.RESTARTABLE_EXIT_CODE``); the script started
        again resumes there (TensorFlow's argument of the same name).
      termination_config: a ``phalanx.checkpoint.TerminationConfig`` (a custom
        termination watcher, grace period, exit or save function) for the
        save before preemption; implies ``save_before_preemption=True``.

    Raises:
      ValueError: ``backup_dir`` is empty, not a path or a file, ``save_freq``
        is neither ``"epoch"`` nor a positive int, a flag is not a bool, or
        ``termination_config`` is not a ``TerminationConfig`` (a ``CheckpointError``).

    Examples:
      >>> import numpy as np, phalanx, tempfile
      >>> from phalanx import layers
      >>> model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
      >>> model.compile(optimizer="adam", loss="mse")
      >>> backup = phalanx.callbacks.BackupAndRestore(tempfile.mkdtemp(), save_freq=2)
      >>> history = model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=2, epochs=2,
      ...                     callbacks=[backup], verbose=0)
      >>> len(history.history["loss"])
      2
    """

    # Its batch hook saves the model's state together with the position that moves with it
    # (Model._position), which agree whichever execution has been dispatched: fit need not
    # stop its pipeline for it (_loop.may_act_per_batch).
    batch_hooks_read_only_logs = True

    def __init__(
        self,
        backup_dir: str | os.PathLike[str],
        save_freq: str | int = "epoch",
        delete_checkpoint: bool = True,
        *,
        async_save: bool = False,
        save_before_preemption: bool = False,
        termination_config: Any = None,
    ) -> None:
        super().__init__()
        backup_dir = check_path(
            "BackupAndRestore", "backup_dir", backup_dir, what="a folder", example="'backup'"
        )
        if save_freq != "epoch" and (
            isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1
        ):
            raise CallbackArgumentError(
                "BackupAndRestore: save_freq must be 'epoch' or a positive number of steps; "
                f"received save_freq={save_freq!r} ({type(save_freq).__name__})."
            )
        for name, value in (
            ("delete_checkpoint", delete_checkpoint),
            ("async_save", async_save),
            ("save_before_preemption", save_before_preemption),
        ):
            if not isinstance(value, bool | np.bool_):
                raise CallbackArgumentError(
                    f"BackupAndRestore: {name} must be True or False; received {value!r} "
                    f"({type(value).__name__})."
                )

        local = as_path(backup_dir, "BackupAndRestore")  # a missing protocol package fails here
        if not is_remote(local) and os.path.lexists(local) and not os.path.isdir(local):
            raise CallbackArgumentError(
                f"BackupAndRestore: backup_dir {backup_dir!r} is a file, not a folder; give the "
                "folder the backup goes in (created if missing)."
            )
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = bool(delete_checkpoint)
        self.async_save = bool(async_save)
        if termination_config is not None:
            check_termination_config(termination_config, "BackupAndRestore")
        self.termination_config = termination_config
        self.save_before_preemption = bool(save_before_preemption) or termination_config is not None
        self._manager: Any = None
        self._preemption: Any = None
        self._steps = 0  # training steps done (the model's step), counted on the host
        self._epoch_start = 0

    def _make_manager(self):
        checkpoint = Checkpoint(model=self.model, async_save=self.async_save)
        return CheckpointManager(
            self.backup_dir, max_to_keep=1, checkpoint=checkpoint, async_save=self.async_save
        )

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Restores the backup, if any, and tells ``fit`` where to resume."""
        self._manager = self._make_manager()
        restored = self._restore_intact()
        if restored is not None:
            model: Resumable = self.model
            position = model._resume_restored()  # fit starts at its epoch and step
            _process.print_msg(
                f"BackupAndRestore: resuming from {restored} (epoch {position.epoch + 1}, "
                f"{position.step} steps done in it)."
            )
        self._steps = self.model.optimizer.iterations if restored is not None else 0
        self._resumed_in_epoch = position.step if restored is not None else 0
        if self.save_before_preemption:
            self._preemption = PreemptionCheckpointHandler(
                self._manager, termination_config=self.termination_config
            )

    def _restore_intact(self) -> str | None:
        """Restores the newest intact backup; returns its path, or None when there is none.

        A backup that is damaged (a checkpoint whose CRCs or header fail, or a folder under a
        backup's name that holds no checkpoint: emptied, or cut short by a copy) is never
        skipped silently: an older intact one is restored and the message names the damaged
        one and why; with none intact, a ``CheckpointError`` says so (fit would otherwise
        start over at epoch 1). A damaged folder that is not a checkpoint is renamed aside
        (``<name>.damaged``) so that the next backup can take its number.
        """
        damaged: list[tuple[str, str]] = []
        for path, committed in self._candidates():
            if not committed:
                damaged.append((path, _not_a_checkpoint(path)))
                continue
            try:
                self._manager.checkpoint.restore(path)
            except CheckpointMismatchError:
                raise  # another model's backup: not damage, the user must act
            except CheckpointError as error:
                damaged.append((path, str(error)))
                continue
            if damaged:
                self._report_fallback(damaged, path)
            return path
        if damaged:
            raise CheckpointError(
                f"BackupAndRestore: no intact backup in {self.backup_dir!r}: "
                + "; ".join(f"{p} is damaged ({why})" for p, why in damaged)
                + ". fit would start over at epoch 1 without it. Restore the backup from a "
                "copy, or delete it to train from the start."
            )
        return None

    def _candidates(self) -> list[tuple[str, bool]]:
        """``(path, committed)`` of every backup, newest first: the committed checkpoints, and
        folders under a backup's exact name that hold none (local backups only; a URL's
        uncommitted upload is a save killed mid-way, which is no damage)."""
        committed = {path: True for path in self._manager.checkpoints}
        committed.update((path, False) for path in self._manager._uncommitted())
        numbers = {path: int(path.rsplit("_", 1)[1]) for path in committed}
        return sorted(committed.items(), key=lambda item: -numbers[item[0]])

    def _report_fallback(self, damaged: list[tuple[str, str]], restored: str) -> None:
        for path, why in damaged:
            aside = ""
            if os.path.isdir(path) and not _is_checkpoint(path) and _process.is_chief():
                os.rename(path, f"{path}.damaged")
                aside = f" (kept as {path}.damaged)"
            _process.print_msg(
                f"BackupAndRestore: the backup {path} is damaged{aside}: {why}. Falling back "
                f"to the previous intact backup {restored}."
            )

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Marks where the epoch's steps start in the step count."""
        self._epoch_start = self._steps - self._resumed_in_epoch
        self._resumed_in_epoch = 0

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Backs up when the step count reaches or passes a multiple of ``save_freq``, and
        before exiting when a process was told to stop (``save_before_preemption``)."""
        if self._preemption is not None:
            self._preemption.save_checkpoint_if_preempted()
        if self.save_freq == "epoch":
            return
        done = steps_done(batch, self.params.get("steps"))
        previous, self._steps = self._steps, self._epoch_start + done
        if self._steps // self.save_freq > previous // self.save_freq:
            self._save()

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Backs up at the epoch end when ``save_freq="epoch"``."""
        if self.save_freq == "epoch":
            self._save()

    def _save(self) -> None:
        if self._manager is None:
            raise CheckpointError(
                "BackupAndRestore saved before on_train_begin: pass it to fit(callbacks=[...])."
            )
        try:
            self._manager.save()  # raises a failed asynchronous save's error too
        except BaseException:
            self._close()  # fit ends with this error: no on_train_end will stop the threads
            raise

    def _release_after_error(self) -> None:
        """``fit`` raised: the SIGTERM handlers and the writer's thread are released."""
        self._close()

    def _close(self) -> None:
        """Stops the preemption handler and the manager's writer thread (the error is raised)."""
        preemption, manager, self._preemption, self._manager = (
            self._preemption,
            self._manager,
            None,
            None,
        )
        for stop in (preemption, manager):
            if stop is not None:
                with contextlib.suppress(Exception):
                    stop.close()

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Deletes the backup (``delete_checkpoint``) once training has ended normally."""
        if self._preemption is not None:
            self._preemption.close()
            self._preemption = None
        if self._manager is None:
            return
        manager, self._manager = self._manager, None
        try:
            manager.wait_until_finished()  # raises a failed asynchronous save's error
        finally:
            manager.close()  # stops the writer's thread, even then
        if self.delete_checkpoint and _process.is_chief():
            manager._remove_all()  # its checkpoints; other files in backup_dir stay
