"""Checks shared by the callbacks' constructors: a file or folder path, a number of epochs."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import CallbackArgumentError


def check_path(
    owner: str, name: str, value: Any, *, what: str = "a file path", example: str = "'logs/run.csv'"
) -> str:
    """Returns ``value`` as a ``str`` when it is a non-empty ``str`` or ``os.PathLike``.

    Examples:
      >>> check_path("CSVLogger", "filename", None)
      Traceback (most recent call last):
      ...
      phalanx.errors.CallbackArgumentError: CSVLogger: filename must be a file path (a str or os.PathLike such as 'logs/run.csv'); received None (NoneType). Pass where to write it.
    """
    if isinstance(value, bytes) or not isinstance(value, str | os.PathLike):
        raise CallbackArgumentError(
            f"{owner}: {name} must be {what} (a str or os.PathLike such as {example}); "
            f"received {value!r} ({type(value).__name__}). Pass where to write it."
        )
    path = os.fspath(value)
    if not isinstance(path, str) or not path:
        raise CallbackArgumentError(
            f"{owner}: {name} is empty ({value!r}); give {what} such as {example}."
        )
    return path


def check_count(owner: str, name: str, value: Any) -> int:
    """Returns ``value`` as an ``int`` when it is an integer (a number of epochs).

    Negative counts are accepted, as Keras 3 accepts them: ``patience=-1`` waits
    no epoch, as ``patience=0``.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise CallbackArgumentError(
            f"{owner}: {name} must be an integer (a number of epochs); "
            f"received {value!r} ({type(value).__name__}). Pass e.g. {name}=2."
        )
    return int(value)
