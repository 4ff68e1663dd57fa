"""Record streams: string elements handed over in blocks, with no Python per element.

A node iterator whose elements are scalar strings (0-d ``object`` arrays
holding ``bytes``: the records of ``TFRecordDataset``, ``TextLineDataset``
...) may also implement::

    next_records(k) -> np.ndarray | None

the next ``1..k`` elements as one 1-d ``object`` array of their ``bytes``
(an empty array at the end; ``None`` when it cannot now, and the caller uses
``__next__``). It advances the iterator exactly as as many ``__next__`` calls
would, so ``get_state`` is the same on both paths and a checkpoint taken on
one restores on the other. A source may also implement::

    records_ahead() -> np.ndarray     # records read but not handed out (reads a block
                                      # when there are none; empty at the end)
    skip_records(n) -> None           # hands out the first n of them

which ``interleave`` uses to take whole rounds of its cycle at once.

``interleave``, ``shuffle`` and ``batch`` pass such blocks on: a block is
read, framed and CRC-checked with numpy (``_tfrecord.RecordBlock``),
interleaved by index arithmetic, shuffled by the vectorized form of the
buffer algorithm over the same random draws, and becomes the batch itself:
the 1-d ``object`` array that stacking the elements would give.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def objects(values: list[Any]) -> np.ndarray:
    """A 1-d ``object`` array of ``values`` (never a 2-d or ``'S'`` array)."""
    out = np.empty(len(values), object)
    out[:] = values
    return out


def as_element(data: bytes) -> np.ndarray:
    """One record as the element ``__next__`` yields: a 0-d ``object`` array."""
    out = np.empty((), object)
    out[()] = data
    return out


EMPTY = np.empty(0, object)


def next_records(it: Any, k: int) -> np.ndarray | None:
    """``it.next_records(k)``, or None when ``it`` has no such method or cannot now."""
    method = getattr(it, "next_records", None)
    return None if method is None else method(k)
