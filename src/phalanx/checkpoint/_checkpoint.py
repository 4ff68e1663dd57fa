"""``Checkpoint``: TensorFlow's ``tf.train.Checkpoint`` names over orbax-checkpoint."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import CheckpointError, CheckpointMismatchError
from . import _background, _io, _objects, _remote

log = logging.getLogger("phalanx")


class Checkpoint:
    """Saves and restores the whole state of the objects given, in one atomic step.

    ``Checkpoint(model=model, iterator=it, ...)`` takes any number of named
    objects: phalanx ``Model`` s (their whole training state: parameters,
    non-trainable state, optimizer state, step, RNG key, metric accumulators,
    and ``fit``'s position: epoch, steps done and input iterator state),
    ``model.optimizer`` (saved with its model), objects with
    ``get_state()``/``set_state()`` (phalanx data iterators), and, for custom
    training loops, any pytree of arrays (parameters, optax state) or
    ``flax.nnx`` module, as ``tf.train.Checkpoint(**objects)``. JAX arrays
    cannot change in place, so a tree is read and replaced by name:
    ``ckpt.params = params`` before a save (or give the new value to
    ``Checkpoint`` again), ``params = ckpt.params`` after a restore, which
    puts each array where the given tree's leaf is (an nnx module is updated
    in place). A restore
    resumes bit-exactly: the same next batches, dropout keys and updates as
    the run that saved it; on another replica count, the same batches.

    A model restored before it has weights (a fresh process, before ``fit``)
    keeps the arrays and places them when ``fit`` builds it, after checking
    their names, shapes and dtypes; a built and compiled model checks them at
    once, before any data is read.

    With several processes, every process calls ``save``/``restore`` with the
    same path; orbax writes each array once and commits when all are done.

    Paths are local (or ``file://``) folders, or any fsspec URL (``gs://``,
    ``s3://``, ``memory://`` ...; ``pip install "phalanx[gcs]"`` for ``gs://``):
    a URL is written to a local staging folder, uploaded, and committed by a
    marker object written last, so a writer killed mid-upload leaves no
    checkpoint that a restore would read (docs/checkpoints.md).

    Args:
      async_save: write in background threads: ``save`` returns once the
        arrays are copied off the devices (the next step may then run), and
        the next ``save`` (or ``wait_until_finished``) waits for the previous
        write. Default False.
      **objects: the objects to save, by name (the names a restore uses).

    Raises:
      CheckpointError: an object has no state phalanx can save, or
        ``model.optimizer`` was given without its model.

    Examples:
      >>> import numpy as np, phalanx, tempfile
      >>> from phalanx import layers
      >>> model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
      >>> model.compile(optimizer="adam", loss="mse")
      >>> _ = model.fit(np.ones((8, 3)), np.ones((8, 1)), batch_size=4, verbose=0)
      >>> ckpt = phalanx.checkpoint.Checkpoint(model=model)
      >>> path = ckpt.save(tempfile.mkdtemp() + "/ckpt")
      >>> path.endswith("ckpt-1")
      True
      >>> _ = ckpt.restore(path)
    """

    def __init__(self, *, async_save: bool = False, **objects: Any):
        if not isinstance(async_save, bool):
            raise CheckpointError(
                f"Checkpoint: async_save must be True or False, got {async_save!r} "
                f"({type(async_save).__name__})."
            )
        if not objects:
            raise CheckpointError(
                "Checkpoint() needs at least one object to save, by name: "
                "Checkpoint(model=model, iterator=iterator)."
            )
        self._objects = dict(objects)
        self._kinds = _objects.check_objects(self._objects)
        self._async = async_save
        self._writer: _background.LocalWriter | None = None
        self._uploader: _remote.RemoteWriter | None = None
        self._last_restore: str | None = None  # for TensorFlow's status checks
        self._unused: list[str] = []
        self.save_counter = 0

    def __getattr__(self, name: str) -> Any:
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(
            f"Checkpoint has no attribute or object {name!r} (its objects: {sorted(objects)})."
        )

    def __setattr__(self, name: str, value: Any) -> None:
        objects = self.__dict__.get("_objects")
        if objects is not None and name in objects:
            kind = _objects.check_objects({**objects, name: value})[name]
            if kind != self._kinds[name]:
                raise CheckpointError(
                    f"Checkpoint.{name} holds a {self._kinds[name]}; got a {kind} "
                    f"({type(value).__name__}). Give it a value of the same kind."
                )
            objects[name] = value
            return
        super().__setattr__(name, value)

    def _local_writer(self) -> _background.LocalWriter:
        if self._writer is None:
            self._writer = _background.LocalWriter(self._async)
        return self._writer

    def _remote_writer(self) -> _remote.RemoteWriter:
        if self._uploader is None:
            self._uploader = _remote.RemoteWriter(self._async)
        return self._uploader

    def _meta(self, entries: dict) -> dict:
        return {"format": _objects.FORMAT, "save_counter": self.save_counter, "objects": entries}

    def write(self, file_prefix: Any) -> str:
        """Writes a checkpoint at exactly ``file_prefix`` (a directory); returns its path.

        Unlike ``save``, the save counter does not move. An existing
        checkpoint there is replaced (use ``save`` or a ``CheckpointManager``
        to keep the previous one until the new one is committed).
        """
        path = _io.as_path(file_prefix, "Checkpoint.write")
        arrays, entries = _objects.collect(self._objects, self._kinds)
        writer = self._remote_writer() if _io.is_remote(path) else self._local_writer()
        writer.save(path, arrays, self._meta(entries))
        return path

    def save(self, file_prefix: Any) -> str:
        """Saves a new checkpoint at ``<file_prefix>-<n>`` (n = the save counter + 1).

        Returns:
          The path of the checkpoint, for ``restore``.
        """
        prefix = _io.as_path(file_prefix, "Checkpoint.save")
        self.save_counter += 1
        try:
            return self.write(f"{prefix}-{self.save_counter}")
        except BaseException:
            self.save_counter -= 1
            raise

    def read(self, save_path: Any) -> Checkpoint:
        """Restores the objects from ``save_path``, without the save counter.

        Raises:
          CheckpointNotFoundError: no committed checkpoint at ``save_path``.
          CheckpointMismatchError: an object is missing from the checkpoint, or
            a model's arrays differ (the message names each: name, shape, dtype).
        """
        self._read(save_path)
        return self

    def _read(self, save_path: Any) -> dict:
        path = _io.as_path(save_path, "Checkpoint.restore")
        self.wait_until_finished()
        if not _io.is_remote(path):
            return self._read_local(path, path)
        with _remote.downloaded(path) as local:
            return self._read_local(local, path)

    def _read_local(self, local: str, path: str) -> dict:
        meta = _io.read_meta(local)
        saved = meta.get("objects", {})
        _objects.check_restorable(path, self._objects, self._kinds, saved)
        arrays = _io.read_arrays(local, meta, list(self._objects))
        _objects.apply(self._objects, self._kinds, saved, arrays)
        self._last_restore, self._unused = path, sorted(set(saved) - set(self._objects))
        return meta

    def expect_partial(self) -> Checkpoint:
        """TensorFlow's load-status call after ``restore``: accepted, returns the checkpoint.

        phalanx warns about nothing left unused, so there is nothing to silence;
        ``restore(path).expect_partial()`` runs as in TensorFlow.
        """
        return self

    def assert_existing_objects_matched(self) -> Checkpoint:
        """TensorFlow's load-status check: every object given was restored (``restore``
        raises otherwise, so this only checks that a restore happened)."""
        self._restored_from()
        return self

    def assert_consumed(self) -> Checkpoint:
        """TensorFlow's load-status check: the last restore used every object saved.

        Raises:
          CheckpointMismatchError: the checkpoint holds objects this one was not
            given (named), or nothing was restored yet.
        """
        path = self._restored_from()
        if self._unused:
            raise CheckpointMismatchError(
                f"The checkpoint {path!r} holds objects that were not restored: "
                f"{self._unused} (this Checkpoint has {sorted(self._objects)}). Pass them to "
                "Checkpoint(...) too, or call expect_partial() instead of assert_consumed()."
            )
        return self

    def _restored_from(self) -> str:
        if self._last_restore is None:
            raise CheckpointMismatchError(
                "Nothing was restored yet: call restore(path) or read(path) before checking "
                "its status (restore(path).assert_consumed())."
            )
        return self._last_restore

    def restore(self, save_path: Any) -> Checkpoint:
        """Restores the objects and the save counter from ``save_path``.

        Returns:
          The checkpoint, which also answers TensorFlow's load-status calls
          (``expect_partial``, ``assert_consumed``, ``assert_existing_objects_matched``).

        Raises:
          CheckpointNotFoundError: no committed checkpoint at ``save_path``.
          CheckpointMismatchError: an object is missing from the checkpoint, or
            a model's arrays differ (the message names each: name, shape, dtype).
        """
        meta = self._read(save_path)
        self.save_counter = int(meta.get("save_counter", 0))
        return self

    def wait_until_finished(self) -> None:
        """Waits for an asynchronous save to be committed (at once when none runs).

        Raises:
          CheckpointError: an asynchronous save failed before its commit.
        """
        for writer in (self._writer, self._uploader):
            if writer is not None:
                writer.wait_until_finished()

    def close(self) -> None:
        """Finishes pending writes and stops the writer's threads."""
        writers, self._writer, self._uploader = (self._writer, self._uploader), None, None
        for writer in writers:
            if writer is not None:
                writer.close()

    def __repr__(self) -> str:
        return f"Checkpoint({', '.join(f'{k}={v}' for k, v in self._kinds.items())})"
