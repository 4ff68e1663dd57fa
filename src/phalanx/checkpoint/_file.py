"""phalanx's one-file checkpoint: a checkpoint whose arrays are whole on one host.

A checkpoint is a directory (as orbax's are, so that paths, listings,
uploads and deletes treat both alike) holding one file, `FILE`:

    8 bytes   MAGIC
    8 bytes   the header's length H, little-endian
    4 bytes   the CRC32C of the 8 length bytes and the header, little-endian
    H bytes   the header, JSON: {"meta": the checkpoint's meta (``_objects``),
              "arrays": {object: [[key, dtype, shape, offset, nbytes, crc32c], ...]},
              "data_bytes": the data's length}
    padding   zeros, to a multiple of 64 bytes
    data      each array's bytes, C order, at its offset from the data's start

Every byte is checked on restore (TensorFlow's tensor bundle keeps a CRC32C
per tensor, orbax's zarr chunks theirs): the magic, the header's CRC (which
covers its length), each array's CRC32C before it is handed to a model, the
padding's zeros, and the file's length. A bit flipped anywhere is a
``CheckpointError`` that names the file and, in the data, the array: never a
silent restore of other weights or another epoch (tests/checkpoint/
test_checkpoint_bit_flips.py flips every bit class of a file; docs/reliability.md).
Files of the first version (``PHALANX\x01``, no CRCs: phalanx before this
check) are still read, checked as before; a single bit flip cannot turn the
current magic into that one.

Why not orbax here (DESIGN.md's decision, docs/checkpoints.md): orbax's
composite save of the seeds' MLP state costs ~19 ms of CPU (its handlers,
threads, asyncio loop, metadata files and barriers; ``bench/checkpoint_writers.py``)
against ~1 ms for this file, and on a 2-core machine an asynchronous save's
CPU is taken from the training step: with orbax, a save every 100 steps
slowed the seeds' training by 9-14%. orbax still writes arrays split over
processes (``shard_parameters``, layouts across processes), which no host
holds whole; restores read both formats.

Atomic: the file is written, flushed and fsynced in ``<path>.phalanx-tmp-<nonce>``,
which is then renamed to ``<path>`` and the parent directory is fsynced. A
checkpoint already at ``<path>`` is replaced only once the new one is
complete: it is renamed aside (``<path>.phalanx-tmp-old-<nonce>``), the new
one renamed in, and only then the old one deleted; a failed rename puts it
back. A process killed before the rename leaves the previous checkpoint under
its name and a ``*.phalanx-tmp-*`` folder, which nothing reads (and a
``CheckpointManager`` deletes); one killed while deleting the old checkpoint
leaves it under its ``*.phalanx-tmp-old-*`` name, never a half-deleted folder
under a checkpoint's name.

Only a checkpoint (either format) or an empty folder is replaced:
``check_target`` refuses, before anything is written, a path that is a file,
a symbolic link or a folder of other files (orbax's ``force=True`` deleted
such a folder), and a write that fails (disk full, read-only folder) is a
``CheckpointWriteError`` (a ``CheckpointError`` and an ``OSError``) that
leaves what was there as it was.

Reading checks the magic, the header and the file's length against the
header before any data is read, so a truncated or foreign file is a
``CheckpointError`` that names it, not garbage weights.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import struct
from typing import Any

import crc32c
import ml_dtypes
import numpy as np

from ..errors import CheckpointError, CheckpointWriteError

#: The one file of a checkpoint in this format.
FILE = "state.phalanx"
MAGIC = b"PHALANX\x02"
#: The first version's magic: no CRCs (still read).
MAGIC_V1 = b"PHALANX\x01"
_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
#: JSON nesting a header may have (phalanx's own: under 30): deeper is refused
#: before Python's recursion limit turns it into a RecursionError.
MAX_HEADER_DEPTH = 500
_ALIGN = 64
#: The suffix of the folder a checkpoint is written in before its rename.
TMP = ".phalanx-tmp-"


def is_file_checkpoint(path: str) -> bool:
    """Whether the local directory ``path`` holds a checkpoint in this format."""
    return os.path.isfile(os.path.join(path, FILE))


def _dtype(name: str):
    try:
        return np.dtype(name)
    except TypeError:  # bfloat16, float8_*, int4: ml_dtypes (installed with jax)
        return np.dtype(getattr(ml_dtypes, name))


def _as_bytes(array: Any):
    """``array``'s bytes in C order, as a uint8 view (no copy when already contiguous)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def encode(arrays: dict, meta: dict) -> tuple[bytes, list]:
    """``(head, chunks)``: the magic, length, header and padding; then the arrays' bytes."""
    table: dict[str, list] = {}
    chunks, offset = [], 0
    for name, tree in arrays.items():
        rows = table.setdefault(name, [])
        for key, array in tree.items():
            array = np.asarray(array)
            data = _as_bytes(array)
            nbytes = int(data.nbytes)
            rows.append([key, array.dtype.name, list(array.shape), offset, nbytes, _crc(data)])
            chunks.append(data)
            offset += nbytes
    header = json.dumps({"meta": meta, "arrays": table, "data_bytes": offset}).encode()
    length = _LENGTH.pack(len(header))
    head = MAGIC + length + _CRC.pack(_crc(length + header)) + header
    head += b"\0" * (-len(head) % _ALIGN)
    return head, chunks


