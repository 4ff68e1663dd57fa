"""``tf.io.gfile`` with TensorFlow's names, for local paths and every fsspec URL.

A seed's ``tf.io.gfile.glob("gs://bucket/train-*")`` becomes
``phalanx.io.gfile.glob("gs://bucket/train-*")``: the same names
(``exists``, ``glob``, ``makedirs``, ``GFile`` ...), the same arguments, on
plain paths, ``file://``, ``memory://``, ``gs://`` (``pip install
"phalanx[gcs]"``), ``s3://`` (``"phalanx[s3]"``) and whatever else fsspec
serves. Where TensorFlow raises ``tf.errors.NotFoundError`` these raise
``FileNotFoundError``; where it raises ``AlreadyExistsError``,
``FileExistsError``.

Examples:
    >>> from phalanx.io import gfile
    >>> gfile.makedirs("memory://gfile-doc/run")
    >>> with gfile.GFile("memory://gfile-doc/run/notes.txt", "w") as f:
    ...     _ = f.write("one\\ntwo\\n")
    >>> gfile.exists("memory://gfile-doc/run/notes.txt")
    True
    >>> gfile.glob("memory://gfile-doc/run/*.txt")
    ['memory://gfile-doc/run/notes.txt']
    >>> gfile.GFile("memory://gfile-doc/run/notes.txt").readlines()
    ['one\\n', 'two\\n']
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from . import _fs

__all__ = [
    "FileStatistics",
    "GFile",
    "Open",
    "copy",
    "exists",
    "glob",
    "isdir",
    "join",
    "listdir",
    "makedirs",
    "mkdir",
    "remove",
    "rename",
    "rmtree",
    "stat",
    "walk",
]

_MODES = ("r", "rb", "w", "wb", "a", "ab")


class GFile:
    """A file on any file system (``tf.io.gfile.GFile``), with Python's file methods.

    ``"r"``/``"w"``/``"a"`` are text (``str``), with ``"b"`` bytes. On object
    stores a written file appears when it is closed (as TensorFlow's GCS
    writer). Remote reads stream with a large read-ahead. A context manager.

    Args:
        name: a local path or a URL (``gs://bucket/file``).
        mode: one of ``"r"``, ``"rb"``, ``"w"``, ``"wb"``, ``"a"``, ``"ab"``.

    Raises:
        ValueError: ``mode`` is not one of those.
        FileNotFoundError: reading a file that does not exist.
        FileSystemNotInstalledError: the URL's protocol package is missing.

    Examples:
        >>> with GFile("memory://gfile-doc/a.bin", "wb") as f:
        ...     _ = f.write(b"abc")
        >>> with GFile("memory://gfile-doc/a.bin", "rb") as f:
        ...     f.size(), f.read()
        (3, b'abc')
    """

    def __init__(self, name: str | os.PathLike, mode: str = "r"):
        if mode not in _MODES:
            raise ValueError(
                f"GFile: mode must be one of {', '.join(map(repr, _MODES))}; received {mode!r}."
            )
        self.name = os.fspath(name)
        self.mode = mode
        self._file: IO = _fs.open(self.name, mode)

    def read(self, n: int = -1) -> Any:
        """Reads ``n`` bytes (characters in text mode), or to the end."""
        return self._file.read(n)

    def readline(self) -> Any:
        """Reads one line, with its newline."""
        return self._file.readline()

    def readlines(self) -> list[Any]:
        """Reads every remaining line."""
        return self._file.readlines()

    def write(self, data: Any) -> int | None:
        """Writes ``data`` (``str`` in text mode, ``bytes`` in binary mode)."""
        return self._file.write(data)

    def flush(self) -> None:
        """Flushes what was written (object stores still publish the file at close)."""
        self._file.flush()

    def seek(self, offset: int, whence: int = 0) -> int:
        """Moves to ``offset`` (from the start, the position or the end by ``whence``)."""
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        """The current position."""
        return self._file.tell()

    def size(self) -> int:
        """The file's size in bytes."""
        return _fs.size(self.name)

    def close(self) -> None:
        """Closes the file (publishing it, for a write on an object store)."""
        self._file.close()

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._file.closed

    def __iter__(self) -> Iterator[Any]:
        return iter(self._file)

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


Open = GFile


def exists(path: str | os.PathLike) -> bool:
    """True when ``path`` is a file or a directory (``tf.io.gfile.exists``)."""
    return _fs.exists(path)


def isdir(path: str | os.PathLike) -> bool:
    """True when ``path`` is a directory (``tf.io.gfile.isdir``)."""
    return _fs.isdir(path)


def glob(pattern: str | os.PathLike) -> list[str]:
    """The paths that match ``pattern``, sorted (``tf.io.gfile.glob``).

    Remote patterns give URLs (``gs://bucket/train-00001``). Example:
        >>> glob("memory://gfile-doc/nothing-*")
        []
    """
    return _fs.glob(_path_str(pattern))


def makedirs(path: str | os.PathLike) -> None:
    """Creates ``path`` and its parents; no error when it exists (``tf.io.gfile.makedirs``)."""
    _fs.makedirs(path)


def mkdir(path: str | os.PathLike) -> None:
    """Creates the directory ``path`` (``tf.io.gfile.mkdir``); its parent must exist locally.

    Raises:
        FileExistsError: ``path`` exists.
    """
    loc = _fs.locate(path)
    if loc.fs is None:
        os.mkdir(loc.path)
    elif loc.fs.exists(loc.path):
        raise FileExistsError(f"mkdir: {loc.url!r} exists already.")
    else:
        loc.fs.mkdir(loc.path, create_parents=False)


def listdir(path: str | os.PathLike) -> list[str]:
    """The names in the directory ``path``, without the path, sorted (``tf.io.gfile.listdir``).

    Raises:
        FileNotFoundError: ``path`` is not a directory.
    """
    loc = _fs.locate(path)
    if loc.fs is None:
        return sorted(os.listdir(loc.path))
    if not loc.fs.isdir(loc.path):
        raise FileNotFoundError(f"listdir: {loc.url!r} is not a directory.")
    names = loc.fs.ls(loc.path, detail=False)
    return sorted(posixpath.basename(n.rstrip("/")) for n in names)


def remove(path: str | os.PathLike) -> None:
    """Deletes the file ``path`` (``tf.io.gfile.remove``).

    Raises:
        FileNotFoundError: there is no such file.
    """
    loc = _fs.locate(path)
    if loc.fs is None:
        os.remove(loc.path)
    elif not loc.fs.isfile(loc.path):
        raise FileNotFoundError(f"remove: no file at {loc.url!r}.")
    else:
        loc.fs.rm_file(loc.path)


def rmtree(path: str | os.PathLike) -> None:
    """Deletes the directory ``path`` and everything under it (``tf.io.gfile.rmtree``)."""
    loc = _fs.locate(path)
    if loc.fs is None:
        shutil.rmtree(loc.path)
    else:
        loc.fs.rm(loc.path, recursive=True)


def _check_target(what: str, dst: str, overwrite: bool) -> None:
    if not overwrite and _fs.exists(dst):
        raise FileExistsError(f"{what}: {dst!r} exists; pass overwrite=True to replace it.")


def rename(src: str | os.PathLike, dst: str | os.PathLike, overwrite: bool = False) -> None:
    """Moves ``src`` to ``dst`` (``tf.io.gfile.rename``), on one file system.

    On object stores a move is a copy then a delete, as in TensorFlow.

    Raises:
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
    """
    src, dst = _path_str(src), _path_str(dst)
    _check_target("rename", dst, overwrite)
    a, b = _fs.locate(src), _fs.locate(dst)
    if a.fs is None and b.fs is None:
        os.replace(a.path, b.path)
    elif a.fs is not None and type(a.fs) is type(b.fs):
        a.fs.mv(a.path, b.path)
    else:
        copy(src, dst, overwrite=True)
        remove(src)


def copy(src: str | os.PathLike, dst: str | os.PathLike, overwrite: bool = False) -> None:
    """Copies the file ``src`` to ``dst``, across file systems too (``tf.io.gfile.copy``).

    Raises:
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
    """
    src, dst = _path_str(src), _path_str(dst)
    _check_target("copy", dst, overwrite)
    with _fs.atomic_write(dst) as out, _fs.open(src, "rb") as f:
        while chunk := f.read(_fs.READ_AHEAD_BYTES):
            out.write(chunk)


def join(path: str, *paths: str) -> str:
    """Joins path components with ``/`` (``tf.io.gfile.join``); URLs keep their protocol.

    Examples:
        >>> join("gs://bucket", "data", "train.tfrecord")
        'gs://bucket/data/train.tfrecord'
    """
    if _fs.is_url(path):
        return posixpath.join(path, *paths)
    return os.path.join(path, *paths)


class FileStatistics(NamedTuple):
    """What ``stat`` returns (``tf.io.gfile.stat``'s fields)."""

    length: int
    mtime_nsec: int
    is_directory: bool


def stat(path: str | os.PathLike) -> FileStatistics:
    """The size, modification time (ns, 0 when unknown) and kind of ``path``.

    Raises:
        FileNotFoundError: nothing is at ``path``.
    """
    loc = _fs.locate(path)
    if loc.fs is None:
        st = os.stat(loc.path)
        return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(loc.path))
    info = loc.fs.info(loc.path)
    mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
    if hasattr(mtime, "timestamp"):
        mtime = mtime.timestamp()
    return FileStatistics(
        int(info.get("size") or 0), int(float(mtime) * 1e9), info.get("type") == "directory"
    )


def walk(
    top: str | os.PathLike, topdown: bool = True, onerror: Any = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Yields ``(dirpath, dirnames, filenames)`` for ``top`` and each folder under it (``tf.io.gfile.walk``).

    ``dirpath`` keeps ``top``'s form (a URL for a remote ``top``).
    """
    loc = _fs.locate(top)
    if loc.fs is None:
        yield from os.walk(loc.path, topdown=topdown, onerror=onerror)
        return
    on_error = onerror if callable(onerror) else "omit"
    for root, dirs, files in loc.fs.walk(loc.path, topdown=topdown, on_error=on_error):
        yield loc.to_url(root), sorted(dirs), sorted(files)


def _path_str(path: str | os.PathLike) -> str:
    """``path`` as ``str`` (``bytes`` decoded as UTF-8)."""
    out = os.fspath(path)
    return out.decode("utf-8") if isinstance(out, bytes) else out
