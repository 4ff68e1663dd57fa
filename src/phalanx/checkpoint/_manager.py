"""``CheckpointManager``: numbered checkpoints in one directory, old ones deleted.

TensorFlow's ``tf.train.CheckpointManager`` names, with orbax's
``CheckpointManager`` policy (``max_to_keep``, ``keep_period``): a local
``directory`` is served by ``_steps.LocalSteps``, which writes each checkpoint
into a temporary directory and renames it when complete (the commit: a
process killed while writing leaves the previous checkpoints intact, and
``latest_checkpoint`` never names a half-written one), deletes old ones after
the new one is committed, and writes asynchronously when asked. A
``directory`` that is a URL (``gs://``, ``s3://``, ``memory://`` ...) is served
by ``_remote.RemoteSteps``, with the same policy: each checkpoint is staged
locally, uploaded and committed by a marker object written last; only
committed ones are listed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CheckpointError
from . import _io, _objects, _remote, _steps
from ._checkpoint import Checkpoint

log = logging.getLogger("phalanx")


def _positive_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CheckpointError(
            f"CheckpointManager: {name} must be a positive int or None, got {value!r} "
            f"({type(value).__name__})."
        )
    return value


_UNSET: Any = object()


def _check_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise CheckpointError(
            f"{where}: checkpoint_name must be a simple name such as 'ckpt' (letters, digits, "
            f"underscores), got {name!r} ({type(name).__name__})."
        )


def _arguments(args: tuple, directory: Any, max_to_keep: Any, checkpoint: Any) -> tuple:
    """``(directory, max_to_keep, checkpoint)`` from phalanx's order ``(directory, max_to_keep)``
    or TensorFlow's ``(checkpoint, directory, max_to_keep)``, positional or by keyword."""
    tf_order = bool(args) and isinstance(args[0], Checkpoint)
    names = ("checkpoint", "directory", "max_to_keep") if tf_order else ("directory", "max_to_keep")
    if len(args) > len(names):
        order = ", ".join(names)
        raise CheckpointError(
            f"CheckpointManager({order}) takes {len(names)} positional arguments, got "
            f"{len(args)}; pass the others by keyword."
        )
    given = {"directory": directory, "max_to_keep": max_to_keep, "checkpoint": checkpoint}
    unset = {"directory": None, "max_to_keep": _UNSET, "checkpoint": None}
    for name, value in zip(names, args, strict=False):
        if given[name] is not unset[name]:
            raise CheckpointError(
                f"CheckpointManager got {name} twice: positionally and as {name}=. Give it once."
            )
        given[name] = value
    if isinstance(given["max_to_keep"], Checkpoint):
        raise CheckpointError(
            "CheckpointManager got a Checkpoint as max_to_keep: phalanx's order is "
            "CheckpointManager(directory, max_to_keep, checkpoint=...); TensorFlow's "
            "CheckpointManager(checkpoint, directory, max_to_keep). Pass checkpoint= by keyword."
        )
    if given["directory"] is None:
        raise CheckpointError(
            "CheckpointManager needs a directory: CheckpointManager('ckpts', max_to_keep=3, "
            "checkpoint=checkpoint) or TensorFlow's CheckpointManager(checkpoint, 'ckpts', 3)."
        )
    keep = 5 if given["max_to_keep"] is _UNSET else given["max_to_keep"]
    return given["directory"], keep, given["checkpoint"]


