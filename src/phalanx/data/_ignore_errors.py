"""``Dataset.ignore_errors``: drops the elements whose computation raised."""

from __future__ import annotations

import logging

from ._dataset import Dataset
from ._iterator import DatasetIterator
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

_log = logging.getLogger("phalanx.data")


class IgnoreErrorsDataset(Dataset):
    """``Dataset.ignore_errors``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, log_warning: bool):
        self._input, self._log = input_dataset, log_warning

    def _iterator(self, ctx):
        return _IgnoreErrorsIterator(self._input._iterator(ctx), self._log)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY

    def _compute_spec(self):
        return self._input.element_spec


class _IgnoreErrorsIterator(DatasetIterator):
    def __init__(self, child: DatasetIterator, log_warning: bool):
        self.child, self.log = child, log_warning

    def __next__(self):
        while True:
            try:
                return next(self.child)
            except StopIteration:
                raise
            except Exception as e:  # as tf.data: any error of an element drops the element
                if self.log:
                    _log.warning("ignore_errors: dropped an element that raised %r", e)

    def children(self):
        return [self.child]

    def get_state(self):
        return {"child": self.child.get_state()}

    def set_state(self, state):
        self.child.set_state(state["child"])
