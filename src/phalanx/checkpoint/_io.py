"""Reading and writing one checkpoint directory with orbax-checkpoint.

A checkpoint is an orbax composite directory with two items: ``meta`` (JSON:
the format, the save counter, and per object its kind, array manifest and
data) and ``arrays`` (an orbax PyTree of the objects' arrays, absent when no
object has any). orbax writes into a temporary directory and renames it when
every process has finished (its commit), so a process killed while writing
leaves the previous checkpoints as they were and no half-written one under
the final name. Arrays are read back as host numpy arrays (each process reads
what it needs; the model places them on its own mesh), which is what lets a
checkpoint saved under one replica count restore under another.

orbax is imported when first used, so ``import phalanx`` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, CheckpointNotFoundError
from ._objects import FORMAT

META, ARRAYS = "meta", "arrays"


def ocp():
    """The orbax.checkpoint module (imported on first use)."""
    import orbax.checkpoint as orbax_checkpoint

    return orbax_checkpoint


def checkpointer(async_save: bool):
    """An orbax checkpointer of composite (meta + arrays) directories."""
    o = ocp()
    handler = o.CompositeCheckpointHandler()
    return o.AsyncCheckpointer(handler) if async_save else o.Checkpointer(handler)


def save_args(arrays: dict, meta: dict):
    """orbax's arguments to save ``arrays`` and ``meta`` as one checkpoint."""
    o = ocp()
    items = {META: o.args.JsonSave(meta)}
    if any(arrays.values()):
        items[ARRAYS] = o.args.PyTreeSave({k: v for k, v in arrays.items() if v})
    return o.args.Composite(**items)


def as_path(path: Any, what: str) -> str:
    """``path`` as an absolute local path, or a ``CheckpointError`` saying what was expected.

    ``file://`` URLs are local paths; other URLs (``gs://``, ``s3://``, ``memory://``) are
    refused: orbax writes them through its own file layer, not phalanx.io, and that path is
    not built or tested yet (it was written under the working directory before).
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike) or not str(path):
        raise CheckpointError(
            f"{what} expects a path (str or os.PathLike), got {path!r} of type "
            f"{type(path).__name__}. Pass a directory name such as 'ckpt/run1'."
        )
    from ..io import _fs

    text = os.fspath(path)
    remote = _fs.is_url(text) and _fs.protocol_of(text) not in ("file", "local")
    local = None if remote else _fs.os_path(text)  # a plain path or a file:// URL
    if local is None:
        raise CheckpointError(
            f"{what}: {os.fspath(path)!r} is a remote URL; phalanx checkpoints are written to "
            "this machine's file systems only (a plain path or file://). Write them to a local "
            "or mounted directory (for example a bucket mounted with gcsfuse), or copy the "
            "checkpoint directory up with phalanx.io.gfile after it is saved."
        )
    return str(Path(local).absolute())


def is_checkpoint(path: str) -> bool:
    """Whether ``path`` is a committed phalanx checkpoint directory."""
    return (Path(path) / META).is_dir()


def read_meta(path: str, reader=None) -> dict:
    """The meta item of the checkpoint at ``path``.

    Raises:
      CheckpointNotFoundError: no committed checkpoint there.
      CheckpointError: the directory is not a phalanx checkpoint.
    """
    if not is_checkpoint(path):
        raise CheckpointNotFoundError(
            f"No checkpoint at {path!r} (no committed checkpoint directory there"
            f"{'; it does not exist' if not Path(path).exists() else ''}). Give a path that "
            "Checkpoint.save or write returned, or CheckpointManager(...).latest_checkpoint."
        )
    reader = reader or checkpointer(False)
    o = ocp()
    meta = reader.restore(path, args=o.args.Composite(**{META: o.args.JsonRestore()}))[META]
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path!r} is not a phalanx checkpoint (format {getattr(meta, 'get', dict)('format')!r}, "
            f"expected {FORMAT!r}). Restore a directory written by phalanx.checkpoint."
        )
    return meta


def read_arrays(path: str, meta: dict, names: list[str], reader=None) -> dict:
    """The arrays of the objects ``names`` as host numpy arrays, by object."""
    import numpy as np

    counts = {
        name: len(meta["objects"][name].get("arrays", []))
        for name in names
        if meta["objects"][name].get("arrays")
    }
    if not counts:
        return {}
    o = ocp()
    restore_args = {
        name: {f"a{i}": o.RestoreArgs(restore_type=np.ndarray) for i in range(n)}
        for name, n in counts.items()
    }
    reader = reader or checkpointer(False)
    args = o.args.PyTreeRestore(restore_args=restore_args, partial_restore=True)
    return reader.restore(path, args=o.args.Composite(**{ARRAYS: args}))[ARRAYS]
