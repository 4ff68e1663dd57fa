"""Model weights as plain arrays: get/set, and files that execute no code when loaded.

The weights of a model are its ``nnx.Param`` and ``nnx.BatchStat`` variables
(Keras's trainable and non-trainable weights), in Keras's order: layer by
layer, and within a layer kernel (or embeddings), scale, bias, moving mean,
moving variance (Keras's kernel, gamma, beta, moving_mean, moving_variance),
so a list from ``get_weights`` lines up with a Keras model's. Files are numpy ``.npz`` archives keyed by those paths,
read with ``allow_pickle=False``: loading a weights file runs no code (no
pickle). Weights are replica-count independent: a file saved under 8 replicas
loads under 1, and the reverse. With several processes, process 0 alone
writes the file (``save_on_chief``); the others wait until it has.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..cluster import _kv
from ..errors import WeightsFileError
from ..io import _fs
from ..layers import weight_paths

_SAVES = itertools.count()
SAVE_TIMEOUT_S = 300.0


def save_on_chief(path: str | os.PathLike, state: Any, *, timeout: float = SAVE_TIMEOUT_S) -> None:
    """Process 0 writes ``state`` to ``path``; every process returns once it has.

    Every process calls it (as every worker runs the same script); the others
    wait at a barrier with a deadline, so a ``load`` right after reads the file.

    Raises:
      RuntimeError: process 0 did not finish writing within ``timeout`` seconds.
    """
    if jax.process_index() == 0:
        save(path, state)
    if jax.process_count() == 1:
        return

    name = f"save_weights/{next(_SAVES)}"
    try:
        _kv.barrier(name, timeout)
    except Exception as e:  # jax raises JaxRuntimeError (DEADLINE_EXCEEDED, ...)
        raise RuntimeError(
            f"save_weights({str(path)!r}): process {jax.process_index()} waited {timeout:g} s "
            f"for the others (process 0 writes the file) and they did not all arrive: "
            f"{str(e).splitlines()[0]}. Call save_weights on every process, at the same point."
        ) from e


def save(path: str | os.PathLike, state: Any) -> Path | str:
    """Writes ``state``'s leaves to ``path`` atomically (a temp file, then a rename)."""
    local = _fs.os_path(path)  # None for a URL (gs://, s3://, memory://): phalanx.io uploads it
    if local is None:
        with _fs.atomic_write(path) as f:
            leaves = jax.tree.leaves(state)
            np.savez(
                f, **{p: np.asarray(x) for p, x in zip(weight_paths(state), leaves, strict=True)}
            )
        return path
    path = Path(local)
    _make_parent(path)
    arrays = {
        p: np.asarray(x) for p, x in zip(weight_paths(state), jax.tree.leaves(state), strict=True)
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _make_parent(path: Path) -> None:
    """Creates ``path``'s folder, or says which component of it is a file."""
    for parent in reversed([path.parent, *path.parent.parents]):
        if parent.exists() and not parent.is_dir():
            raise WeightsFileError(
                f"Cannot write {str(path)!r}: {str(parent)!r} is a file, not a directory. "
                "Choose another path, or move that file away."
            )
    if path.is_dir():
        raise WeightsFileError(
            f"Cannot write {str(path)!r}: it is a directory. Give a file name such as "
            f"{str(path / 'weights.npz')!r}."
        )
    path.parent.mkdir(parents=True, exist_ok=True)


def load(path: str | os.PathLike, state: Any) -> Any:
    """Reads a file written by ``save`` into the structure of ``state``.

    The names, shapes and dtypes of the arrays are checked from the archive's
    headers before any data is read, so a file cannot make this allocate more
    than the model's own size; arrays of Python objects are refused (nothing
    is unpickled). Numeric dtypes are cast to the model's.

    Raises:
      FileNotFoundError: no such file.
      WeightsFileError: not a weights archive (random bytes, truncated, a
        directory), or its weights do not match the model's names, shapes or dtypes.
    """
    local = _fs.os_path(path)
    path = Path(local) if local is not None else os.fspath(path)
    if not _fs.exists(path):
        raise FileNotFoundError(f"No weights file at {str(path)!r}.")
    if _fs.isdir(path):
        raise WeightsFileError(
            f"{str(path)!r} is a directory, not a weights file; give the .npz file that "
            "save_weights wrote."
        )
    paths = weight_paths(state)
    leaves, treedef = jax.tree.flatten(state)
    expected = {p: leaf for p, leaf in zip(paths, leaves, strict=True)}
    try:
        with _fs.open(path, "rb") as f, zipfile.ZipFile(f) as archive:
            members = _check_headers(path, archive, expected)
            out = [_read_member(path, archive, members[p], expected[p]) for p in paths]
    except WeightsFileError:
        raise
    except _DAMAGED as e:
        raise _not_weights(path, f"{type(e).__name__}: {e}") from None
    return jax.tree.unflatten(treedef, out)


#: What zipfile raises for a damaged archive: a flipped compression method is a
#: NotImplementedError, a flipped flag bit says "encrypted" (RuntimeError), a flipped
#: offset seeks before the start (OSError EINVAL); the rest are BadZipFile/EOFError/zlib.
_DAMAGED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    zlib.error,
    NotImplementedError,
    RuntimeError,
    OSError,
)


