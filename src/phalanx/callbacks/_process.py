"""Which process prints and writes: process 0 only, replaceable in tests.

Callbacks that print (the progress bar, ``verbose`` messages) or write files
(TensorBoard, CSV) do it on process 0 alone, as Keras does on the chief
worker. ``process_index`` is looked up through this module at each call, so a
test can replace it (``monkeypatch.setattr(_process, "process_index", ...)``)
to play another process without starting one.
"""

from __future__ import annotations

import sys
from typing import TextIO

import jax


def process_index() -> int:
    """This process's index among the JAX processes (0 when running alone)."""
    return jax.process_index()


def is_chief() -> bool:
    """Whether this process is the one that prints and writes (process 0)."""
    return process_index() == 0


def print_msg(message: str, *, file: TextIO | None = None) -> None:
    """Prints one message line on process 0; other processes stay silent."""
    if is_chief():
        print(message, file=file or sys.stdout, flush=True)
