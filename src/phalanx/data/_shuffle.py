"""``Dataset.shuffle``: tf.data's buffer shuffle, reproducible per seed, vectorizable on indices.

The algorithm (the definition both code paths implement):

1. Fill a buffer with the first ``buffer_size`` (B) input elements.
2. For each further input element x (step k = 0, 1, ...): pick slot
   ``j_k`` uniformly in [0, B), emit the buffer's element in slot ``j_k`` and
   put x there.
3. When the input ends, emit the s elements left in the buffer in the
   order of a random permutation of [0, s).

The random numbers are a pure function of the seed words and the step:
``j_k`` is element ``k % 8192`` of the integers drawn by a PCG64 generator
seeded with ``SeedSequence([*words, 0, k // 8192])``, and the drain
permutation comes from ``SeedSequence([*words, 1, s])``. So a position is
fully described by the number of elements emitted, which is the whole
checkpoint state of a shuffle.

For an input with random access (in-memory arrays, ranges, maps of them,
caches once filled) the whole epoch order is computed at once on an index
array (``shuffle_order``): step 2 is vectorized by noticing that slot ``j_k``
holds input ``B + k'`` for the last earlier step ``k'`` with the same slot,
or input ``j_k`` if there was none. Tests check both paths agree.

Seed words: ``[1, seed]`` for a given seed, ``[2, root_seed, depth]``
otherwise (``root_seed`` is drawn once per ``Dataset`` object and saved in
iterator states). With ``reshuffle_each_iteration=True`` the epoch path is
appended (the dataset's iteration number and any enclosing ``repeat``
epochs), so every epoch and every new iterator gets a new, reproducible order.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..io import _record_blocks as rb
from ._dataset import Dataset, check_positive
from ._iterator import (
    DatasetIterator,
    IndexIterator,
    IterCtx,
    check_length,
    replay,
    state_int,
)

CHUNK = 8192
MAX_INDEXED = 1 << 25  # larger random-access inputs shuffle element by element
_MASK = (1 << 64) - 1


@functools.lru_cache(maxsize=32)
def _chunk(words: tuple[int, ...], c: int, size: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([*words, 0, c])))
    return rng.integers(0, size, CHUNK, dtype=np.int64)


def draws(words: tuple[int, ...], start: int, count: int, size: int) -> np.ndarray:
    """The slots ``j_k`` for steps ``start .. start+count-1`` of a buffer of ``size``."""
    if count <= 0:
        return np.empty(0, np.int64)
    c0, c1 = start // CHUNK, (start + count - 1) // CHUNK
    arr = np.concatenate([_chunk(words, c, size) for c in range(c0, c1 + 1)])
    off = start - c0 * CHUNK
    return arr[off : off + count]


def drain_permutation(words: tuple[int, ...], s: int) -> np.ndarray:
    """The order in which the last ``s`` buffered elements are emitted."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([*words, 1, s])))
    return rng.permutation(s).astype(np.int64)


def shuffle_order(n: int, buffer_size: int, words: tuple[int, ...]) -> np.ndarray:
    """The positions, in emission order, of a buffer shuffle of ``n`` inputs (vectorized)."""
    b = buffer_size
    if n <= b:
        return drain_permutation(words, n)
    m = n - b
    j = draws(words, 0, m, b)
    order = np.argsort(j, kind="stable")
    sj = j[order]
    same = sj[1:] == sj[:-1]
    prev = np.full(m, -1, np.int64)
    prev[order[1:][same]] = order[:-1][same]
    emitted = np.where(prev >= 0, b + prev, j)
    buf = np.arange(b, dtype=np.int64)
    last = np.ones(m, bool)
    last[:-1] = ~same
    buf[sj[last]] = b + order[last]
    return np.concatenate([emitted, buf[drain_permutation(words, b)]])