class CheckpointManager:
    """Keeps the last ``max_to_keep`` checkpoints of a ``Checkpoint`` in ``directory``.

    Checkpoints are ``<directory>/<checkpoint_name>_<n>``. ``save()`` numbers
    them with the checkpoint's save counter (or ``checkpoint_number``). The
    TensorFlow argument order ``CheckpointManager(checkpoint, directory,
    max_to_keep)`` is accepted too, each positional or by keyword.

    Args:
      directory: the folder of the checkpoints (created if missing).
      max_to_keep: how many recent checkpoints to keep (None: all).
      checkpoint: the ``Checkpoint`` to save and restore.
      keep_every_n_steps: also keep, forever, each checkpoint whose number is
        a multiple of this (TensorFlow's ``keep_checkpoint_every_n_hours``,
        counted in checkpoint numbers).
      save_interval_steps: ``save(checkpoint_number=n)`` skips unless ``n`` is at
        least this far past the last saved number (TensorFlow's
        ``checkpoint_interval``); ``check_interval=False`` saves anyway.
      async_save: write in background threads (``save`` returns once the arrays
        are off the devices; the next save waits for the previous one).
      checkpoint_name: the prefix of the checkpoint directories.
      init_fn: called by ``restore_or_initialize`` when there is no checkpoint.

    Raises:
      CheckpointError: an argument has the wrong type or value.

    Examples:
      >>> import numpy as np, phalanx, tempfile
      >>> from phalanx import layers
      >>> model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
      >>> model.compile(optimizer="sgd", loss="mse")
      >>> _ = model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)
      >>> ckpt = phalanx.checkpoint.Checkpoint(model=model)
      >>> manager = phalanx.checkpoint.CheckpointManager(tempfile.mkdtemp(), 2, checkpoint=ckpt)
      >>> for _ in range(3):
      ...     _ = manager.save()
      >>> [p.rsplit("_", 1)[1] for p in manager.checkpoints]
      ['2', '3']
      >>> manager.restore_or_initialize() == manager.latest_checkpoint
      True
    """

    def __init__(
        self,
        *args: Any,
        directory: Any = None,
        max_to_keep: Any = _UNSET,
        checkpoint: Checkpoint | None = None,
        keep_every_n_steps: int | None = None,
        save_interval_steps: int | None = None,
        async_save: bool = False,
        checkpoint_name: str = "ckpt",
        init_fn: Callable[[], Any] | None = None,
    ):
        directory, max_to_keep, checkpoint = _arguments(args, directory, max_to_keep, checkpoint)
        if not isinstance(checkpoint, Checkpoint):
            raise CheckpointError(
                "CheckpointManager needs checkpoint=Checkpoint(...) (what to save), got "
                f"{type(checkpoint).__name__}: CheckpointManager(directory, max_to_keep=3, "
                "checkpoint=phalanx.checkpoint.Checkpoint(model=model))."
            )
        self.directory = _io.as_path(directory, "CheckpointManager")
        self._max_to_keep = _positive_or_none(max_to_keep, "max_to_keep")
        keep = _positive_or_none(keep_every_n_steps, "keep_every_n_steps")
        self._interval = _positive_or_none(save_interval_steps, "save_interval_steps")
        _check_name(checkpoint_name, "CheckpointManager")
        if not isinstance(async_save, bool):
            raise CheckpointError(
                f"CheckpointManager: async_save must be True or False, got {async_save!r} "
                f"({type(async_save).__name__})."
            )
        if init_fn is not None and not callable(init_fn):
            raise CheckpointError(
                f"CheckpointManager: init_fn must be a function of no arguments (called when "
                f"there is no checkpoint) or None, got {init_fn!r} ({type(init_fn).__name__}). "
                "Pass the function itself, not its result."
            )
        self.checkpoint = checkpoint
        self._init_fn = init_fn
        steps = _remote.RemoteSteps if _io.is_remote(self.directory) else _steps.LocalSteps
        self._manager = steps(
            self.directory,
            checkpoint_name,
            max_to_keep=self._max_to_keep,
            keep_period=keep,
            async_save=async_save,
        )
        self._last_saved = self._manager.latest_step()

    # -- reading ------------------------------------------------------------------

    def _path(self, number: int) -> str:
        return self._manager.path(number)

    @property
    def checkpoints(self) -> list[str]:
        """The paths of the kept checkpoints, oldest first."""
        return [self._path(n) for n in sorted(self._manager.all_steps())]

    def _uncommitted(self) -> list[str]:
        """The paths of folders under a checkpoint's exact name that hold none (local
        folders only): damage that ``BackupAndRestore`` reports and sets aside."""
        return [self._path(n) for n in self._manager.uncommitted()]

    @property
    def latest_checkpoint(self) -> str | None:
        """The path of the newest committed checkpoint, or None."""
        step = self._manager.latest_step()
        return None if step is None else self._path(step)

    # -- writing ------------------------------------------------------------------

    def save(self, checkpoint_number: int | None = None, check_interval: bool = True):
        """Saves a new checkpoint; returns its path, or None when the interval skipped it.

        Args:
          checkpoint_number: the number in the directory name; it must grow from
            save to save. Default: one above both the checkpoint's save counter
            and the newest checkpoint in the directory. (TensorFlow uses the
            counter alone, so a fresh process there overwrites ``ckpt-1`` of an
            earlier run; phalanx never writes over a checkpoint it did not number.)
          check_interval: honour ``save_interval_steps``.

        Raises:
          CheckpointError: the number is not a non-negative int, or not above
            the newest checkpoint's.
        """
        if not isinstance(check_interval, bool):
            raise CheckpointError(
                f"CheckpointManager.save: check_interval must be True or False, got "
                f"{check_interval!r} ({type(check_interval).__name__})."
            )
        ckpt = self.checkpoint
        self._manager.wait_until_finished()  # the previous save, and its error
        latest = self._manager.latest_step()
        if checkpoint_number is None:
            number = max(ckpt.save_counter, -1 if latest is None else latest) + 1
        else:
            number = checkpoint_number

        if isinstance(number, bool) or not isinstance(number, int | np.integer) or number < 0:
            raise CheckpointError(
                f"CheckpointManager.save: checkpoint_number must be a non-negative int (the "
                f"training step), got {checkpoint_number!r} ({type(checkpoint_number).__name__}); "
                "or leave it out to number checkpoints 1, 2, 3 ..."
            )
        number = int(number)
        if latest is not None and number <= latest:
            raise CheckpointError(
                f"CheckpointManager.save: checkpoint_number {number} is not above the newest "
                f"checkpoint's ({latest}) in {self.directory!r}. Number checkpoints by a "
                "growing count (the training step), or leave it out."
            )
        if (
            check_interval
            and self._interval is not None
            and self._last_saved is not None
            and number - self._last_saved < self._interval
        ):
            return None
        counter, ckpt.save_counter = ckpt.save_counter, number
        try:
            arrays, entries = _objects.collect(ckpt._objects, ckpt._kinds)
            self._manager.save(number, arrays, ckpt._meta(entries))
        except BaseException:
            ckpt.save_counter = counter  # a save that failed moves nothing
            raise
        self._last_saved = number
        return self._path(number)

    def restore_or_initialize(self) -> str | None:
        """Restores the newest checkpoint and returns its path; else calls ``init_fn``.

        Returns:
          The path restored, or None when there was none (``init_fn`` ran, if given).
        """
        path = self.latest_checkpoint
        if path is None:
            if self._init_fn is not None:
                self._init_fn()
            return None
        self.wait_until_finished()
        self.checkpoint.restore(path)
        return path

    def wait_until_finished(self) -> None:
        """Waits until an asynchronous save is committed.

        Raises:
          CheckpointError: an asynchronous save failed before its commit.
        """
        self._manager.wait_until_finished()

    def close(self) -> None:
        """Finishes pending saves and stops the manager's threads."""
        self._manager.close()

    def _remove_all(self) -> None:
        """Deletes this manager's checkpoints, and its directory when nothing else is in it
        (``BackupAndRestore(delete_checkpoint=True)``); other files there stay."""
        self._manager.remove_all()

    def __repr__(self) -> str:
        return f"CheckpointManager({self.directory!r}, {len(self.checkpoints)} checkpoint(s))"