def _crc(data) -> int:
    return crc32c.crc32c(data)


def commit(tmp: str, path: str) -> None:
    """Puts the finished folder ``tmp`` at ``path``; a checkpoint there is renamed aside first
    and deleted only once ``tmp`` is in its place (module docs)."""
    old = None
    if os.path.lexists(path):
        old = f"{path}{TMP}old-{secrets.token_hex(4)}"
        os.rename(path, old)
    try:
        os.rename(tmp, path)
    except BaseException:
        if old is not None:
            os.rename(old, path)  # the previous checkpoint stays the one under this name
        raise
    _fsync_dir(os.path.dirname(path))
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def holds_checkpoint(path: str) -> bool:
    """Whether the local folder ``path`` is a committed checkpoint: this format, or orbax's
    composite (its ``meta`` item's JSON file, ``meta/metadata``: a folder that merely holds
    a ``meta`` folder is not one)."""
    return is_file_checkpoint(path) or os.path.isfile(os.path.join(path, "meta", "metadata"))


def check_target(path: str) -> None:
    """Refuses, before anything is written, a ``path`` that a checkpoint may not replace.

    Raises:
      CheckpointError: ``path`` (or a folder above it) is a file, ``path`` is a symbolic
        link, or a folder holding files that are not a checkpoint.
    """
    above = os.path.dirname(path)
    while above and not os.path.lexists(above) and os.path.dirname(above) != above:
        above = os.path.dirname(above)  # the nearest existing folder above
    if above and os.path.lexists(above) and not os.path.isdir(above):
        raise CheckpointError(
            f"Cannot write the checkpoint {path!r}: {above!r} is a file, not a folder. "
            "Give a path in a folder (or one that does not exist yet)."
        )
    if os.path.islink(path):
        raise CheckpointError(
            f"Cannot write the checkpoint {path!r}: it is a symbolic link (to "
            f"{os.readlink(path)!r}); a checkpoint is replaced by renaming folders, which would "
            "replace the link, not what it points to. Give the real path."
        )
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path):
        raise CheckpointError(
            f"Cannot write the checkpoint {path!r}: a file of that name exists. A checkpoint "
            "is a folder; give another path (or delete the file)."
        )
    if os.listdir(path) and not holds_checkpoint(path):
        raise CheckpointError(
            f"Cannot write the checkpoint {path!r}: that folder holds files that are not a "
            f"checkpoint ({sorted(os.listdir(path))[:5]}), which a save would delete. Give a "
            "new path (Checkpoint.save numbers them), or delete the folder first."
        )


