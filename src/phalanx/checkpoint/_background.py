"""Writing checkpoints: the device-to-host copy on the caller's thread, the write in the background.

phalanx copies the arrays to host memory itself (``host_arrays``: the
transfers of all arrays are started together, then awaited) and writes
them as phalanx's one file (``_file``), in ``LocalWriter`` at once or, with
``async_save``, in one background thread (``Background``); the next save,
``wait_until_finished`` and ``close`` wait for it and raise its error. The
training loop is held only for the copy (~1 ms for the seeds' MLP). orbax's
``AsyncCheckpointer`` held it ~25 ms per save (it prepares directories,
starts about nine threads and an asyncio loop on the caller's thread), and
its write cost ~19 ms of CPU that a 2-core machine takes from training
(``bench/checkpoint_writers.py``).

With several processes, process 0 writes (every array is whole on its host)
and all processes then agree through the cluster's key-value store that it
succeeded (``agree``), so that a save returns, or raises, alike everywhere.

Arrays split over several processes (``shard_parameters=True`` with several
processes) cannot be copied whole to one host: ``host_arrays`` returns None
and orbax writes them (each process its shards; orbax's
``AsyncCheckpointer`` with ``async_save``).

The numpy copies share the device buffers where the backend allows (CPU):
while a save holds them, JAX does not donate those buffers to the next
execution (it copies instead), so what is written is what was saved.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .. import _threads
from ..cluster import _agree, _kv, watchdog
from ..errors import CheckpointError
from . import _file

log = logging.getLogger("phalanx")


def host_arrays(arrays: dict) -> dict | None:
    """A host (numpy) copy of the pytree ``arrays``, or None when an array is split over processes.

    Examples:
      >>> import jax.numpy as jnp
      >>> host = host_arrays({"model": {"a0": jnp.ones(2)}})
      >>> type(host["model"]["a0"]).__name__, host["model"]["a0"].tolist()
      ('ndarray', [1.0, 1.0])
    """
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
        if self._error is not None:  # nobody waited for it (close() would have): the exit
            log.error("phalanx: an asynchronous checkpoint save failed: %s", self._error)

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


def processes() -> tuple[int, int]:
    """``(this process's index, the number of processes)``."""
    return _kv.process_id(), _kv.num_processes()


def agree_timeout() -> float:
    """How long processes wait for each other to finish a checkpoint (uploads take minutes)."""
    return max(float(watchdog.timeout), 600.0)


def agree(tag: str, failure: BaseException | None, path: str) -> None:
    """Every process says whether its part of the checkpoint at ``path`` succeeded.

    Raises:
      CheckpointError: a process failed (named, with this process's error).
    """
    agreed = _agree.all_have(tag, failure is None, timeout_s=agree_timeout())
    if not all(agreed):
        failed = [p for p, good in enumerate(agreed) if not good]
        why = f": {type(failure).__name__}: {failure}" if failure is not None else ""
        raise CheckpointError(
            f"Checkpoint {path!r} was not committed: processes {failed} failed to write or "
            f"upload their files{why}. The previous checkpoint is still the latest."
        ) from failure


def same_path(tag: str, path: str) -> None:
    """Waits until every process is saving, and checks that all save to ``path``.

    Process 0 must not write before the others have chosen their path: a
    ``CheckpointManager`` numbers a save from the checkpoints it finds, and a
    process that looked after process 0's rename would number it one higher
    (and report a checkpoint that does not exist).

    Raises:
      CheckpointError: the processes save to different paths (on every process alike).
    """
    paths = _kv.gather(tag, path, timeout_s=agree_timeout(), what="the path of its checkpoint")
    if len(set(paths)) > 1:
        raise CheckpointError(
            f"The processes saved a checkpoint to different paths ({dict(enumerate(paths))} by "
            "process): every process must call save alike (the same path, or the same "
            "CheckpointManager directory and number). Nothing was written. TensorFlow's "
            "multi_worker_with_keras recipe (write_filepath: workers write to temporary "
            "folders, then delete them) is not needed: give every process the chief's path; "
            "phalanx writes each checkpoint once, from process 0."
        )


class Checkpointers:
    """orbax's ``Checkpointer`` and ``AsyncCheckpointer`` of one writer, each made once."""

    def __init__(self):
        self._made: dict[bool, Any] = {}

    def get(self, async_save: bool):
        """orbax's checkpointer (async or not) of composite checkpoints, made on first use."""
        from . import _io  # local: _io imports _remote, which imports this module

        if async_save not in self._made:
            self._made[async_save] = _io.checkpointer(async_save)
        return self._made[async_save]

    def wait_until_finished(self) -> None:
        """Waits for orbax's asynchronous save, if one was started."""
        if True in self._made:
            self._made[True].wait_until_finished()

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
        self.pending: str | None = None  # the path being written in the background

    def save(
        self,
        path: str,
        arrays: dict,
        meta: dict,
        *,
        after_commit: Callable[[], None] | None = None,
    ) -> None:
        """Writes ``arrays`` and ``meta`` as the checkpoint at ``path``, replacing one there.

        ``after_commit`` runs on process 0 once the checkpoint is committed.

        Raises:
          CheckpointError: the previous asynchronous save failed; or, saving
            synchronously, this save failed on some process.
        """
        self.wait_until_finished()
        if processes()[1] == 1:  # with several, process 0's write checks it (and all agree)
            _file.check_target(path)  # before the copy: a save that cannot happen, at once
        host = host_arrays(arrays)
        if host is None:
            self._save_split(path, arrays, meta, after_commit)
            return
        tag = f"checkpoint-local/{_agree.new_round()}"  # on the caller's thread, alike everywhere
        if not self._async:
            self._write(path, host, meta, tag, after_commit)
            return
        self.pending = path
        self._background.run(self._write, path, host, meta, tag, after_commit)

    def _write(self, path: str, host: dict, meta: dict, tag: str, after_commit) -> None:
        try:
            me, n = processes()
            failure = None
            if n > 1:
                same_path(f"{tag}/path", path)
            if me == 0:
                try:
                    _file.write(path, host, meta)
                    if after_commit is not None:  # before the agreement: the others then
                        after_commit()  # list what process 0 kept
                except Exception as error:
                    if n == 1:
                        raise
                    failure = error  # every process must still answer the agreement
            if n > 1:
                agree(tag, failure, path)
        finally:
            self.pending = None

    def _save_split(self, path: str, arrays: dict, meta: dict, after_commit) -> None:
        """orbax writes arrays split over processes (each process its shards)."""
        from . import _io  # local: _io imports _remote, which imports this module

        same_path(f"checkpoint-split/{_agree.new_round()}/path", path)
        _file.check_target(path)  # every process sees this folder (orbax merges their files)
        if "[" in path:  # orbax globs for the processes' folders and merges none: unreadable
            raise CheckpointError(
                f"Cannot write the checkpoint {path!r}: its arrays are split over processes, "
                "which orbax-checkpoint writes, and orbax cannot write a path with '[' in it "
                "(it finds the processes' files with a glob, misses them, and commits a "
                "checkpoint without arrays). Give a path without '[' and ']'."
            )
        orbax = self._orbax.get(self._async)
        orbax.save(path, args=_io.save_args(arrays, meta), force=True)
        if not self._async:
            if after_commit is not None and processes()[0] == 0:
                after_commit()
            return
        self.pending = path
        self._background.run(self._finish_split, orbax, after_commit)

    def _finish_split(self, orbax: Any, after_commit) -> None:
        try:
            orbax.wait_until_finished()
            if after_commit is not None and processes()[0] == 0:
                after_commit()
        finally:
            self.pending = None

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