class ShuffleDataset(Dataset):
    """``Dataset.shuffle`` (see the module docstring for the exact algorithm)."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, buffer_size: int, seed, reshuffle: bool):
        self._input = input_dataset
        self._buffer = check_positive("buffer_size", buffer_size, "shuffle")
        self._seed = None if seed is None else int(seed) & _MASK
        self._reshuffle = bool(reshuffle)

    def _words(self, ctx: IterCtx) -> tuple[int, ...]:
        base = (1, self._seed) if self._seed is not None else (2, ctx.root_seed, self._depth)
        return base + ctx.epochs if self._reshuffle else base

    def _iterator(self, ctx):
        words = self._words(ctx)
        access = self._input._random_access()
        if access is not None and len(access) <= MAX_INDEXED:
            return _ShuffleIndexIterator(access, self._buffer, words)
        return _ShuffleBufferIterator(self._input, ctx, self._buffer, words)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec


class _ShuffleIndexIterator(IndexIterator):
    """The shuffle of a random-access input: a precomputed order of indices."""

    def __init__(self, access, buffer_size: int, words):
        self.base, self.buffer, self.words = access, buffer_size, words
        self.k = 0
        self._order: np.ndarray | None = None

    @property
    def order(self) -> np.ndarray:
        if self._order is None:
            self._order = shuffle_order(len(self.base), self.buffer, self.words)
        return self._order

    def next_indices(self, k):
        out = self.order[self.k : self.k + k]
        self.k += out.size
        return out

    def __next__(self):
        if self.k >= len(self.base):
            raise StopIteration
        self.k += 1
        return self.base.get(int(self.order[self.k - 1]))

    def get_state(self):
        return {"k": self.k, "n": len(self.base)}

    def set_state(self, state):
        check_length(state, len(self.base), "shuffle")
        self.k = state_int(state, "k", high=len(self.base), what="elements already shuffled out")


class _ShuffleBufferIterator(DatasetIterator):
    """The shuffle of any input, element by element; restores by replaying ``k`` outputs.

    Over a record source (``_record_blocks.py``) the buffer is an ``object``
    array of the records and ``next_records`` runs the same algorithm on a
    block of ``m`` inputs at once: step ``t`` emits the input of the last
    earlier step of the block that wrote its slot, or else what the buffer
    held there (``shuffle_order``'s reasoning, with the same draws ``j_k``).
    """

    def __init__(self, input_dataset: Dataset, ctx, buffer_size: int, words):
        self.input, self.ctx = input_dataset, ctx
        self.child = input_dataset._iterator(ctx)
        self.size, self.words = buffer_size, words
        self.buf: list[Any] | np.ndarray = []
        self.filled = 0  # records in ``buf`` when it is an array
        # None: not decided; True: ``buf`` holds records (bytes); False: elements.
        self.records: bool | None = None
        self.steps = 0  # elements emitted while the input lasted
        self.drain: np.ndarray | None = None  # permutation once the input ended
        self.drained = 0
        self._chunk_id = -1
        self._chunk: np.ndarray | None = None

    def _slot(self) -> int:
        c = self.steps // CHUNK
        if c != self._chunk_id:
            self._chunk_id, self._chunk = c, _chunk(self.words, c, self.size)
        return int(self._chunk[self.steps % CHUNK])

    def _end_input(self):
        self.drain = drain_permutation(self.words, self.filled if self.records else len(self.buf))
        self.child.close()

    def __next__(self):
        if self.records is None:  # read element by element: keep elements in the buffer
            self.records = False
        if self.records:
            out = self.next_records(1)
            if out is not None:
                if out.size == 0:
                    raise StopIteration
                return rb.as_element(out[0])
        if self.drain is None:
            try:
                while len(self.buf) < self.size:
                    self.buf.append(next(self.child))
                x = next(self.child)
            except StopIteration:
                self._end_input()
            else:
                j = self._slot()
                out, self.buf[j] = self.buf[j], x
                self.steps += 1
                return out
        if self.drained >= len(self.drain):
            raise StopIteration
        self.drained += 1
        return self.buf[self.drain[self.drained - 1]]

    def next_records(self, k: int) -> np.ndarray | None:
        """The next ``1..k`` elements as records, or None when the input is no record source."""
        if self.records is None:
            if self.buf or not hasattr(self.child, "next_records"):
                self.records = False
                return None
            self.records, self.buf = True, np.empty(self.size, object)
        if not self.records:
            return None
        if self.drain is None:
            x = self._fill_and_read(k)
            if x is None:
                return None
            if x.size:
                return self._swap(x)
        idx = self.drain[self.drained : self.drained + k]
        self.drained += idx.size
        return self.buf[idx] if idx.size else rb.EMPTY

    def _fill_and_read(self, k: int) -> np.ndarray | None:
        """Fills the buffer, then reads up to ``k`` inputs; empty at the end of the input."""
        while True:
            want = self.size - self.filled if self.filled < self.size else k
            x = rb.next_records(self.child, want)
            if x is None:  # the input stopped giving records: go on element by element
                self.buf = [rb.as_element(r) for r in self.buf[: self.filled]]
                self.records = False
                return None
            if x.size == 0:
                self._end_input()
                return x
            if self.filled == self.size:
                return x
            self.buf[self.filled : self.filled + x.size] = x
            self.filled += x.size

    def _swap(self, x: np.ndarray) -> np.ndarray:
        """Steps ``steps .. steps+m-1`` with inputs ``x``: the ``m`` records they emit."""
        m = x.size
        if m == 1:
            j = self._slot()
            out = self.buf[j : j + 1].copy()
            self.buf[j] = x[0]
            self.steps += 1
            return out
        j = draws(self.words, self.steps, m, self.size)
        out = self.buf[j]
        order = np.argsort(j, kind="stable")
        sj = j[order]
        same = sj[1:] == sj[:-1]
        prev = np.full(m, -1, np.int64)
        prev[order[1:][same]] = order[:-1][same]
        written = prev >= 0
        out[written] = x[prev[written]]
        last = np.ones(m, bool)
        last[:-1] = ~same
        self.buf[sj[last]] = x[order[last]]
        self.steps += m
        return out

    def children(self):
        return [self.child]

    def get_state(self):
        return {"k": self.steps + self.drained}

    def set_state(self, state):
        self.child.close()
        self.__init__(self.input, self.ctx, self.size, self.words)
        count = state_int(state, "k", what="elements already shuffled out")
        done = 0
        while done < count:  # by blocks where the input gives records
            out = self.next_records(count - done)
            if out is None or not out.size:  # element by element, or the data is too short
                break
            done += out.size
        replay(self, count, "shuffle", done)
