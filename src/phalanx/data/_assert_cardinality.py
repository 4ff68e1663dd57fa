"""``Dataset.assert_cardinality``."""

from __future__ import annotations

from ..errors import DatasetArgumentError
from ._dataset import Dataset
from ._map import _MapIterator
from ._options import INFINITE_CARDINALITY


class AssertCardinalityDataset(Dataset):
    """``Dataset.assert_cardinality``: the input, with a known length checked while iterating."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, expected: int):
        self._input, self._expected = input_dataset, expected

    def _iterator(self, ctx):
        return _AssertCardinalityIterator(self._input._iterator(ctx), self._expected)

    def _cardinality(self) -> int:
        return self._expected

    def _compute_spec(self):
        return self._input.element_spec


class _AssertCardinalityIterator(_MapIterator):
    def __init__(self, child, expected: int):
        self.child, self.expected = child, expected
        self.count = 0

    def __next__(self):
        try:
            x = next(self.child)
        except StopIteration:
            if self.expected != INFINITE_CARDINALITY and self.count < self.expected:
                raise DatasetArgumentError(
                    f"Input dataset was expected to contain {self.expected} elements but "
                    f"contained only {self.count} elements. Fix the count given to "
                    "assert_cardinality."
                ) from None
            raise
        self.count += 1
        if self.expected != INFINITE_CARDINALITY and self.count > self.expected:
            raise DatasetArgumentError(
                f"Input dataset was expected to contain {self.expected} elements but contained "
                f"at least {self.count} elements. Fix the count given to assert_cardinality."
            )
        return x

    def get_state(self):
        return {"child": self.child.get_state(), "count": self.count}

    def set_state(self, state):
        self.child.set_state(state["child"])
        self.count = int(state.get("count", 0))
