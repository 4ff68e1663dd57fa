"""The vectorized batch path: gather whole batches by index arrays.

A batch whose input iterator is an ``IndexIterator`` (in-memory arrays, maybe
through ``cache``, ``shuffle``, ``repeat``, ``take``, ``skip`` and ``shard``)
asks for ``batch_size`` indices and fetches every component with one numpy
fancy-indexing call: no Python runs per element. The indices come in pieces
(a batch may straddle two epochs, or an epoch whose cache is still filling
yields elements one by one); consecutive index pieces over the same data are
joined before the gather, element pieces are stacked, and the parts are
concatenated. Iterator states are the same on both paths, so a checkpoint
taken on one restores on the other.

``fit`` reads such batches as indices too (``index_batches``/``next_batch``,
through the iterators' own ``index_batches``/``next_pieces`` methods):
with the arrays placed on the devices once, an execution carries only the
batch indices and the compiled program gathers the rows there. The batches
are the very ones the dataset yields (the same node iterators advance the
same way); only the gather moves to the device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..io import _record_blocks as rb
from . import _structure as st
from ._iterator import ArraysAccess, DatasetIterator, Iterator, stack_elements


def next_batch(it: Any) -> tuple[list[tuple[Any, Any]], int]:
    """The next batch of batch iterator ``it`` (one ``index_batches`` returned) as pieces, and
    the position of its first element: ``it.next_pieces()``, before it gathers (``assemble``).

    Raises:
      StopIteration: the input ended (or left fewer than a batch, with ``drop_remainder``).
    """
    return it.next_pieces()


def index_batches(iterator: Any) -> Any | None:
    """The ``batch`` node under ``iterator`` (a ``Dataset``'s iterator), when ``next_batch``
    may read it; None otherwise.

    ``prefetch`` nodes above it that have not started are bypassed (their
    thread would only run the same reads ahead; their state is then their
    input's). Padded, split (auto-sharded) or other last nodes give None, and
    nothing changes: those batches are read as the dataset yields them.
    """
    if not isinstance(iterator, Iterator):
        return None
    return iterator._node.index_batches()


def single_base(pieces: list[tuple[Any, Any]]) -> tuple[ArraysAccess, np.ndarray] | None:
    """``(base, indices)`` when every element of ``pieces`` is an index into one
    ``ArraysAccess`` (in-memory arrays), else None."""
    if len(pieces) != 1 or not isinstance(pieces[0][0], ArraysAccess):
        return None
    return pieces[0]


RECORDS = "records"  # the base of a piece that is a block of records (``_record_blocks.py``)


def pull(child: DatasetIterator, count: int) -> list[tuple[Any, Any]]:
    """Up to ``count`` elements of ``child`` as pieces ``(base, indices)``, ``(None,
    [elements])`` or ``(RECORDS, records)`` (a 1-d ``object`` array of ``bytes``)."""
    pieces: list[tuple[Any, Any]] = []
    need = count
    records = True  # until the child says it gives no records now
    while need > 0:
        if child.indexable:
            idx = child.next_indices(need)
            if idx is None:
                continue
            if idx.size == 0:
                break
            _add_indices(pieces, child.base, idx)
            need -= idx.size
        else:
            block = rb.next_records(child, need) if records else None
            if block is not None:  # a block of records: already the batch's column
                if block.size == 0:
                    break
                pieces.append((RECORDS, block))
                need -= block.size
                continue
            records = False
            try:
                x = next(child)
            except StopIteration:
                break
            if pieces and pieces[-1][0] is None:
                pieces[-1][1].append(x)
            else:
                pieces.append((None, [x]))
            need -= 1
    return pieces


def _add_indices(pieces: list, base: Any, idx: np.ndarray) -> None:
    if pieces and pieces[-1][0] is base:
        pieces[-1] = (base, np.concatenate([pieces[-1][1], idx]))
    else:
        pieces.append((base, idx))


def count(pieces: list[tuple[Any, Any]]) -> int:
    """The number of elements in ``pieces``."""
    return sum(len(p) for _, p in pieces)


def trim(pieces: list[tuple[Any, Any]], lo: int, hi: int) -> list[tuple[Any, Any]]:
    """The elements at positions ``[lo, hi)`` of ``pieces``."""
    out, pos = [], 0
    for base, p in pieces:
        a, b = max(lo - pos, 0), min(hi - pos, len(p))
        if a < b:
            out.append((base, p[a:b]))
        pos += len(p)
    return out


def assemble(pieces: list[tuple[Any, Any]], *, first_index: int | None = None) -> Any:
    """Gather and stack ``pieces`` into one batch (leading axis = element)."""
    parts = []
    offset = first_index
    for base, p in pieces:
        if base is None:
            parts.append(stack_elements(list(p), first_index=offset))
        elif base is RECORDS:
            parts.append(p)
        else:
            parts.append(gather(base, p))
        if offset is not None:
            offset += len(p)
    if len(parts) == 1:
        return parts[0]
    return st.map_structure(lambda *xs: np.concatenate(xs), *parts)


def gather(base: Any, idx: np.ndarray) -> Any:
    """``base.gather(idx)`` (``MapAccess.gather`` saves the per-element work of a ``map``)."""
    return base.gather(idx)
