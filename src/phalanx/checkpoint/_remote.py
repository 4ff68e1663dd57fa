"""Checkpoints on any fsspec URL (``gs://``, ``s3://``, ``memory://`` ...): staged, uploaded, committed.

orbax writes local checkpoints atomically by renaming a finished temporary
folder. Object stores have no rename (``s3://`` moves each object by a copy
and a delete; ``memory://`` and other fsspec protocols are not orbax paths at
all), so for a URL the checkpoint is written into a local *staging* folder
(phalanx's one file, ``_file``, or orbax's folder for arrays split over
processes) and phalanx uploads it through ``phalanx.io`` (fsspec), then
commits it by writing a marker object, `MARKER`, last:

1. the checkpoint is written to ``<staging>/ckpt``;
2. process 0 deletes the checkpoint that was at the URL (the marker first;
   ``check_target`` refuses a URL holding other objects), and every process
   agrees that it is gone (or that process 0 failed);
3. each process uploads the files it wrote (orbax's ``ocdbt.process_<i>``
   folders; process 0 the rest) to the URL's final names, all processes agree
   that every upload succeeded, and only then process 0 writes the marker;
4. the staging folder is deleted.

A checkpoint counts (``Checkpoint.restore``, ``latest_checkpoint``, a
manager's list) only when its marker exists: a writer killed before step 3
ends leaves objects without a marker, which nothing reads and the next save
to that name (or a manager's clean-up) deletes, and the previous checkpoint
is the one restored. Restores download the checkpoint into a local folder
that orbax reads, then delete it.

With ``async_save`` the arrays are copied to the host and every step runs in
one background thread (``_background``); the next save, ``wait_until_finished``
and ``close`` wait for it and raise its error. A save still uploading when the
interpreter exits is abandoned uncommitted (call ``close()`` before the script ends).

Several processes must call ``save`` alike; each stages in its own
``PHALANX_CHECKPOINT_STAGING`` (default: the temporary directory), which need
not be shared. When every array is whole on process 0's host (replicated
variables: ``host_arrays`` copies them), process 0 writes the checkpoint's
one file alone and uploads it; the others only take part in the agreements. Arrays split over
processes (``shard_parameters``, a layout map across processes) are written
by orbax on every process, which merges their files in one folder: then the
staging folder must be one that every process sees (NFS), and
``_require_shared`` checks it before orbax starts (process 0 leaves a file
with a nonce; the others look for it) and raises a ``CheckpointError`` if not.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..cluster import _agree, _kv
from ..errors import CheckpointError, CheckpointNotFoundError
from ..io import _fs
from . import _background, _file, _io
from ._steps import Steps, deleting_old, to_delete

#: The object written last into a remote checkpoint: it exists only once every file is there.
MARKER = "phalanx_checkpoint_committed"
#: Where checkpoints for URLs are staged (default: the system's temporary directory).
STAGING_ENV = "PHALANX_CHECKPOINT_STAGING"
_OWNER = re.compile(r"(?:^|/)ocdbt\.process_(\d+)(?:/|$)")


def _locate(url: str):
    return _fs.locate(url)


def join(url: str, name: str) -> str:
    """``url/name`` (URLs use ``/`` whatever the operating system)."""
    return f"{url.rstrip('/')}/{name}"


def is_committed(url: str) -> bool:
    """Whether a committed checkpoint is at ``url`` (its marker exists)."""
    loc = _locate(join(url, MARKER))
    loc.fs.invalidate_cache(posixpath.dirname(loc.path))
    return bool(loc.fs.exists(loc.path))


def numbered(
    directory: str, name: str, *, committed_only: bool = True, separator: str = "_"
) -> list[int]:
    """The numbers ``n`` of the folders ``<directory>/<name>_<n>`` (``separator``), committed
    ones only by default."""
    loc = _locate(directory)
    loc.fs.invalidate_cache(loc.path)
    try:
        entries = loc.fs.ls(loc.path, detail=False)
    except FileNotFoundError:
        return []
    numbers = []
    for entry in entries:
        prefix, _, number = posixpath.basename(entry.rstrip("/")).rpartition(separator)
        if prefix != name or not number.isdigit():
            continue
        if not committed_only or is_committed(join(directory, f"{name}{separator}{number}")):
            numbers.append(int(number))
    return sorted(numbers)


def remove(url: str) -> None:
    """Deletes the checkpoint at ``url``: its marker first, so it is never half-visible."""
    loc = _locate(url)
    marker = join(loc.path, MARKER)
    if loc.fs.exists(marker):
        loc.fs.rm(marker)
    loc.fs.invalidate_cache(loc.path)
    if loc.fs.exists(loc.path):
        with contextlib.suppress(FileNotFoundError):  # an object store's empty "folder"
            loc.fs.rm(loc.path, recursive=True)


#: What a phalanx checkpoint (either format) holds at its top level, committed or not.
_CHECKPOINT_NAMES = {
    "state.phalanx",
    "meta",
    "arrays",
    "_CHECKPOINT_METADATA",
    "commit_success.txt",
}


def check_target(url: str) -> None:
    """Refuses, before anything is deleted there, a ``url`` that holds objects other than a
    checkpoint's (a save clears the URL first: ``gs://bucket/data`` would lose its data).

    Raises:
      CheckpointError: an object (a file) is at ``url``, or objects that no checkpoint holds.
    """
    loc = _locate(url)
    loc.fs.invalidate_cache(loc.path)
    if loc.fs.isfile(loc.path):
        raise CheckpointError(
            f"Cannot write the checkpoint {url!r}: an object (a file) of that name exists. A "
            "checkpoint is a folder; give another URL (or delete the object)."
        )
    try:
        names = {posixpath.basename(e.rstrip("/")) for e in loc.fs.ls(loc.path, detail=False)}
    except FileNotFoundError:
        return
    other = sorted(names - _CHECKPOINT_NAMES - {MARKER})
    if other:
        raise CheckpointError(
            f"Cannot write the checkpoint {url!r}: it holds objects that are not a checkpoint's "
            f"({other[:5]}), which a save would delete. Give a new URL (Checkpoint.save numbers "
            "them), or delete those objects first."
        )


def _clear(url: str) -> None:
    check_target(url)
    remove(url)


def _owner(relative: str) -> int:
    match = _OWNER.search(relative)
    return int(match.group(1)) if match else 0


def _files(root: str) -> list[str]:
    """The files under the local folder ``root``, relative, with ``/`` separators."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return sorted(found)


