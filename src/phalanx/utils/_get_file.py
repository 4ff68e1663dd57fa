"""Keras's ``keras.utils.get_file``: a file downloaded once into a cache, checked, extracted.

The cache paths, the hash checks and the safe extraction are Keras 3's
``keras/src/utils/file_utils.py``; the download is ``urllib`` with a timeout, written to a
temporary file beside the target and renamed onto it only once complete and verified, so an
interrupted or corrupted download never looks like a cached file.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import inspect
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import DownloadError, FileHashError, UtilsArgumentError

TIMEOUT_S = 60.0  # seconds that one connect or read may block before the download fails
_CHUNK = 1 << 16
_HASH_ALGORITHMS = ("auto", "sha256", "md5")


def get_file(
    fname: str | os.PathLike | None = None,
    origin: str | None = None,
    untar: bool = False,
    md5_hash: str | None = None,
    file_hash: str | None = None,
    cache_subdir: str = "datasets",
    hash_algorithm: str = "auto",
    extract: bool = False,
    archive_format: str | list[str] | None = "auto",
    cache_dir: str | os.PathLike | None = None,
    force_download: bool = False,
) -> str:
    """Downloads ``origin`` into the cache unless it is there already, as Keras 3's.

    The file goes to ``cache_dir/cache_subdir/fname`` (``cache_dir`` defaults to
    ``$KERAS_HOME``, else ``~/.keras``; a folder that cannot be written falls back to
    ``/tmp/.keras``, as Keras). A file already there is reused unless ``force_download``,
    or a ``file_hash`` it does not match. With ``extract`` (or ``untar``) the download
    is kept as ``<fname>_archive`` and unpacked into the folder ``<fname>`` -- or, when
    ``fname`` has an extension, kept as ``fname`` and unpacked into
    ``<fname up to its first dot>_extracted`` -- and that folder is returned (Keras 3.15's
    paths). Members that would land outside that folder (``../``, absolute paths, links
    out) are skipped with a warning, as Keras's filter.

    Args:
      fname: the file's name in the cache; default the last part of ``origin``'s path.
        A path (with a separator) is refused: use ``cache_dir``.
      origin: the URL (``http://``, ``https://``, ``file://``, ...).
      untar: extract a tar archive (Keras's deprecated spelling of ``extract``).
      md5_hash: the file's md5 (deprecated spelling of ``file_hash`` with ``"md5"``).
      file_hash: the file's expected sha256 or md5 hex digest.
      cache_subdir: the folder under ``cache_dir``; an absolute path is used as is.
      hash_algorithm: ``"sha256"``, ``"md5"``, or ``"auto"`` (sha256 for a 64-digit
        hash, md5 otherwise).
      extract: extract the archive (tar, tar.gz, tar.bz2 or zip).
      archive_format: ``"auto"`` (tar, then zip), ``"tar"``, ``"zip"``, a list of these,
        or None (no extraction).
      cache_dir: the cache's root.
      force_download: download even when the file is cached.

    Returns:
      The path of the file, or of the extraction folder with ``extract``/``untar``.

    Raises:
      UtilsArgumentError: no ``origin``, an ``fname`` that is a path or cannot be taken
        from ``origin``, or a ``hash_algorithm`` other than the three.
      DownloadError: the download failed (HTTP error, unreachable, timeout, short body);
        the message names the URL.
      FileHashError: the downloaded file does not match ``file_hash``.

    Examples:
      >>> import hashlib, pathlib, tempfile
      >>> src = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
      >>> _ = src.write_text("hello")
      >>> digest = hashlib.sha256(b"hello").hexdigest()
      >>> cache = tempfile.mkdtemp()
      >>> path = get_file(origin=src.as_uri(), file_hash=digest, cache_dir=cache)
      Downloading data from file://...notes.txt
      >>> path == os.path.join(cache, "datasets", "notes.txt"), open(path).read()
      (True, 'hello')
      >>> get_file(origin=src.as_uri(), file_hash=digest, cache_dir=cache) == path  # cached
      True
    """
    if origin is None:
        raise UtilsArgumentError(
            'Please specify the "origin" argument (URL of the file to download).'
        )
    if hash_algorithm not in _HASH_ALGORITHMS:
        raise UtilsArgumentError(
            f"get_file: `hash_algorithm` must be one of {_HASH_ALGORITHMS}; got "
            f"{hash_algorithm!r}. Give the digest's algorithm, or 'auto' to tell sha256 "
            "(64 hex digits) from md5."
        )
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    datadir = os.path.join(_cache_root(cache_dir), cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    download_target, extraction_dir = _targets(datadir, fname, origin, extract or untar)
    if _needs_download(download_target, file_hash, hash_algorithm, force_download):
        print(f"Downloading data from {origin}")
        _download(origin, download_target, file_hash, hash_algorithm)
    if extraction_dir is None:
        return download_target
    if not extract_archive(download_target, extraction_dir, "tar" if untar else archive_format):
        warnings.warn("Could not extract archive.", stacklevel=2)
    return extraction_dir


def _cache_root(cache_dir: str | os.PathLike | None) -> str:
    """``cache_dir`` (default ``$KERAS_HOME`` or ``~/.keras``), created when missing;
    ``/tmp/.keras`` when it cannot be written, as Keras."""
    if cache_dir is None:
        cache_dir = os.environ.get("KERAS_HOME")
    if cache_dir is None:
        home = os.path.expanduser("~")
        cache_dir = os.path.join(home if os.access(home, os.W_OK) else "/tmp", ".keras")
    base = os.path.expanduser(os.fspath(cache_dir))
    with contextlib.suppress(OSError):  # not writable: the fallback below, as Keras
        os.makedirs(base, exist_ok=True)
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(), ".keras")
    return base


def _targets(
    datadir: str, fname: str | os.PathLike | None, origin: str, extract: bool
) -> tuple[str, str | None]:
    """Keras 3.15's ``(download_target, extraction_dir)`` (None without extraction)."""
    provided = fname
    fname = os.fspath(fname) if fname is not None else None
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise UtilsArgumentError(
                f"Can't parse the file name from the origin provided: '{origin}'."
                "Please specify the `fname` argument."
            )
    elif os.sep in fname:
        raise UtilsArgumentError(
            "Paths are no longer accepted as the `fname` argument. To specify the file's "
            f"parent directory, use the `cache_dir` argument. Received: fname={fname}"
        )
    if not extract:
        return os.path.join(datadir, fname), None
    if provided and "." in fname:
        stem = fname[: fname.find(".")]
        return os.path.join(datadir, fname), os.path.join(datadir, f"{stem}_extracted")
    return os.path.join(datadir, f"{fname}_archive"), os.path.join(datadir, fname)


def _needs_download(target: str, file_hash: str | None, algorithm: str, force: bool) -> bool:
    if force or not os.path.exists(target):
        return True
    if file_hash is not None and not validate_file(target, file_hash, algorithm):
        print(
            "A local file was found, but it seems to be incomplete or outdated because the "
            f"{algorithm} file hash does not match the original value of {file_hash} so we "
            "will re-download the data."
        )
        return True
    return False


def _download(origin: str, target: str, file_hash: str | None, algorithm: str) -> None:
    """``origin`` into ``target``: into a temporary file beside it, checked, then renamed."""
    fd, partial = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)}.", suffix=".part", dir=os.path.dirname(target)
    )
    try:
        with os.fdopen(fd, "wb") as out:
            _copy_url(origin, out)
        if file_hash is not None and not validate_file(partial, file_hash, algorithm):
            raise FileHashError(
                f"Incomplete or corrupted file detected. The {algorithm} file hash does not "
                f"match the provided value of {file_hash} (downloaded from {origin}; it was "
                "not kept). Check `file_hash` and `origin`, or pass file_hash=None."
            )
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _copy_url(origin: str, out: Any) -> None:
    """Streams ``origin``'s body into ``out``; any failure is a ``DownloadError``."""
    try:
        with urllib.request.urlopen(origin, timeout=TIMEOUT_S) as response:
            expected = response.headers.get("Content-Length")
            done = 0
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                done += len(chunk)
    except urllib.error.HTTPError as e:
        raise _fetch_failure(origin, e.code, e.msg) from e
    except urllib.error.URLError as e:
        raise _fetch_failure(origin, e.errno, e.reason) from e
    except (OSError, http.client.HTTPException) as e:  # a timeout, a reset, a bad response
        raise _fetch_failure(origin, getattr(e, "errno", None), repr(e)) from e
    if expected is not None and expected.isdigit() and done < int(expected):
        short = f"retrieval incomplete: got only {done} out of {expected} bytes"
        raise _fetch_failure(origin, None, short)


