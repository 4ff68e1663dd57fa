"""``Dataset.interleave(..., num_parallel_calls=n)``: every open inner dataset read by its own thread.

tf.data's parallel interleave, with the sequential interleave's order. Each
inner iterator of the cycle, and the next input elements' iterators opened
ahead while the cycle has free slots (at most ``cycle_length`` in all), is
read by ``background`` (``_prefetch.py``): a bounded reader thread. The
reader hands elements over in chunks, two chunks ahead: a record source's
(``_record_blocks.py``) a block of records at a time, with the inner
iterator's state after each record; any other's what it read in about 2 ms
(at most 64 elements): one queue hand-over per element cost 4-5x the read of
a TFRecord record (the threads fight over the GIL), and the time limit keeps
chunks of big or slow elements small. The consumer still walks the
cycle slot by slot and block by block, so the elements come in exactly the
sequential order; what overlaps is the reading and parsing of the open files.

``deterministic=False`` keeps that order too (tf.data may then take an element
from any slot that has one ready; phalanx does not, so its state stays exact).
``num_parallel_calls`` turns the threads on; its value does not cap them:
there is one per open inner dataset, so ``cycle_length`` bounds them.

Input elements are read and ``map_func`` is called in the consumer thread,
ahead of the cycle; an error from either is kept and raised when the cycle
reaches that element, as the sequential interleave would. An inner iterator's
error is raised by its reader when the consumer reaches that position.

The state is the sequential interleave's, with every position the
consumer's: each slot's inner state is the one after the last element the
consumer took from it (never the reader's read-ahead), and the input's state
and count are those before the first element opened ahead.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, NamedTuple

import numpy as np

from ..io import _record_blocks as rb
from ._interleave import InterleaveDataset, InterleaveIterator
from ._iterator import DatasetIterator, IterCtx, _safe_state, _unwrap_state
from ._prefetch import _close, background

_CHUNK = 64  # elements per hand-over, at most
_CHUNK_S = 0.002  # a chunk is handed over once its reading took this long
_CHUNKS_AHEAD = 2  # chunks queued per reader
_RECORDS = 4096  # records per hand-over from a record source, at most (one read block)


class _Chunks:
    """Reads ``it`` in chunks: lists of ``(element, it's state after it)`` (in the reader thread).

    An error after some elements of a chunk is raised by the next call, after
    the chunk, so the consumer gets every element before it.
    """

    def __init__(self, it: DatasetIterator):
        self.it, self.error, self.ended = it, None, False

    def __iter__(self):
        return self

    def __next__(self) -> list[tuple[Any, Any]] | _RecordChunk:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        if self.ended:
            raise StopIteration
        if hasattr(self.it, "next_records_and_states"):  # a record source: a block at a time
            records, state_after = self.it.next_records_and_states(_RECORDS)
            if not records.size:
                self.ended = True
                raise StopIteration
            return _RecordChunk(records, state_after)
        chunk, start = [], time.perf_counter()
        try:
            while len(chunk) < _CHUNK and (not chunk or time.perf_counter() - start < _CHUNK_S):
                x = next(self.it)
                chunk.append((x, _safe_state(self.it)))
        except StopIteration:
            self.ended = True
            if not chunk:
                raise
        except Exception as e:
            if not chunk:
                raise
            self.error = e
        return chunk

    def close(self) -> None:
        _close(self.it)


class _RecordChunk(NamedTuple):
    """A block of records read ahead, and the inner iterator's state after each of them."""

    records: np.ndarray
    state_after: Any  # i -> the state after records[i]

    def __len__(self) -> int:
        return len(self.records)


class _ReadAhead(DatasetIterator):
    """An inner iterator read ahead by a ``background`` thread; its state is the consumer's."""

    def __init__(self, it: DatasetIterator):
        self.state = _safe_state(it)
        self.chunks = background(_Chunks(it), _CHUNKS_AHEAD)
        self.chunk: list[tuple[Any, Any]] = []
        self.pos = 0

    def start(self) -> None:
        self.chunks.start()

    def __next__(self):
        if self.pos == len(self.chunk):
            self.chunk, self.pos = [], 0
            self.chunk = next(self.chunks)
        x, self.state = self.chunk[self.pos]
        self.pos += 1
        return x

    def get_state(self):
        return _unwrap_state(self.state)

    def close(self) -> None:
        self.chunk = []
        self.chunks.close()


class _RecordReadAhead(_ReadAhead):
    """A record source read ahead by a thread in blocks (``_record_blocks.py``): the consumer
    takes records one by one or in blocks; its state is the one after the last it took."""

    def __init__(self, it: DatasetIterator):
        super().__init__(it)
        self.chunk = _RecordChunk(rb.EMPTY, None)
        self.error: Exception | None = None

    def __next__(self):
        records = self.next_records(1)
        if not records.size:
            raise StopIteration
        return rb.as_element(records[0])

    def records_ahead(self) -> np.ndarray:
        """The records the thread handed over and the consumer did not take (empty at the
        end); an error of the thread is raised when the consumer reaches it."""
        if self.pos == len(self.chunk) and self.error is None:
            try:
                self.chunk, self.pos = next(self.chunks), 0
            except StopIteration:
                pass
            except Exception as e:
                self.error = e
        return self.chunk.records[self.pos :]

    def skip_records(self, n: int) -> None:
        if n:
            self.pos += n
            self.state = self.chunk.state_after(self.pos - 1)

    def next_records(self, k: int) -> np.ndarray:
        ahead = self.records_ahead()
        if not ahead.size and self.error is not None:
            error, self.error = self.error, None
            raise error
        taken = ahead[:k]
        self.skip_records(len(taken))
        return taken


class ParallelInterleaveIterator(InterleaveIterator):
    """``InterleaveIterator`` whose inner iterators run ahead in reader threads (internal)."""

    def __init__(self, ds: InterleaveDataset, ctx: IterCtx):
        super().__init__(ds, ctx)
        self.ahead: deque[dict] = deque()  # next input elements, opened ahead, in input order
        self.read = 0  # input elements opened so far, ahead ones included

    def __next__(self):
        self._fill()
        return super().__next__()

    def next_records(self, k: int) -> np.ndarray | None:
        self._fill()
        return super().next_records(k)

    def _fill(self) -> None:
        """Open input elements ahead until the cycle's free slots are spoken for."""
        if self.end:
            return
        busy = sum(s is not None for s in self.slots) + len(self.ahead)
        while busy < len(self.slots) and not (self.ahead and "it" not in self.ahead[-1]):
            self.ahead.append(self._open_ahead())
            busy += 1

    def _open_ahead(self) -> dict:
        """The next input element's slot, started; or its end or error, kept for later."""
        entry = {"input_state": _safe_state(self.input), "index": self.read}
        try:
            element = next(self.input)
            it = self.ds._inner(element, self.ctx, self.read)
        except StopIteration:
            return {**entry, "end": True}
        except Exception as e:  # raised when the cycle reaches this element
            return {**entry, "error": e}
        entry["it"] = self._wrap(it)
        entry["it"].start()
        self.read += 1
        return entry

    def _open_next(self) -> dict | None:
        self._fill()
        entry = self.ahead.popleft()
        if "error" in entry:
            raise entry["error"]
        return None if "end" in entry else entry

    def _wrap(self, it: DatasetIterator) -> Any:
        if hasattr(it, "next_records_and_states"):
            return _RecordReadAhead(it)
        return _ReadAhead(it)

    def children(self):
        return super().children() + [e["it"] for e in self.ahead if "it" in e]

    def get_state(self):
        state = super().get_state()
        if self.ahead:  # as if the elements opened ahead were still unread
            state["input"] = _unwrap_state(self.ahead[0]["input_state"])
            state["opened"] = self.ahead[0]["index"]
        return state

    def set_state(self, state):
        self.close()
        self.ahead.clear()
        super().set_state(state)
        self.read = self.opened
        for s in self.slots:
            if s is not None:
                s["it"].start()
