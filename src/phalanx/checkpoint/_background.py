"""Asynchronous saves: the device-to-host copy on the caller's thread, the rest in one background thread.

orbax's ``AsyncCheckpointer`` returns once the arrays are on the host, but
before that it prepares the directories, starts about nine threads and an
asyncio loop, and registers futures, all on the caller's thread: ~25 ms per
save on the seeds' MLP (2 shared CPU cores), against a 0.4 MiB copy of 2 ms.
In ``fit`` that time is taken from training (the next execution waits for
it). So phalanx copies the arrays to host memory itself (``host_arrays``:
the transfers of all arrays are started together, then awaited, as orbax
does) and runs orbax's *synchronous* save of those numpy arrays, and for a
URL the upload and commit, in one background thread (``Background``). The
next save, ``wait_until_finished`` and ``close`` wait for it and raise its
error.

Arrays split over several processes (``shard_parameters=True`` with several
processes) cannot be copied whole to one host: ``host_arrays`` returns None
and the caller falls back to orbax's ``AsyncCheckpointer``, which copies each
process's shards.

The numpy copies share the device buffers where the backend allows (CPU):
while a save holds them, JAX does not donate those buffers to the next
execution (it copies instead), so what is written is what was saved.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from ..errors import CheckpointError


def host_arrays(arrays: dict) -> dict | None:
    """A host (numpy) copy of the pytree ``arrays``, or None when an array is split over processes.

    Example:
      >>> import jax.numpy as jnp
      >>> host = host_arrays({"model": {"a0": jnp.ones(2)}})
      >>> type(host["model"]["a0"]).__name__, host["model"]["a0"].tolist()
      ('ndarray', [1.0, 1.0])
    """
    import jax
    import numpy as np

    leaves = jax.tree.leaves(arrays)
    arrays_of_jax = [a for a in leaves if isinstance(a, jax.Array)]
    if any(not (a.is_fully_addressable or a.is_fully_replicated) for a in arrays_of_jax):
        return None
    for a in arrays_of_jax:  # start every transfer before waiting for the first
        if a.is_fully_addressable:
            a.copy_to_host_async()
    return jax.tree.map(np.asarray, arrays)


class Background:
    """Runs jobs one at a time in a background thread (``phalanx._threads``), started once.

    The thread is started by the first job and waits for the next on a queue
    (starting a thread per save cost the caller a few ms under load); ``close``
    or the interpreter's exit stops it.

    Args:
      name: the thread's name.
    """

    def __init__(self, name: str):
        self._name = name
        self._thread: threading.Thread | None = None
        self._jobs: queue.Queue = queue.Queue()
        self._done = threading.Event()
        self._done.set()
        self._error: BaseException | None = None
        self.stop = threading.Event()

    @property
    def busy(self) -> bool:
        """Whether a job is queued or running."""
        return not self._done.is_set()

    def run(self, job: Callable[..., Any], *args: Any) -> None:
        """Waits for the previous job (raising its error), then starts ``job(*args)``."""
        from .. import _threads

        self.wait()
        self._done.clear()
        if self._thread is None or not self._thread.is_alive():
            self._thread = _threads.start_thread(
                self._loop, name=self._name, stop=self.stop, wake=lambda: self._jobs.put(None)
            )
        self._jobs.put((job, args))

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                item = self._jobs.get(timeout=1.0)
            except queue.Empty:
                continue
            if item is None:  # woken to stop
                continue
            job, args = item
            try:
                job(*args)
            except BaseException as error:  # raised on the caller's thread by wait()
                self._error = error
            finally:
                self._done.set()
        self._done.set()  # a job still queued at exit is dropped

    def join(self) -> None:
        """Waits for the queued or running job, keeping its error for ``wait``."""
        self._done.wait()

    def wait(self) -> None:
        """Waits for the queued or running job.

        Raises:
          CheckpointError: the job failed (its error is the cause).
        """
        self.join()
        error, self._error = self._error, None
        if isinstance(error, CheckpointError):
            raise error
        if error is not None:
            raise CheckpointError(
                f"An asynchronous checkpoint save failed before its commit "
                f"({type(error).__name__}: {error}); the previous checkpoint is still the latest."
            ) from error

    def close(self) -> None:
        """Waits for the job (raising its error), then stops the thread."""
        try:
            self.wait()
        finally:
            self.stop.set()
            self._jobs.put(None)
            if self._thread is not None:
                self._thread.join()
                self._thread = None
            self.stop = threading.Event()  # usable again: a later job starts a new thread


class Checkpointers:
    """orbax's ``Checkpointer`` and ``AsyncCheckpointer`` of one writer, each made once."""

    def __init__(self):
        self._made: dict[tuple[bool, bool], Any] = {}

    def get(self, async_save: bool, *, solo: bool = False):
        """orbax's checkpointer (async or not; ``solo``: of a process writing alone, see
        ``_io.checkpointer``) of composite checkpoints, made on first use."""
        from . import _io

        key = (async_save, solo)
        if key not in self._made:
            self._made[key] = _io.checkpointer(async_save, solo=solo)
        return self._made[key]

    def wait_until_finished(self) -> None:
        """Waits for orbax's asynchronous save, if one was started."""
        if (True, False) in self._made:
            self._made[(True, False)].wait_until_finished()

    def close(self) -> None:
        """Stops orbax's threads."""
        made, self._made = self._made, {}
        for checkpointer in made.values():
            checkpointer.close()


class LocalWriter:
    """Writes checkpoints to local paths; with ``async_save``, in the background.

    Args:
      async_save: ``save`` returns once the arrays are on the host (module docs).
    """

    def __init__(self, async_save: bool):
        self._async = async_save
        self._orbax = Checkpointers()
        self._background = Background("phalanx-checkpoint-write")

    def save(self, path: str, arrays: dict, meta: dict) -> None:
        """Writes ``arrays`` and ``meta`` as the checkpoint at ``path``, replacing one there.

        Raises:
          CheckpointError: the previous asynchronous save failed.
        """
        from . import _io

        self.wait_until_finished()
        host = host_arrays(arrays) if self._async else None
        if host is not None:
            self._background.run(self._write, path, _io.save_args(host, meta))
        else:
            args = _io.save_args(arrays, meta)
            self._orbax.get(self._async).save(path, args=args, force=True)

    def _write(self, path: str, args: Any) -> None:
        self._orbax.get(False).save(path, args=args, force=True)

    def wait_until_finished(self) -> None:
        """Waits for the save in progress; raises its error if it failed."""
        self._background.wait()
        self._orbax.wait_until_finished()

    def close(self) -> None:
        """Finishes the pending save, then stops orbax's threads."""
        try:
            self._background.close()
        finally:
            self._orbax.close()
