"""A ``CheckpointManager``'s numbered checkpoints in a local folder, and the policy of which to keep.

``<directory>/<name>_<n>`` are the checkpoints; each is written by
``_background.LocalWriter`` (phalanx's one file, or orbax for arrays split
over processes) in a temporary folder and renamed, so a folder under its
final name is committed. After each commit, process 0 deletes what
``to_delete`` names: checkpoints beyond the ``max_to_keep`` newest (except
multiples of ``keep_period``, kept forever: orbax's ``CheckpointManager``
semantics) and leftovers of saves killed before their rename
(``<name>_<n>.phalanx-tmp-*``, ``<name>_<n>.orbax-checkpoint-tmp-*``) numbered
below the newest. ``_remote.RemoteSteps`` applies the same policy to URLs; both
derive from ``Steps`` (the writer, numbering and the save in flight).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil

from ..errors import CheckpointError, CheckpointWriteError
from . import _background, _io
from ._file import TMP

log = logging.getLogger("phalanx")

#: What a save or a delete killed mid-way leaves after ``<name>_<n>``.
_LEFTOVERS = r"\.(?:phalanx-tmp-|orbax-checkpoint-tmp-)"


def to_delete(
    every: list[int], committed: list[int], max_to_keep: int | None, keep_period: int | None
) -> list[int]:
    """The numbers to delete once ``committed[-1]`` is committed.

    Args:
      every: the numbers found, committed or not.
      committed: the committed numbers, ascending.

    Examples:
      >>> to_delete([1, 2, 3, 4, 5], [1, 3, 4, 5], max_to_keep=2, keep_period=3)
      [2, 1]
    """
    if not committed:
        return []
    newest = committed[-1]
    stale = [n for n in every if n < newest and n not in committed]
    old = committed[:-max_to_keep] if max_to_keep else []
    return stale + [n for n in old if not (keep_period and n % keep_period == 0)]


@contextlib.contextmanager
def deleting_old(directory: str):
    """Runs the deletion of old checkpoints after a commit; its failure is a warning.

    The new checkpoint is committed: that save succeeded, and says so alike on every
    process (an error here would be raised on process 0 alone, at its next save, while
    the others wait for it in that save's agreement).
    """
    try:
        yield
    except Exception as error:
        log.warning(
            "CheckpointManager committed its new checkpoint but could not delete old ones in "
            "%r (%s: %s); they are deleted after a later save.",
            directory,
            type(error).__name__,
            error,
        )


class Steps:
    """What the local and remote step stores share: the writer, and the save in flight.

    Subclasses give ``path(number)``, ``_committed_numbers()`` (listed from the
    folder) and ``_delete_old()`` (run on process 0 after each commit).
    """

    def __init__(self, directory: str, name: str, *, max_to_keep, keep_period, writer):
        self.directory = directory
        self._name = name
        self._max_to_keep = max_to_keep
        self._keep_period = keep_period
        self._writer = writer
        self._pending: int | None = None

    def path(self, number: int) -> str:
        """Where checkpoint ``number`` is."""
        raise NotImplementedError

    def _committed_numbers(self) -> list[int]:
        raise NotImplementedError

    def _delete_old(self) -> None:
        raise NotImplementedError

    def all_steps(self) -> list[int]:
        """The committed numbers, and the one being saved in the background."""
        # Read "in flight" before listing: a save that ends in between is then listed.
        pending = self._pending if self._writer.pending is not None else None
        numbers = self._committed_numbers()
        return sorted({*numbers, pending}) if pending is not None else numbers

    def latest_step(self) -> int | None:
        """The newest number of ``all_steps``, or None."""
        numbers = self.all_steps()
        return numbers[-1] if numbers else None

    def uncommitted(self) -> list[int]:
        """Numbers whose folder has a checkpoint's exact name but holds none (damage);
        a remote store's uncommitted upload is a save killed mid-way: none here."""
        return []

    def save(self, number: int, arrays: dict, meta: dict) -> None:
        """Saves checkpoint ``number``; the old ones are deleted after it is committed."""
        self._pending = number
        self._writer.save(self.path(number), arrays, meta, after_commit=self._delete_old)

    def wait_until_finished(self) -> None:
        """Waits for the save in progress (and raises its error)."""
        self._writer.wait_until_finished()

    def close(self) -> None:
        """Finishes the pending save and stops the writer's threads."""
        self._writer.close()


class LocalSteps(Steps):
    """Numbered checkpoints in the local folder ``directory`` (module docs)."""

    def __init__(self, directory: str, name: str, *, max_to_keep, keep_period, async_save):
        if os.path.lexists(directory) and not os.path.isdir(directory):
            raise CheckpointError(
                f"CheckpointManager: directory {directory!r} is a file, not a folder. Give the "
                "folder its checkpoints go in (created if missing)."
            )
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise CheckpointWriteError(
                f"CheckpointManager could not create its directory {directory!r} "
                f"({type(error).__name__}: {error}). Give a folder you can write to."
            ) from error
        super().__init__(
            directory,
            name,
            max_to_keep=max_to_keep,
            keep_period=keep_period,
            writer=_background.LocalWriter(async_save),
        )
        # Only these are the manager's: other files named alike (ckpt_1.txt) are never deleted.
        self._entry = re.compile(rf"{re.escape(name)}_([0-9]+)(?:{_LEFTOVERS}.*)?", re.DOTALL)

    def path(self, number: int) -> str:
        """The path of checkpoint ``number``."""
        return os.path.join(self.directory, f"{self._name}_{number}")

    def _found(self) -> dict[int, list[str]]:
        """Every number found, with its entries (the checkpoint and any leftovers)."""
        try:
            entries = os.listdir(self.directory)
        except FileNotFoundError:
            return {}
        found: dict[int, list[str]] = {}
        for entry in entries:
            match = self._entry.fullmatch(entry)
            if match and os.path.isdir(os.path.join(self.directory, entry)):
                found.setdefault(int(match.group(1)), []).append(entry)
        return found

    def uncommitted(self) -> list[int]:
        """Numbers whose folder has a checkpoint's exact name but holds none (damage)."""
        found = self._found()
        named = [n for n, entries in found.items() if os.path.basename(self.path(n)) in entries]
        committed = set(self.all_steps())
        return sorted(n for n in named if n not in committed)

    def _committed(self, found: dict[int, list[str]]) -> list[int]:
        return sorted(n for n in found if _io.is_checkpoint(self.path(n)))

    def _committed_numbers(self) -> list[int]:
        return self._committed(self._found())

    def _delete_old(self) -> None:
        with deleting_old(self.directory):
            found = self._found()
            committed = self._committed(found)
            for number in to_delete(sorted(found), committed, self._max_to_keep, self._keep_period):
                for entry in found[number]:
                    _remove(os.path.join(self.directory, entry))

    def remove_all(self) -> None:
        """Deletes every checkpoint of this manager (and leftovers), then the folder if that
        leaves it empty; other files there stay."""
        for entries in self._found().values():
            for entry in entries:
                _remove(os.path.join(self.directory, entry))
        with contextlib.suppress(OSError):  # not empty: the user's files stay, and it with them
            os.rmdir(self.directory)


def _remove(path: str) -> None:
    """Deletes the folder ``path``, renamed first: a process killed while deleting leaves a
    leftover that no listing takes for a checkpoint."""
    gone = f"{path}{TMP}deleted"
    try:
        os.rename(path, gone)
    except OSError:
        gone = path
    shutil.rmtree(gone, ignore_errors=True)