def upload(local: str, url: str, *, process: int = 0, processes: int = 1) -> int:
    """Uploads the files of the local folder ``local`` that ``process`` owns to ``url``.

    Returns:
      How many files were uploaded.
    """
    mine = [f for f in _files(local) if processes == 1 or _owner(f) == process]
    if mine:
        loc = _locate(url)
        sources = [os.path.join(local, *f.split("/")) for f in mine]
        loc.fs.put(sources, [join(loc.path, f) for f in mine])
    return len(mine)


@contextlib.contextmanager
def downloaded(url: str) -> Iterator[str]:
    """The committed checkpoint at ``url``, copied into a local folder deleted afterwards.

    Raises:
      CheckpointNotFoundError: no committed checkpoint at ``url``.
    """
    if not is_committed(url):
        raise CheckpointNotFoundError(
            f"No checkpoint at {url!r} (no committed checkpoint there: its marker "
            f"{MARKER!r} is missing, so it does not exist or its save never finished). Give a "
            "path that Checkpoint.save or write returned, or CheckpointManager(...)."
            "latest_checkpoint."
        )
    loc = _locate(url)
    local = tempfile.mkdtemp(prefix="phalanx-restore-")
    try:
        remote = [f for f in loc.fs.find(loc.path) if posixpath.basename(f) != MARKER]
        base = loc.path.rstrip("/") + "/"
        targets = []
        for f in remote:
            target = os.path.join(local, *f[len(base) :].split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            targets.append(target)
        if remote:
            loc.fs.get(remote, targets)
        yield local
    finally:
        shutil.rmtree(local, ignore_errors=True)


_processes = _background.processes
_agree_timeout = _background.agree_timeout


def _staging_folder(tag: str) -> str:
    """A new staging folder, the same path on every process (process 0 draws its name)."""
    root = os.environ.get(STAGING_ENV) or tempfile.gettempdir()
    token = _kv.gather(
        f"{tag}/staging", secrets.token_hex(6), timeout_s=_agree_timeout(), what="a staging name"
    )[0]
    return os.path.join(root, f"phalanx-staging-{token}")


#: How long processes other than 0 look for process 0's file in a staging folder meant to be shared.
SHARED_WAIT_S = 10.0


def _require_shared(staging: str, tag: str, url: str) -> None:
    """Checks that every process sees the staging folder of process 0 (arrays split over processes:
    orbax merges every process's files there). Process 0 leaves a file with a fresh nonce; the
    others look for it for up to `SHARED_WAIT_S` seconds (a network file system's caches).

    Raises:
      CheckpointError: a process did not see it (nothing was written).
    """
    me, _ = _processes()
    probe = os.path.join(staging, "phalanx-shared-probe")
    nonce = secrets.token_hex(8)
    if me == 0:
        os.makedirs(staging, exist_ok=True)
        with open(probe, "w") as f:
            f.write(nonce)
    nonce = _kv.gather(f"{tag}/nonce", nonce, timeout_s=_agree_timeout(), what="a probe")[0]
    deadline = time.monotonic() + SHARED_WAIT_S
    while not (seen := _reads(probe, nonce)) and time.monotonic() < deadline:
        time.sleep(0.2)
    agreed = _agree.all_have(tag, seen, timeout_s=_agree_timeout())
    if all(agreed):
        return
    if me == 0:
        shutil.rmtree(staging, ignore_errors=True)
    blind = [p for p, good in enumerate(agreed) if not good]
    raise CheckpointError(
        f"Checkpoint {url!r} was not written: its arrays are split over processes "
        f"(shard_parameters or a layout map), and orbax merges every process's shards in "
        f"one staging folder, but processes {blind} do not see the file that process 0 "
        f"wrote in it ({STAGING_ENV}={os.path.dirname(staging)!r} here). Set {STAGING_ENV} to a "
        "folder that every machine mounts (NFS), or save variables replicated (no "
        "shard_parameters). The previous checkpoint is still the latest."
    )


def _reads(path: str, text: str) -> bool:
    try:
        with open(path) as f:
            return f.read() == text
    except OSError:
        return False


def _failure(step: Callable[..., Any], *args: Any) -> BaseException | None:
    """``step(*args)``'s error, or None; raised at once with one process (nobody waits)."""
    try:
        step(*args)
    except Exception as error:
        if _processes()[1] == 1:
            raise
        return error
    return None


def _write_marker(url: str, text: str) -> None:
    loc = _locate(join(url, MARKER))
    with loc.fs.open(loc.path, "wb") as f:
        f.write(text.encode())


class RemoteWriter:
    """Writes checkpoints to URLs: orbax into a local staging folder, then upload and commit.

    Args:
      async_save: ``save`` returns once the arrays are on the host; orbax's
        write, the upload and the commit run in a background thread.
    """

    def __init__(self, async_save: bool):
        self._async = async_save
        self._orbax = _background.Checkpointers()
        self._background = _background.Background("phalanx-checkpoint-upload")
        self.pending: str | None = None  # the URL being written in the background

    def save(
        self,
        url: str,
        arrays: dict,
        meta: dict,
        *,
        after_commit: Callable[[], None] | None = None,
    ) -> None:
        """Saves ``arrays`` and ``meta`` as the checkpoint at ``url``, replacing one there.

        Raises:
          CheckpointError: the previous asynchronous save failed (raised here); the
            arrays are split over processes whose staging folders are not shared;
            or, saving synchronously, this save failed.
        """
        self.wait_until_finished()
        _, n = _processes()
        if n == 1:  # with several, process 0 checks it when it clears the URL (all agree)
            check_target(url)
        host = _background.host_arrays(arrays)  # whole on the host: process 0 writes alone
        tag = f"checkpoint/{_agree.new_round()}"
        staging = _staging_folder(tag)
        local = os.path.join(staging, "ckpt")
        commit = (url, staging, local, tag, after_commit)
        if host is not None:  # phalanx's file, then the upload and the commit
            job = (host, meta, commit)
            if not self._async:
                self._write_and_commit(*job)
                return
            self.pending = url
            self._background.run(self._write_and_commit, *job)
            return
        if n > 1:  # split arrays: orbax merges every process's files in one folder
            _require_shared(staging, f"{tag}/shared", url)
        orbax = self._orbax.get(self._async)
        try:
            orbax.save(local, args=_io.save_args(arrays, meta), force=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if not self._async:
            self._commit(*commit)
            return
        self.pending = url
        self._background.run(self._wait_and_commit, orbax, commit)

    def _write_and_commit(self, host: dict, meta: dict, commit: tuple) -> None:
        """Process 0 writes phalanx's one file of the host arrays, inside the commit (after the
        URL is cleared, so that a failure is agreed like an upload's), and uploads it."""
        local = commit[2]
        write = (lambda: _file.write(local, host, meta)) if _processes()[0] == 0 else None
        self._commit(*commit, write=write)

    def _wait_and_commit(self, orbax: Any, commit: tuple) -> None:
        try:
            orbax.wait_until_finished()
        except BaseException:
            self.pending = None
            shutil.rmtree(commit[1], ignore_errors=True)
            raise
        self._commit(*commit)

    def _commit(self, url, staging, local, tag, after_commit, write=None) -> None:
        """Steps 2-4 of the module docs: clear the URL, upload, agree, write the marker.

        ``write``: process 0 writing alone; it writes ``local`` after the URL is cleared and
        uploads every file.
        """
        me, n = _processes()
        timeout = _agree_timeout()
        try:
            # Process 0's steps answer their agreement even when they fail, so that the
            # others raise its error at once rather than at the agreement's deadline.
            _background.agree(f"{tag}/cleared", _failure(_clear, url) if me == 0 else None, url)
            count = self._upload_agreed(local, url, f"{tag}/uploaded", timeout, write)
            text = f"{count} files from process 0 of {n}\n"
            marker = _failure(_write_marker, url, text) if me == 0 else None
            _background.agree(f"{tag}/committed", marker, url)
            if after_commit is not None and me == 0:
                after_commit()
        finally:
            self.pending = None
            shutil.rmtree(staging, ignore_errors=True)

    def _upload_agreed(self, local: str, url: str, tag: str, timeout: float, write=None) -> int:
        """Uploads this process's files; returns their count once every process succeeded.

        ``write``: called first (process 0 writing alone: it uploads every file).

        Raises:
          CheckpointError: a process failed (named, with this process's error).
        """

        me, n = _processes()
        count, failure = 0, None
        try:
            if self._background.stop.is_set():
                raise CheckpointError(
                    "the interpreter exited before it finished: call close() or "
                    "wait_until_finished() before the script ends"
                )
            if write is not None:
                write()
            count = upload(local, url, process=me, processes=1 if write is not None else n)
        except Exception as error:  # every process must still answer the agreement
            failure = error
        _background.agree(tag, failure, url)
        return count

    def wait_until_finished(self) -> None:
        """Waits for the save in progress to be committed; raises its error if it failed."""
        self._background.wait()

    def close(self) -> None:
        """Finishes the pending save, then stops orbax's threads."""
        try:
            self._background.close()
        finally:
            self._orbax.close()


class RemoteSteps(Steps):
    """A ``CheckpointManager``'s numbered checkpoints in a folder given as a URL.

    orbax's ``CheckpointManager`` semantics: ``max_to_keep`` newest are kept,
    plus each whose number is a multiple of ``keep_period``; older ones are
    deleted (process 0) after a new one is committed, with any uncommitted
    leftover of a crashed save numbered below the newest.
    """

    def __init__(self, directory: str, name: str, *, max_to_keep, keep_period, async_save):
        super().__init__(
            directory,
            name,
            max_to_keep=max_to_keep,
            keep_period=keep_period,
            writer=RemoteWriter(async_save),
        )

    def path(self, number: int) -> str:
        """The URL of checkpoint ``number``."""
        return join(self.directory, f"{self._name}_{number}")

    def _committed_numbers(self) -> list[int]:
        return numbered(self.directory, self._name)

    def _delete_old(self) -> None:
        with deleting_old(self.directory):
            every = numbered(self.directory, self._name, committed_only=False)  # one listing
            committed = [n for n in every if is_committed(self.path(n))]
            for number in to_delete(every, committed, self._max_to_keep, self._keep_period):
                remove(self.path(number))

    def remove_all(self) -> None:
        """Deletes every checkpoint of this manager (committed or not), then the folder if that
        leaves it empty; other objects there stay."""
        for number in numbered(self.directory, self._name, committed_only=False):
            remove(self.path(number))
        loc = _locate(self.directory)
        loc.fs.invalidate_cache(loc.path)
        with contextlib.suppress(OSError):  # FileNotFoundError: an object store's "folder"
            if not loc.fs.ls(loc.path, detail=False):
                loc.fs.rmdir(loc.path)
