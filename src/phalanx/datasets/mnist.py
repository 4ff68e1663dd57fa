"""MNIST: 60000 training and 10000 test images of handwritten digits, 28x28 uint8.

``load_data(path=None)`` looks in a directory (``path``, else
``$PHALANX_DATA_DIR``, else ``~/.cache/phalanx/datasets``) for, in order:

1. the four IDX files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
   ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, optionally ``.gz``);
2. ``mnist.npz`` (Keras's file, with ``x_train``, ``y_train``, ``x_test``, ``y_test``).

When neither is there it downloads Keras's ``mnist.npz`` into the directory
(with a progress bar on stderr when it is a terminal) and checks its SHA-256
before use; offline, it says what to do instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from ..errors import DatasetArgumentError, DataUnavailableError
from ._idx import read_idx

URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
IDX_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
DATA_DIR_ENV = "PHALANX_DATA_DIR"

Split = tuple[np.ndarray, np.ndarray]


def default_dir() -> Path:
    """Where data sets are cached: ``$PHALANX_DATA_DIR`` or ``~/.cache/phalanx/datasets``."""
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else Path.home() / ".cache" / "phalanx" / "datasets"


def load_data(
    path: str | os.PathLike | None = None, *, download: bool = True
) -> tuple[Split, Split]:
    """Loads MNIST as ``(x_train, y_train), (x_test, y_test)`` (Keras's layout).

    Args:
      path: the directory with the IDX files or ``mnist.npz``; None for
        ``default_dir()``. A path to a ``.npz`` file is read directly. A local
        path: a URL (``gs://``) is refused (copy the file here first).
      download: fetch ``mnist.npz`` into the directory when no data is found.

    Returns:
      uint8 images ``[N, 28, 28]`` and uint8 labels ``[N]``, train then test.

    Raises:
      FileNotFoundError: no data found and download is off.
      DatasetArgumentError: ``path`` is a URL.
      DataUnavailableError: the download failed (offline); the message says where
        to put the files (a ``ConnectionError``).
      ValueError: a downloaded or given file is damaged (checksum or format).
    """
    if path is not None and "://" in os.fspath(path):
        raise DatasetArgumentError(
            f"mnist.load_data(path={os.fspath(path)!r}): MNIST is read from a folder or .npz "
            "file on this machine (Keras's cache), not from a URL. Copy it here first: "
            "phalanx.io.gfile.copy(url, 'mnist.npz'), then load_data('mnist.npz')."
        )
    path = Path(path) if path is not None else default_dir()
    if path.suffix == ".npz":
        return _load_npz(path)
    idx = _find_idx(path)
    if idx is not None:
        arrays = {key: read_idx(p) for key, p in idx.items()}
        return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])
    npz = path / "mnist.npz"
    if not npz.exists():
        if not download:
            raise FileNotFoundError(_missing_message(path))
        _download(npz)
    return _load_npz(npz)


def _find_idx(directory: Path) -> dict[str, Path] | None:
    found = {}
    for key, name in IDX_FILES.items():
        for candidate in (directory / name, directory / f"{name}.gz"):
            if candidate.exists():
                found[key] = candidate
                break
    return found if len(found) == len(IDX_FILES) else None


def _load_npz(path: Path) -> tuple[Split, Split]:
    with np.load(path, allow_pickle=False) as f:
        missing = [k for k in IDX_FILES if k not in f]
        if missing:
            raise ValueError(f"{str(path)!r} lacks the arrays {missing}; it is not MNIST's npz.")
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def _missing_message(directory: Path) -> str:
    names = ", ".join(IDX_FILES.values())
    return (
        f"No MNIST data in {str(directory)!r}. Put the IDX files ({names}, optionally .gz) or "
        f"Keras's mnist.npz ({URL}) there, or pass --data-dir / path=, or set "
        f"{DATA_DIR_ENV}. For a demo that needs no download, use the digits data set."
    )


@contextlib.contextmanager
def _progress(name: str, response):
    """Yields ``advance(nbytes)``; a rich bar on stderr when it is a terminal (not in logs)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda nbytes: None
        return
    length = response.headers.get("Content-Length")
    columns = (
        TextColumn(f"downloading {name}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(name, total=int(length) if length else None)
        yield lambda nbytes: progress.update(task, advance=nbytes)


def _download(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(URL, timeout=30) as response:
            digest = hashlib.sha256()
            with _progress(target.name, response) as advance:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
                    advance(len(chunk))
        if digest.hexdigest() != SHA256:
            raise ValueError(
                f"The download of {URL} is damaged: SHA-256 {digest.hexdigest()}, expected "
                f"{SHA256}. Try again, or place the file by hand in {str(target.parent)!r}."
            )
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        raise DataUnavailableError(
            f"Could not download MNIST from {URL} ({e}). This machine may be offline. "
            + _missing_message(target.parent)
        ) from e
    finally:
        Path(tmp).unlink(missing_ok=True)


__all__ = ["DATA_DIR_ENV", "default_dir", "load_data"]