def _not_written(path: str, error: OSError) -> CheckpointWriteError:
    return CheckpointWriteError(
        f"The checkpoint {path!r} was not written ({type(error).__name__}: {error}); what was "
        "there is unchanged (a previous checkpoint is still the latest). Free disk space or "
        "give a folder you can write to, then save again."
    )


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a file system or OS that cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write(path: str, arrays: dict, meta: dict) -> None:
    """Writes the host (numpy) ``arrays`` (``{object: {key: array}}``) and ``meta`` as the
    checkpoint at the local ``path``, atomically (module docs).

    Examples:
      >>> import numpy as np, tempfile
      >>> path = tempfile.mkdtemp() + "/ckpt"
      >>> write(path, {"model": {"a0": np.arange(3.0)}}, {"format": "demo"})
      >>> read_meta(path), read_arrays(path, ["model"])["model"]["a0"].tolist()
      ({'format': 'demo'}, [0.0, 1.0, 2.0])
    """
    check_target(path)
    head, chunks = encode(arrays, meta)
    tmp = f"{path}{TMP}{secrets.token_hex(4)}"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        os.mkdir(tmp)
        try:
            with open(os.path.join(tmp, FILE), "wb") as f:
                f.write(head)
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            commit(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as error:
        raise _not_written(path, error) from error


def _damaged(file: str, why: str) -> CheckpointError:
    return CheckpointError(
        f"The checkpoint file {file!r} is damaged: {why}. It is not as phalanx wrote it "
        "(a copy cut short, a disk or transfer error, or another file under this name); "
        "restore an earlier "
        "checkpoint (CheckpointManager(...).checkpoints lists them)."
    )


def read_header(path: str) -> tuple[dict, int]:
    """``(header, data_start)`` of the checkpoint at ``path``, checked against its CRC, the
    padding and the file's length.

    Raises:
      CheckpointError: the file is not this format, its header's CRC32C differs, or it is
        shorter or longer than its header says.
    """
    file = os.path.join(path, FILE)
    size = os.path.getsize(file)
    with open(file, "rb") as f:
        start = f.read(len(MAGIC) + _LENGTH.size)
        magic = start[: len(MAGIC)]
        if len(start) < len(MAGIC) + _LENGTH.size or magic not in (MAGIC, MAGIC_V1):
            raise _damaged(file, f"it does not start with {MAGIC!r}")
        (length,) = _LENGTH.unpack_from(start, len(MAGIC))
        if length > size:
            raise _damaged(file, f"its header says {length} bytes, the file has {size}")
        if magic == MAGIC:
            crc = f.read(_CRC.size)
            text = f.read(length)
            if len(crc) < _CRC.size or _CRC.unpack(crc)[0] != _crc(start[len(MAGIC) :] + text):
                raise _damaged(file, "its header's CRC32C does not match (a bit changed)")
            start += crc
        else:
            text = f.read(length)
        data_start = len(start) + length
        padding = f.read(-data_start % _ALIGN)
        data_start += len(padding)
        if padding.strip(b"\0"):
            raise _damaged(file, "its padding after the header is not zeros")
    header, rows, data_bytes = _parse_header(file, text)
    if size != data_start + data_bytes:
        raise _damaged(
            file, f"it has {size} bytes, its header says {data_start + data_bytes} (truncated?)"
        )
    try:
        for name, table in rows.items():
            for row in table:
                if len(row) != (6 if magic == MAGIC else 5):
                    raise ValueError(f"a row of {len(row)} fields")
                _check_row(file, f"{name}/{row[0]}", *row[1:5], data_bytes)
    except CheckpointError:
        raise
    except (ValueError, TypeError, AttributeError) as error:  # rows of the wrong shape
        raise _damaged(file, f"its array table is not phalanx's ({error})") from None
    return header, data_start


def _parse_header(file: str, text: bytes) -> tuple[dict, dict, int]:
    """``(header, rows, data_bytes)`` of a header's JSON, nesting at most MAX_HEADER_DEPTH."""
    try:
        header = json.loads(text)
        rows = header["arrays"]
        data_bytes = int(header["data_bytes"])
        if not isinstance(header.get("meta"), dict) or not isinstance(rows, dict):
            raise TypeError("no meta or array table")
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise _damaged(file, f"its header is not phalanx's ({type(error).__name__})") from None
    if _depth(header) > MAX_HEADER_DEPTH:  # what reads it later recurses
        raise _damaged(file, f"its header nests deeper than {MAX_HEADER_DEPTH}")
    return header, rows, data_bytes


def _depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (without recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_HEADER_DEPTH:
                todo.extend(
                    (v, depth + 1) for v in (value.values() if isinstance(value, dict) else value)
                )
    return deepest


def _check_row(file, name, dtype, shape, offset, nbytes, data_bytes) -> None:
    if not isinstance(shape, list) or not all(
        type(n) is int and n >= 0 for n in (*shape, offset, nbytes)
    ):
        raise _damaged(file, f"array {name} has shape {shape}, offset {offset}, {nbytes} bytes")
    try:
        kind = _dtype(dtype)
    except (TypeError, AttributeError):
        raise _damaged(file, f"array {name} has an unknown dtype {dtype!r}") from None
    if kind.hasobject or kind.kind not in "biufcV" or kind.fields is not None:
        raise _damaged(file, f"array {name} has dtype {dtype!r}, not one of numbers")
    elements = extent = 1
    for n in shape:  # Python ints: a product that would wrap around int64 is just too large
        elements, extent = elements * n, extent * max(n, 1)
    if extent >= 2**62:  # numpy refuses such a shape, even with a zero in it
        raise _damaged(file, f"array {name} has shape {shape}, too large for any array")
    if elements * kind.itemsize != nbytes:
        raise _damaged(file, f"array {name} has {nbytes} bytes for shape {shape} {dtype}")
    if offset + nbytes > data_bytes:
        raise _damaged(file, f"array {name} lies outside the data")


def read_meta(path: str) -> dict:
    """The meta of the checkpoint at ``path`` (no array is read)."""
    return read_header(path)[0]["meta"]


def read_arrays(path: str, names: list[str]) -> dict:
    """The arrays of the objects ``names`` (those with arrays), as host numpy arrays, by object.

    Raises:
      CheckpointError: the file is damaged (``read_header``).
    """
    header, data_start = read_header(path)
    file = os.path.join(path, FILE)
    out: dict[str, dict] = {}
    with open(file, "rb") as f:
        for name in names:
            for key, dtype, shape, offset, nbytes, *crc in header["arrays"].get(name, []):
                array = np.empty(shape, _dtype(dtype))  # checked by read_header
                f.seek(data_start + offset)
                data = array.reshape(-1).view(np.uint8)
                if f.readinto(data) != nbytes:
                    raise _damaged(file, f"array {name}/{key} is cut short")
                if crc and _crc(data) != crc[0]:
                    raise _damaged(
                        file,
                        f"array {name}/{key} ({dtype} {shape}) does not match its CRC32C "
                        "(a bit changed)",
                    )
                out.setdefault(name, {})[key] = array
    return out
