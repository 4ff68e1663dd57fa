"""``Dataset.filter`` and ``Dataset.take_while``."""

from __future__ import annotations

import numpy as np

from . import _structure as st
from ._dataset import Dataset
from ._map import _MapIterator
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY


class FilterDataset(Dataset):
    """``Dataset.filter``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, predicate):
        self._input, self._pred = input_dataset, predicate

    def _iterator(self, ctx):
        return _FilterIterator(self._input._iterator(ctx), self._pred)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY

    def _compute_spec(self):
        return self._input.element_spec


class _FilterIterator(_MapIterator):
    def __init__(self, child, pred):
        self.child, self.pred = child, pred

    def __next__(self):
        while True:
            x = next(self.child)
            if _predicate(self.pred, x, "filter"):
                return x


def _predicate(pred, x, method: str) -> bool:
    """``pred(x)`` (a tuple unpacked), which must be a scalar bool."""
    keep = np.asarray(st.call_unpacked(pred, x))
    if keep.shape != () or keep.dtype != np.bool_:
        raise TypeError(
            f"{method}: the predicate must return a scalar bool, got {keep.dtype.name} of shape "
            f"{keep.shape}. Reduce it, e.g. with np.all(...) or a comparison."
        )
    return bool(keep)


class TakeWhileDataset(FilterDataset):
    """``Dataset.take_while``."""

    def _iterator(self, ctx):
        return _TakeWhileIterator(self._input._iterator(ctx), self._pred)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY  # TensorFlow's, even over an infinite input


class _TakeWhileIterator(_MapIterator):
    def __init__(self, child, pred):
        self.child, self.pred = child, pred
        self.ended = False

    def __next__(self):
        if self.ended:
            raise StopIteration
        x = next(self.child)
        if _predicate(self.pred, x, "take_while"):
            return x
        self.ended = True
        raise StopIteration

    def get_state(self):
        return {"child": self.child.get_state(), "ended": self.ended}

    def set_state(self, state):
        self.child.set_state(state["child"])
        self.ended = bool(state.get("ended", False))
