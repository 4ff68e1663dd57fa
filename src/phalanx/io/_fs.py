"""The one file-system layer under every path phalanx reads or writes.

A path is either a plain local path (``data/train.tfrecord``), served by
``open`` and ``os`` as before, or a URL with a protocol (``gs://``,
``s3://``, ``memory://``, ``file://``, ``hf://`` ..., or a chained
``simplecache::gs://...``), served by fsspec. Plain paths never import
fsspec, so local reads cost what they always did.

`locate` is the one place that tells the two apart and finds the
file system; every other function here is a verb on the location it
returns. A protocol whose package is missing raises
`phalanx.errors.FileSystemNotInstalledError` naming the extra to
install (``pip install "phalanx[gcs]"``).

Reads from object stores stream through fsspec's read-ahead cache with
blocks of at least `READ_AHEAD_BYTES` (16 MiB): one ranged GET per
block, never the whole file before the first record. Writes that must be
all-or-nothing go through `atomic_write`: a temporary file renamed
into place on local disks; a local spool uploaded in one ``put_file`` (one
object PUT, or a multipart upload completed only at the end) elsewhere, so
an interrupted writer leaves the previous object as it was.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.registry import known_implementations

from ..errors import FileSystemNotInstalledError, UnknownProtocolError

__all__ = [
    "READ_AHEAD_BYTES",
    "Location",
    "atomic_write",
    "exists",
    "glob",
    "isdir",
    "locate",
    "makedirs",
    "open",
    "os_path",
    "size",
]

#: Object stores are read in blocks of at least this many bytes (one ranged request each).
READ_AHEAD_BYTES = 16 << 20

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
# The extra of pyproject.toml that installs each protocol's package.
_EXTRAS = {"gs": "gcs", "gcs": "gcs", "s3": "s3", "s3a": "s3"}


def is_url(path: str) -> bool:
    """True for a path with a protocol (``gs://b/x``, ``memory://x``, ``a::b://c``).

    Examples:
        >>> is_url("gs://bucket/x"), is_url("data/x"), is_url("C:/data/x")
        (True, False, False)
    """
    return bool(_URL.match(path)) or "::" in path


def protocol_of(path: str) -> str:
    """The protocol of the last file system in ``path`` (``""`` for a plain path).

    Examples:
        >>> protocol_of("simplecache::s3://bucket/x"), protocol_of("/tmp/x")
        ('s3', '')
    """
    match = _URL.match(path.rsplit("::", 1)[-1])
    return match.group(1).lower() if match else ""


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a path lives: ``fs`` is None for a plain local path, else its fsspec file system.

    Attributes:
        url: the path as given.
        fs: the fsspec file system, or None for a plain local path.
        path: what ``fs`` (or ``os``) calls it: the URL without its protocol.
    """

    url: str
    fs: Any
    path: str

    @property
    def local(self) -> bool:
        """True when the bytes are on this machine's disks (a plain path or ``file://``)."""
        if self.fs is None:
            return True

        return isinstance(self.fs, LocalFileSystem)

    def to_url(self, fs_path: str) -> str:
        """``fs_path`` (a path of the same file system) as a URL the user can pass back."""
        if self.fs is None:
            return fs_path
        if "::" in self.url:  # keep the chain (simplecache::...) in front
            chain = self.url.rsplit("::", 1)[0]
            return f"{chain}::{self.fs.unstrip_protocol(fs_path)}"
        protocol = protocol_of(self.url)
        stripped = self.fs._strip_protocol(fs_path)
        if protocol in ("file", "local"):
            return f"{protocol}://{stripped}"
        return f"{protocol}://{stripped.lstrip('/')}"


def locate(path: str | os.PathLike) -> Location:
    """Finds the file system of ``path``: the one function that tells local from remote.

    Raises:
        FileSystemNotInstalledError: the protocol's package (gcsfs, s3fs ...) is missing.
        UnknownProtocolError: no fsspec file system serves the protocol.

    Examples:
        >>> locate("data/x.tfrecord").fs is None
        True
        >>> loc = locate("memory://bucket/x.tfrecord")
        >>> type(loc.fs).__name__, loc.path
        ('MemoryFileSystem', '/bucket/x.tfrecord')
    """
    url = os.fspath(path)
    if isinstance(url, bytes):
        url = url.decode("utf-8")
    if not is_url(url):
        return Location(url, None, url)
    try:
        fs, fs_path = fsspec.core.url_to_fs(url)
    except ImportError as e:
        raise _not_installed(url, _package_of(protocol_of(url)), e) from None
    except ValueError as e:
        if "Protocol not known" not in str(e):
            raise
        raise UnknownProtocolError(
            f"{url!r}: no file system serves the protocol {protocol_of(url)!r}:// ({e}). "
            "Use a local path or a protocol fsspec knows (gs://, s3://, memory://, file://, "
            "hf://, az:// ...), or install the package that registers it."
        ) from None
    return Location(url, fs, fs_path)


def _package_of(protocol: str) -> str:
    cls = known_implementations.get(protocol, {}).get("class", protocol)
    return cls.split(".", 1)[0]


def _not_installed(url: str, package: str, cause: Exception | None = None) -> Exception:
    protocol = protocol_of(url)
    extra = _EXTRAS.get(protocol)
    install = f'pip install "phalanx[{extra}]"' if extra else f"pip install {package}"
    why = f" ({cause})" if cause else ""
    return FileSystemNotInstalledError(
        f"{url!r}: reading or writing {protocol}:// paths needs the {package} package, which "
        f"is not installed{why}. Install it with: {install}"
    )


def os_path(path: str | os.PathLike) -> str | None:
    """The path on this machine's disks (plain paths and ``file://`` URLs); None when remote.

    Examples:
        >>> os_path("file:///tmp/x"), os_path("/tmp/x"), os_path("memory://x")
        ('/tmp/x', '/tmp/x', None)
    """
    loc = locate(path)
    if loc.fs is None:
        return loc.path
    return loc.path if loc.local and "::" not in loc.url else None


def open(
    path: str | os.PathLike,
    mode: str = "rb",
    *,
    buffering: int = -1,
    block_size: int | None = None,
    read_ahead: bool = True,
    **kwargs: Any,
) -> IO:
    """Opens ``path`` (local or remote) like the builtin ``open``.

    Args:
        path: a plain path or a URL.
        mode: ``"rb"``, ``"wb"``, ``"r"``, ``"w"``, ``"ab"`` ...
        buffering: the builtin's buffering, for plain local paths.
        block_size: for remote reads, the read-ahead block in bytes (at least
            `READ_AHEAD_BYTES`).
        read_ahead: False for a remote file read a few bytes at a time (a
            sniff of its header): each read is then one ranged request.
        kwargs: text-mode options (``encoding``, ``newline``).

    Examples:
        >>> with open("memory://doc/open.txt", "w") as f:
        ...     _ = f.write("hello")
        >>> open("memory://doc/open.txt", "r").read()
        'hello'
    """
    loc = locate(path)
    if loc.fs is None:
        return builtins.open(loc.path, mode, buffering=buffering, **kwargs)
    if not loc.local and "r" in mode:
        if read_ahead:
            kwargs["cache_type"] = "readahead"
            kwargs["block_size"] = max(int(block_size or 0), READ_AHEAD_BYTES)
        else:
            kwargs["cache_type"] = "none"
    return loc.fs.open(loc.path, mode, **kwargs)


def exists(path: str | os.PathLike) -> bool:
    """True when ``path`` names a file or a directory."""
    loc = locate(path)
    return os.path.exists(loc.path) if loc.fs is None else loc.fs.exists(loc.path)


def isdir(path: str | os.PathLike) -> bool:
    """True when ``path`` is a directory (on object stores: a prefix with objects under it)."""
    loc = locate(path)
    return os.path.isdir(loc.path) if loc.fs is None else loc.fs.isdir(loc.path)


def isfile(path: str | os.PathLike) -> bool:
    """True when ``path`` is a file (an object)."""
    loc = locate(path)
    return os.path.isfile(loc.path) if loc.fs is None else loc.fs.isfile(loc.path)


def size(path: str | os.PathLike) -> int:
    """The size of the file in bytes."""
    loc = locate(path)
    return os.path.getsize(loc.path) if loc.fs is None else int(loc.fs.size(loc.path))


def glob(pattern: str | os.PathLike) -> list[str]:
    """The paths matching ``pattern`` (``*``, ``?``, ``[..]``), sorted, in the pattern's form.

    A remote pattern gives URLs with the same protocol, which every other
    function here (and every phalanx reader) takes back.

    Examples:
        >>> for i in range(2):
        ...     with open(f"memory://doc/glob/part-{i}.txt", "wb") as f:
        ...         _ = f.write(b"x")
        >>> glob("memory://doc/glob/part-*.txt")
        ['memory://doc/glob/part-0.txt', 'memory://doc/glob/part-1.txt']
    """
    import glob as _glob

    loc = locate(pattern)
    if loc.fs is None:
        return sorted(_glob.glob(loc.path))
    return sorted(loc.to_url(p) for p in loc.fs.glob(loc.path))


def makedirs(path: str | os.PathLike) -> None:
    """Creates ``path`` and its parents; nothing to do when it exists (or on object stores)."""
    loc = locate(path)
    if loc.fs is None:
        os.makedirs(loc.path, exist_ok=True)
    else:
        loc.fs.makedirs(loc.path, exist_ok=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file that appears at ``path`` complete, or not at all.

    Local disks: a temporary file beside ``path``, flushed to disk and renamed
    over it (its folder is created). Other file systems: a local temporary
    file, uploaded in one ``put_file`` when the block ends without error; an
    error leaves whatever was at ``path`` before untouched.

    Examples:
        >>> with atomic_write("memory://doc/atomic/out.bin") as f:
        ...     _ = f.write(b"all")
        >>> open("memory://doc/atomic/out.bin").read()
        b'all'
    """
    loc = locate(path)
    target = os_path(path)
    if target is not None:
        parent = os.path.dirname(os.path.abspath(target))
        os.makedirs(parent, exist_ok=True)
        tmp = os.path.join(
            parent, f".{os.path.basename(target)}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        )
        try:
            with builtins.open(tmp, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    fd, tmp = tempfile.mkstemp(prefix="phalanx-upload-")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        loc.fs.put_file(tmp, loc.path)  # object stores have no folders to make first
    finally:
        os.remove(tmp)


def upload(local_file: str, path: str | os.PathLike) -> None:
    """Copies a local file to ``path`` (any file system), replacing what was there."""
    loc = locate(path)
    if loc.fs is None:
        shutil.copyfile(local_file, loc.path)
    else:
        loc.fs.put_file(local_file, loc.path)


def download(path: str | os.PathLike, local_file: str) -> None:
    """Copies ``path`` (any file system) to a local file."""
    loc = locate(path)
    if loc.fs is None:
        shutil.copyfile(loc.path, local_file)
    else:
        loc.fs.get_file(loc.path, local_file)
