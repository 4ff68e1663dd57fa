"""``Dataset.take`` and ``Dataset.skip``: keep the index protocol of their input (``IndexIterator``),
so a batch after them still gathers by index.
"""

from __future__ import annotations

import numpy as np

from ._dataset import Dataset
from ._iterator import IndexIterator
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY


class TakeDataset(Dataset):
    """``Dataset.take``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, count: int):
        self._input, self._count = input_dataset, int(count)

    def _iterator(self, ctx):
        return _TakeIterator(self._input._iterator(ctx), self._count)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == UNKNOWN_CARDINALITY:
            return n
        return self._count if n == INFINITE_CARDINALITY else min(n, self._count)

    def _compute_spec(self):
        return self._input.element_spec


class _PassIndex(IndexIterator):
    """Shared plumbing of index-preserving iterators over one child."""

    @property
    def indexable(self):
        return self.child.indexable

    @property
    def base(self):
        return self.child.base

    def children(self):
        return [self.child]


class _TakeIterator(_PassIndex):
    def __init__(self, child, count):
        self.child, self.count, self.n = child, count, 0

    def __next__(self):
        if 0 <= self.count <= self.n:
            raise StopIteration
        x = next(self.child)
        self.n += 1
        return x

    def next_indices(self, k):
        if self.count >= 0:
            k = min(k, self.count - self.n)
            if k <= 0:
                return np.empty(0, np.int64)
        idx = self.child.next_indices(k)
        if idx is not None:
            self.n += idx.size
        return idx

    def get_state(self):
        return {"n": self.n, "child": self.child.get_state()}

    def set_state(self, state):
        self.n = int(state["n"])
        self.child.set_state(state["child"])


class SkipDataset(TakeDataset):
    """``Dataset.skip``."""

    def _iterator(self, ctx):
        return _SkipIterator(self._input._iterator(ctx), self._count)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return 0 if self._count < 0 else max(0, n - self._count)


class _SkipIterator(_TakeIterator):
    def _skip(self) -> bool:
        while self.count < 0 or self.n < self.count:
            if self.child.indexable:
                want = 1 << 20 if self.count < 0 else self.count - self.n
                idx = self.child.next_indices(want)
                if idx is None:
                    continue
                if idx.size == 0:
                    return False
                self.n += idx.size
            else:
                try:
                    next(self.child)
                except StopIteration:
                    return False
                self.n += 1
        return True

    def __next__(self):
        if not self._skip():
            raise StopIteration
        return next(self.child)

    def next_indices(self, k):
        if not self._skip():
            return np.empty(0, np.int64)
        return self.child.next_indices(k)
