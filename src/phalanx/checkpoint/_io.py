"""Reading and writing one checkpoint directory: phalanx's one file, or orbax's composite.

A checkpoint is a directory. When every array is whole on a host (one
process, or replicated variables), it holds phalanx's one file (``_file``:
a header with the meta and the arrays' manifest, then their bytes), written
in a temporary folder and renamed. Arrays split over processes
(``shard_parameters``, layouts across processes) are written by orbax as a
composite directory with two items: ``meta`` (JSON: the format, the save
counter, and per object its kind, array manifest and data) and ``arrays``
(an orbax PyTree of the objects' arrays, absent when no object has any);
orbax also writes into a temporary directory and renames it when every
process has finished (its commit). Either way, a process killed while
writing leaves the previous checkpoints as they were and no half-written
one under the final name. Restores read both formats; arrays are read back
as host numpy arrays (each process reads what it needs; the model places
them on its own mesh), which is what lets a checkpoint saved under one
replica count restore under another.

Local paths (and ``file://`` URLs) are written in place; other URLs
(``gs://``, ``s3://``, ``memory://`` ...) are staged locally, uploaded and
committed with a marker by ``_remote``.

orbax is imported when first used, so ``import phalanx`` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

from ..errors import CheckpointError, CheckpointNotFoundError
from ..io import _fs
from . import _file
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
    items = {META: o.args.JsonSave(dict(meta, **{CHECKSUM: meta_checksum(meta)}))}
    if any(arrays.values()):
        items[ARRAYS] = o.args.PyTreeSave({k: v for k, v in arrays.items() if v})
    return o.args.Composite(**items)


#: The key of the CRC32C of an orbax checkpoint's meta (its other keys, as canonical JSON).
CHECKSUM = "crc32c"
#: The keys of a meta written before checksums (``Checkpoint._meta``).
_META_KEYS = {"format", "save_counter", "objects"}


def meta_checksum(meta: dict) -> int:
    """The CRC32C of ``meta`` as canonical JSON (sorted keys, no spaces)."""
    return crc32c.crc32c(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())


def _checked_meta(path: str, meta: Any) -> Any:
    """``meta`` without its checksum, checked; meta written before checksums pass as they are.

    Raises:
      CheckpointError: the checksum differs (a bit changed in ``meta/metadata``).
    """
    if not isinstance(meta, dict):
        return meta
    meta = dict(meta)
    saved = meta.pop(CHECKSUM, None)
    unknown = set(meta) - _META_KEYS  # a flip in the checksum's own key leaves one
    if (saved is None and unknown) or (saved is not None and saved != meta_checksum(meta)):
        file = os.path.join(path, META, "metadata")
        raise CheckpointError(
            f"The checkpoint {path!r} (orbax's format) is damaged: its file {file!r} does not "
            "match its CRC32C (a bit changed). Restore an earlier checkpoint "
            "(CheckpointManager(...).checkpoints lists them)."
        )
    return meta


def as_path(path: Any, what: str) -> str:
    """``path`` as an absolute local path, or a URL; a ``CheckpointError`` saying what was expected.

    ``file://`` URLs are local paths (orbax writes them). Other URLs (``gs://``,
    ``s3://``, ``memory://``, any fsspec protocol) are returned as given, without a
    trailing ``/``: ``_remote`` stages, uploads and commits them.

    Raises:
      CheckpointError: ``path`` is not a non-empty str or os.PathLike.
      FileSystemNotInstalledError: the URL's protocol needs a package that is not
        installed (the message names the extra: ``pip install "phalanx[gcs]"``).
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike) or not str(path):
        raise CheckpointError(
            f"{what} expects a path (str or os.PathLike), got {path!r} of type "
            f"{type(path).__name__}. Pass a directory name such as 'ckpt/run1'."
        )

    text = os.fspath(path)
    local = _fs.os_path(text)  # a plain path or a file:// URL; None for other URLs
    if local is None:
        return text.rstrip("/")
    return str(Path(local).absolute())


def is_remote(path: str) -> bool:
    """Whether ``path`` (as ``as_path`` returned it) is a URL that ``_remote`` writes."""
    return _fs.is_url(path)


def is_checkpoint(path: Any) -> bool:
    """Whether ``path`` is a committed phalanx checkpoint directory (local or a URL)."""
    if is_remote(os.fspath(path)):
        from . import _remote  # local: _remote imports this module (URL checkpoints)

        return _remote.is_committed(os.fspath(path))
    return _file.holds_checkpoint(os.fspath(path))


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
    if _file.is_file_checkpoint(path):
        meta = _file.read_meta(path)
    else:
        bad = damaged_json_files(path)  # before orbax reads them, or skips one it ignores
        if bad:
            raise CheckpointError(
                f"The checkpoint {path!r} (orbax's format) cannot be read: its file {bad[0]!r} "
                f"is damaged ({bad[1]}). It is not as phalanx wrote it (a disk or transfer "
                "error, or a copy cut short); restore an earlier checkpoint "
                "(CheckpointManager(...).checkpoints lists them)."
            )
        reader = reader or checkpointer(False)
        o = ocp()
        with orbax_errors(path, "meta"):
            meta = reader.restore(path, args=o.args.Composite(**{META: o.args.JsonRestore()}))[META]
        meta = _checked_meta(path, meta)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path!r} is not a phalanx checkpoint (format {getattr(meta, 'get', dict)('format')!r}, "
            f"expected {FORMAT!r}). Restore a directory written by phalanx.checkpoint."
        )
    return meta