def _fetch_failure(origin: str, code: Any, reason: Any) -> DownloadError:
    return DownloadError(
        f"URL fetch failure on {origin}: {code} -- {reason}. Nothing was written to the "
        f"cache. Check the URL and the network (each connect or read waits at most "
        f"{TIMEOUT_S:g} s), or put the file in the cache folder yourself."
    )


def hash_file(path: str, algorithm: str = "sha256", file_hash: str | None = None) -> str:
    """The hex digest of the file at ``path`` (Keras's ``hash_file``/``resolve_hasher``)."""
    sha256 = algorithm == "sha256" or (
        algorithm == "auto" and file_hash is not None and len(file_hash) == 64
    )
    hasher = hashlib.sha256() if sha256 else hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(path: str, file_hash: str, algorithm: str = "auto") -> bool:
    """Whether the file at ``path`` has the digest ``file_hash`` (Keras's ``validate_file``)."""
    return hash_file(path, algorithm, file_hash) == str(file_hash)


def extract_archive(
    file_path: str | os.PathLike, path: str | os.PathLike = ".", archive_format: Any = "auto"
) -> bool:
    """Keras's ``extract_archive``: True once a tar or zip archive was extracted into ``path``.

    A failed extraction removes ``path`` and raises again, as Keras.
    """
    if archive_format is None:
        return False
    if archive_format == "auto":
        archive_format = ["tar", "zip"]
    if isinstance(archive_format, str):
        archive_format = [archive_format]
    file_path, path = os.fspath(file_path), os.fspath(path)
    for archive_type in archive_format:
        if archive_type == "tar":
            open_fn, is_match = tarfile.open, tarfile.is_tarfile
        elif archive_type == "zip":
            open_fn, is_match = zipfile.ZipFile, zipfile.is_zipfile
        else:
            raise UtilsArgumentError(
                f"get_file: `archive_format` must be 'auto', 'tar', 'zip', a list of them or "
                f"None; got {archive_type!r}."
            )
        if is_match(file_path):
            with open_fn(file_path) as archive:
                try:
                    _extract_open_archive(archive, path)
                except (tarfile.TarError, RuntimeError, KeyboardInterrupt):
                    if os.path.isfile(path):
                        os.remove(path)
                    elif os.path.exists(path):
                        shutil.rmtree(path)
                    raise
            return True
    return False


