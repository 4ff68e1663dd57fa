"""``Dataset.repeat``: keeps the index protocol of its input (``IndexIterator``), so a batch after it
still gathers by index.
"""

from __future__ import annotations

import numpy as np

from ._dataset import Dataset
from ._iterator import IndexIterator, IterCtx
from ._options import INFINITE_CARDINALITY


class RepeatDataset(Dataset):
    """``Dataset.repeat``: each epoch is a fresh input iterator (so shuffles reshuffle)."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, count: int | None):
        self._input = input_dataset
        self._count = -1 if count is None else int(count)

    def _iterator(self, ctx):
        return _RepeatIterator(self, ctx)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE_CARDINALITY
        if n < 0:
            return n
        return n * self._count

    def _compute_spec(self):
        return self._input.element_spec


class _RepeatIterator(IndexIterator):
    def __init__(self, ds: RepeatDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.epoch = 0
        self.seen = False
        self.child = ds._input._iterator(ctx.child(0)) if ds._count != 0 else None

    @property
    def indexable(self):
        return self.child is not None and self.child.indexable

    @property
    def base(self):
        return self._base

    def _next_epoch(self) -> bool:
        self.child.close()
        if not self.seen or (self.ds._count >= 0 and self.epoch + 1 >= self.ds._count):
            self.child = None
            return False
        self.epoch += 1
        self.seen = False
        self.child = self.ds._input._iterator(self.ctx.child(self.epoch))
        return True

    def __next__(self):
        while self.child is not None:
            try:
                x = next(self.child)
            except StopIteration:
                self._next_epoch()
                continue
            self.seen = True
            return x
        raise StopIteration

    def next_indices(self, k):
        while self.child is not None:
            if not self.child.indexable:
                return None
            idx = self.child.next_indices(k)
            if idx is None:
                return None
            if idx.size:
                self.seen = True
                self._base = self.child.base  # read now: the epoch may end on the next call
                return idx
            self._next_epoch()
        return np.empty(0, np.int64)

    def children(self):
        return [self.child] if self.child is not None else []

    def get_state(self):
        child = None if self.child is None else self.child.get_state()
        return {"epoch": self.epoch, "seen": self.seen, "child": child}

    def set_state(self, state):
        if self.child is not None:
            self.child.close()
        self.epoch, self.seen = int(state["epoch"]), bool(state["seen"])
        if state["child"] is None:
            self.child = None
            return
        self.child = self.ds._input._iterator(self.ctx.child(self.epoch))
        self.child.set_state(state["child"])
