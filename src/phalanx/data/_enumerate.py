"""``Dataset.enumerate``: ``(int64 index, element)`` pairs."""

from __future__ import annotations

import numpy as np

from . import _structure as st
from ._dataset import Dataset
from ._iterator import RandomAccess
from ._map import _MapIterator


class EnumerateAccess(RandomAccess):
    """Random access of ``enumerate``: ``(start + i, element i)``."""

    def __init__(self, inner: RandomAccess, start: int):
        self.inner, self.start = inner, start
        self.materialized = inner.materialized

    def __len__(self) -> int:
        return len(self.inner)

    def get(self, i):
        return (np.int64(self.start + i), self.inner.get(i))

    def gather(self, idx):
        return ((self.start + idx).astype(np.int64), self.inner.gather(idx))


class EnumerateDataset(Dataset):
    """``Dataset.enumerate``: ``(int64 index, element)`` pairs."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, start: int):
        self._input, self._start = input_dataset, int(start)

    def _iterator(self, ctx):
        return _EnumerateIterator(self._input._iterator(ctx), self._start)

    def _random_access(self):
        inner = self._input._random_access()
        return None if inner is None else EnumerateAccess(inner, self._start)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return (st.TensorSpec((), np.int64), self._input.element_spec)


class _EnumerateIterator(_MapIterator):
    def __init__(self, child, start):
        self.child, self.i = child, start

    def __next__(self):
        x = next(self.child)
        self.i += 1
        return (np.int64(self.i - 1), x)

    def get_state(self):
        return {"i": self.i, "child": self.child.get_state()}

    def set_state(self, state):
        self.i = int(state["i"])
        self.child.set_state(state["child"])