def _not_weights(path: Path, why: str) -> WeightsFileError:
    return WeightsFileError(
        f"{str(path)!r} is not a weights file, or is truncated or damaged ({why}). Weights "
        "files are .npz archives written by save_weights; write it again."
    )


def _check_headers(path: Path, archive: zipfile.ZipFile, expected: dict) -> dict[str, str]:
    """Maps each weight name to its archive member, after checking every header."""
    members = {}
    for name in archive.namelist():
        key = name[:-4] if name.endswith(".npy") else name
        members[key] = name
    missing = [p for p in expected if p not in members]
    unexpected = [p for p in members if p not in expected]
    if missing or unexpected:
        raise WeightsFileError(
            f"The weights in {str(path)!r} do not match this model: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}. Load them into a model of the same architecture."
        )
    for key, member in members.items():
        shape, dtype = _header(path, archive, member)
        want = expected[key]
        if dtype.hasobject or (dtype.kind not in "biufc" and not _is_bfloat16_bytes(dtype)):
            raise WeightsFileError(
                f"Weight {key} in {str(path)!r} has dtype {_dtype_name(dtype)}; weights are "
                f"numbers ({np.dtype(want.dtype).name} for this model). The file was not "
                "written by save_weights; write it again."
            )
        if shape != tuple(want.shape):
            raise WeightsFileError(
                f"Weight {key} in {str(path)!r} has shape {shape}, but this model's has shape "
                f"{tuple(want.shape)}. Load it into a model of the same architecture."
            )
    return members


def _is_bfloat16_bytes(dtype: np.dtype) -> bool:
    """Whether a header's dtype is how ``.npy`` records bfloat16: 2 raw bytes (``|V2``).

    numpy does not know bfloat16 (an ``ml_dtypes`` type), so ``np.savez`` writes
    it as a plain 2-byte void; no other dtype phalanx saves looks like that.
    """
    return dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None


def _dtype_name(dtype: np.dtype) -> str:
    return "object" if dtype.hasobject else dtype.str


def _header(path: Path, archive: zipfile.ZipFile, member: str) -> tuple[tuple[int, ...], np.dtype]:
    try:
        with archive.open(member) as f:
            version = np.lib.format.read_magic(f)
            read = _HEADER_READERS.get(version)
            if read is None:
                raise ValueError(f"unknown .npy format version {version}")
            shape, _, dtype = read(f)
    except (ValueError, TypeError, SyntaxError, *_DAMAGED) as e:
        raise _not_weights(path, f"member {member}: {type(e).__name__}: {e}") from None
    return tuple(shape), dtype


_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _read_member(path: Path, archive: zipfile.ZipFile, member: str, old) -> np.ndarray:
    try:
        with archive.open(member) as f:
            new = np.lib.format.read_array(f, allow_pickle=False)
    except (ValueError, *_DAMAGED) as e:
        key = member[:-4]
        raise WeightsFileError(
            f"Weight {key} in {str(path)!r} cannot be read ({type(e).__name__}: {e}). The file "
            "is truncated or damaged; write it again."
        ) from None
    if _is_bfloat16_bytes(new.dtype):
        new = new.view(jnp.bfloat16)
    return new.astype(old.dtype)
