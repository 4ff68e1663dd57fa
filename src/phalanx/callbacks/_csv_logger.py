"""``CSVLogger``: one CSV row per epoch.

A ``filename`` that is a URL (``gs://``, ``s3://``, ``memory://``) is written
to a local temporary copy (the existing file's, with ``append``) and uploaded
whole after every row and at the end: object stores cannot append.
"""

from __future__ import annotations

import collections.abc
import csv
import os
from typing import IO, Any

import numpy as np

from ..errors import CallbackArgumentError
from ..io import StagedFile, _fs
from . import _process
from ._args import check_path
from ._callback import Callback, Logs


def _cell(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (
        isinstance(value, np.ndarray) and value.ndim == 0
    ):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Writes the epoch logs to a CSV file, one row per epoch, on process 0.

    The columns are Keras's: ``epoch`` (0-based), then the log keys of the
    first epoch sorted by name. When the first epoch has no ``val_`` keys
    (validation every few epochs), ``val_`` twins of every key are added so
    later epochs have their columns; a missing value is written ``NA``.

    Args:
        filename: The CSV file to write: a local path or a URL (``gs://...``),
            uploaded after every row.
        separator: The column separator.
        append: Append to an existing file (no second header) instead of
            overwriting it.

    Examples:
        >>> import os, tempfile
        >>> from phalanx.callbacks import CSVLogger
        >>> path = os.path.join(tempfile.mkdtemp(), "log.csv")
        >>> logger = CSVLogger(path)
        >>> logger.on_train_begin()
        >>> logger.on_epoch_end(0, {"loss": 0.5, "accuracy": 0.75, "val_loss": 0.625})
        >>> logger.on_train_end()
        >>> print(open(path).read(), end="")
        epoch,accuracy,loss,val_loss
        0,0.75,0.5,0.625
    """

    def __init__(
        self, filename: str | os.PathLike[str], separator: str = ",", append: bool = False
    ):
        super().__init__()
        if not isinstance(separator, str) or len(separator) != 1:
            raise CallbackArgumentError(
                f"CSVLogger: separator must be one character; received {separator!r}."
            )
        self.filename = check_path("CSVLogger", "filename", filename)
        _fs.locate(self.filename)  # a URL whose file-system package is missing fails here
        self._staged: StagedFile | None = None
        self.sep = separator
        self.append = append
        self.keys: list[str] | None = None
        self.writer: csv.DictWriter | None = None
        self.csv_file: IO[str] | None = None
        self._write_header = True

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Opens the file (process 0 only)."""
        self.keys = None
        self.writer = None
        if not _process.is_chief():
            return
        self._write_header = True
        path = _fs.os_path(self.filename)
        if path is None:
            self._staged = StagedFile(self.filename, download=self.append)
            path = self._staged.local
        if self.append and os.path.exists(path):
            with open(path) as f:
                self._write_header = not f.readline()
        dirname = os.path.dirname(path)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        self.csv_file = open(path, "a" if self.append else "w", newline="")  # noqa: SIM115

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Writes this epoch's row."""
        if self.csv_file is None:
            return
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if not any(k.startswith("val_") for k in self.keys):
                self.keys += ["val_" + k for k in self.keys]
        if self.writer is None:
            self.writer = csv.DictWriter(
                self.csv_file, fieldnames=["epoch", *self.keys], delimiter=self.sep
            )
            if self._write_header:
                self.writer.writeheader()
        row = {"epoch": epoch, **{k: _cell(logs.get(k, "NA")) for k in self.keys}}
        self.writer.writerow(row)
        self.csv_file.flush()
        if self._staged is not None:
            self._staged.sync()

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Closes the file."""
        if self.csv_file is not None:
            self.csv_file.close()
        self.csv_file = None
        self.writer = None
        if self._staged is not None:
            staged, self._staged = self._staged, None
            staged.close()
