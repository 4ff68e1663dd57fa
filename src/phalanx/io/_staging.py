"""Logs for remote folders: written to a local copy, uploaded whole on each sync.

tensorboardX and the csv module write through the operating system's files,
and object stores cannot append to an object. So a ``TensorBoard`` log dir
or a ``CSVLogger`` file that is a URL is written to a local temporary copy,
and each ``sync()`` uploads the files that changed since the last one, whole
(event files and CSV logs are kilobytes per epoch). The callbacks sync at
every epoch end and when they close, as TensorFlow's GCS writer re-uploads
a file on each flush. An upload that fails raises where the callback
synced; the local copy stays until ``close``.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile

from . import _fs

__all__ = ["StagedDir", "StagedFile"]


class StagedDir:
    """A local folder whose files are uploaded to the folder ``url`` on `sync`.

    Examples:
        >>> staged = StagedDir("memory://staging-doc/logs")
        >>> with open(os.path.join(staged.local, "a.txt"), "w") as f:
        ...     _ = f.write("x")
        >>> staged.close()
        >>> _fs.glob("memory://staging-doc/logs/*")
        ['memory://staging-doc/logs/a.txt']
    """

    def __init__(self, url: str):
        _fs.locate(url)  # a missing protocol package fails here, not at the first upload
        self.url = url.rstrip("/")
        self.local = tempfile.mkdtemp(prefix="phalanx-staged-")
        self._sent: dict[str, tuple[int, int]] = {}

    def sync(self) -> None:
        """Uploads every file that changed (size or modification time) since the last sync."""
        for root, _, files in os.walk(self.local):
            for name in sorted(files):
                full = os.path.join(root, name)
                rel = os.path.relpath(full, self.local).replace(os.sep, "/")
                st = os.stat(full)
                key = (st.st_size, st.st_mtime_ns)
                if self._sent.get(rel) != key:
                    _fs.upload(full, posixpath.join(self.url, rel))
                    self._sent[rel] = key

    def close(self) -> None:
        """Uploads what changed, then deletes the local copy."""
        try:
            self.sync()
        finally:
            shutil.rmtree(self.local, ignore_errors=True)


class StagedFile:
    """A local file uploaded to ``url`` on `sync`; with ``download``, it starts as ``url``'s copy."""

    def __init__(self, url: str, *, download: bool = False):
        _fs.locate(url)
        self.url = url
        fd, self.local = tempfile.mkstemp(prefix="phalanx-staged-", suffix=posixpath.basename(url))
        os.close(fd)
        if download and _fs.exists(url):
            _fs.download(url, self.local)

    def sync(self) -> None:
        """Uploads the file, replacing ``url``."""
        _fs.upload(self.local, self.url)

    def close(self) -> None:
        """Uploads the file, then deletes the local copy."""
        try:
            self.sync()
        finally:
            os.remove(self.local)