def _extract_open_archive(archive: Any, path: str) -> None:
    if isinstance(archive, zipfile.ZipFile):
        archive.extractall(path, members=_safe_zipinfos(archive.infolist(), path))
        return
    kwargs = (
        {"filter": "data"} if "filter" in inspect.signature(archive.extractall).parameters else {}
    )
    archive.extractall(path, members=_safe_tarinfos(archive, path), **kwargs)


def _resolve_sub_path(base_dir: str, relative: str) -> str | None:
    """The real path of ``base_dir/relative`` if it stays inside ``base_dir``, else None."""
    path = os.path.realpath(os.path.join(base_dir, relative))
    try:
        return path if os.path.commonpath([path, base_dir]) == base_dir else None
    except ValueError:
        return None


def _is_link_in_dir(info: tarfile.TarInfo, base_dir: str) -> bool:
    if info.islnk():  # hard links resolve from the archive's root
        return (
            _resolve_sub_path(base_dir, info.name) is not None
            and _resolve_sub_path(base_dir, info.linkname) is not None
        )
    destination = _resolve_sub_path(base_dir, info.name)
    if destination is None:
        return False
    link = os.path.realpath(os.path.join(os.path.dirname(destination), info.linkname))
    try:
        return os.path.commonpath([link, base_dir]) == base_dir
    except ValueError:
        return False


def _safe_tarinfos(members: Iterable[tarfile.TarInfo], base_dir: str) -> Iterator:
    base_dir = os.path.realpath(base_dir)
    for info in members:
        if info.issym() or info.islnk():
            safe = _is_link_in_dir(info, base_dir)
        else:
            safe = _resolve_sub_path(base_dir, info.name) is not None
        if safe:
            yield info
        else:
            _warn_skipped(info.name)


def _safe_zipinfos(members: Iterable[zipfile.ZipInfo], base_dir: str) -> Iterator:
    base_dir = os.path.realpath(base_dir)
    for info in members:
        if _resolve_sub_path(base_dir, info.filename) is not None:
            yield info
        else:
            _warn_skipped(info.filename)


def _warn_skipped(name: str) -> None:
    warnings.warn(f"Skipping invalid path during archive extraction: '{name}'.", stacklevel=3)