def read_arrays(path: str, meta: dict, names: list[str], reader=None) -> dict:
    """The arrays of the objects ``names`` as host numpy arrays, by object, each checked
    against the checkpoint's manifest (its count, shapes and dtypes).

    Raises:
      CheckpointError: the data does not match the manifest, or the file is damaged.
    """
    counts = {
        name: len(meta["objects"][name].get("arrays", []))
        for name in names
        if meta["objects"][name].get("arrays")
    }
    if not counts:
        return {}
    if _file.is_file_checkpoint(path):
        got = _file.read_arrays(path, list(counts))
    else:
        got = _read_orbax_arrays(path, counts, reader)
    for name in counts:
        _check_against_manifest(path, name, meta["objects"][name]["arrays"], got.get(name, {}))
    return got


def _check_against_manifest(path: str, name: str, manifest: list, arrays: dict) -> None:
    """Refuses arrays whose number, shape or dtype differ from the checkpoint's own manifest
    (a row of the array table that says float64[4] where the manifest says float32[8])."""
    extra = sorted(set(arrays) - {f"a{i}" for i in range(len(manifest))})
    for i, (array_name, spec) in enumerate(manifest):
        array = arrays.get(f"a{i}")
        want = f"{spec.get('dtype')}{list(spec.get('shape', []))}"
        got = "missing" if array is None else f"{array.dtype.name}{list(np.shape(array))}"
        if got != want:
            raise CheckpointError(
                f"The checkpoint {path!r} is damaged: {name}'s array {array_name!r} is "
                f"{got} in its data, but {want} in its manifest. Nothing was restored; "
                "restore an earlier checkpoint."
            )
    if extra:
        raise CheckpointError(
            f"The checkpoint {path!r} is damaged: {name} has arrays {extra} that its manifest "
            "does not list. Nothing was restored; restore an earlier checkpoint."
        )


def _read_orbax_arrays(path: str, counts: dict, reader) -> dict:
    o = ocp()
    restore_args = {
        name: {f"a{i}": o.RestoreArgs(restore_type=np.ndarray) for i in range(n)}
        for name, n in counts.items()
    }
    reader = reader or checkpointer(False)
    args = o.args.PyTreeRestore(restore_args=restore_args, partial_restore=True)
    with orbax_errors(path, "arrays"):
        return dict(reader.restore(path, args=o.args.Composite(**{ARRAYS: args}))[ARRAYS])


#: The errors orbax (and tensorstore under it) raises for a damaged file: a JSON file that
#: does not parse (JSONDecodeError, UnicodeDecodeError are ValueErrors), a missing key, a
#: tensorstore read that fails (ValueError), a file gone (OSError).
_DAMAGE = (ValueError, KeyError, TypeError, AttributeError, IndexError, OSError)


@contextlib.contextmanager
def orbax_errors(path: str, item: str):
    """Turns the bare errors of orbax reading a damaged checkpoint into a ``CheckpointError``
    that names the checkpoint and, where one can be found, the damaged file."""
    try:
        yield
    except CheckpointError:
        raise
    except _DAMAGE as error:
        bad = damaged_json_files(path)
        where = f"its file {bad[0]!r} is damaged ({bad[1]})" if bad else f"its {item!r} item"
        raise CheckpointError(
            f"The checkpoint {path!r} (orbax's format) cannot be read: {where}; orbax said "
            f"{type(error).__name__}: {str(error)[:300]}. It is not as phalanx wrote it (a "
            "disk or transfer error, or a copy cut short); restore an earlier checkpoint "
            "(CheckpointManager(...).checkpoints lists them)."
        ) from error


def damaged_json_files(path: str) -> tuple[str, str] | None:
    """``(file, why)`` of the first JSON metadata file of an orbax checkpoint that does not
    parse (orbax's metadata files are JSON, whatever their names), or None."""
    for folder, _, files in sorted(os.walk(path)):
        for name in sorted(files):
            file = os.path.join(folder, name)
            if not _is_json_metadata(folder, name, path):
                continue
            try:
                with open(file, "rb") as f:
                    json.loads(f.read().decode("utf-8"))
            except (ValueError, OSError) as error:
                return file, f"{type(error).__name__}: {str(error)[:120]}"
    return None


def _is_json_metadata(folder: str, name: str, root: str) -> bool:
    """orbax's JSON files: ``_CHECKPOINT_METADATA``, ``_METADATA``, ``_sharding``, the
    ``meta`` item's ``metadata``, and ``array_metadatas/*`` (not the tensorstore data)."""
    if name in ("_CHECKPOINT_METADATA", "_METADATA", "_sharding"):
        return True
    if name == "metadata" and os.path.basename(folder) == META:
        return True
    return os.path.basename(folder) == "array_metadatas"