def latest_checkpoint(directory: Any, checkpoint_name: str = "ckpt") -> str | None:
    """The newest committed checkpoint in ``directory``, or None (TensorFlow's name).

    It finds a ``CheckpointManager``'s ``<checkpoint_name>_<n>`` and
    ``Checkpoint.save(os.path.join(directory, checkpoint_name))``'s
    ``<checkpoint_name>-<n>``: the highest ``n`` (on a tie, the most recently
    written, on local disks). ``directory`` may be a URL.

    Examples:
      >>> import tempfile
      >>> latest_checkpoint(tempfile.mkdtemp()) is None
      True
    """
    text = _io.as_path(directory, "latest_checkpoint")
    if not isinstance(checkpoint_name, str) or not checkpoint_name or "/" in checkpoint_name:
        raise CheckpointError(
            f"latest_checkpoint: checkpoint_name must be the prefix of the checkpoints' names "
            f"('ckpt' for ckpt_3 or ckpt-3), a non-empty str without '/', got "
            f"{checkpoint_name!r} ({type(checkpoint_name).__name__})."
        )
    found = []  # (number, mtime, name)
    if _io.is_remote(text):
        for rank, separator in enumerate(("-", "_")):  # a tie goes to the manager's
            for n in _remote.numbered(text, checkpoint_name, separator=separator):
                found.append((n, rank, f"{checkpoint_name}{separator}{n}"))
        return _remote.join(text, max(found)[2]) if found else None
    root = Path(text)
    if not root.is_dir():
        return None
    for entry in os.listdir(root):
        for separator in ("_", "-"):
            prefix, _, number = entry.rpartition(separator)
            if prefix == checkpoint_name and number.isdigit() and _io.is_checkpoint(root / entry):
                found.append((int(number), (root / entry).stat().st_mtime_ns, entry))
    return str(root / max(found)[2]) if found else None
