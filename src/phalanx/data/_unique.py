"""``Dataset.unique``: each distinct element once, at its first occurrence, as tf.data.

TensorFlow's ``UniqueDataset`` takes datasets of one int32, int64 or string
component (of any shape; two elements are the same when their shapes and
values are) and keeps the first occurrence of each, in input order. Its
cardinality is unknown.

The state is the number of input elements read: a restore replays that many
elements of a fresh input iterator to rebuild the set of elements seen, so the
state stays counters only (TensorFlow saves the set itself). Restoring costs a
pass over the elements read so far.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetTypeError
from . import _structure as st
from ._dataset import Dataset
from ._iterator import DatasetIterator, IterCtx, replay, state_int
from ._options import UNKNOWN_CARDINALITY


def check_unique_input(dataset: Dataset) -> None:
    """Raises ``DatasetTypeError`` unless ``dataset``'s elements are one int32/int64/string array."""
    spec = dataset.element_spec
    leaves = st.flatten(spec)
    if len(leaves) != 1 or not isinstance(spec, st.TensorSpec):
        raise DatasetTypeError(
            f"unique: the elements must be a single component (one array), got {spec!r} "
            f"({len(leaves)} components), as tf.data. Apply unique to one component, e.g. "
            "ds.map(lambda x, y: x).unique()."
        )
    kind = spec.dtype
    if not (kind in (np.int32, np.int64) or kind.kind in "SUO"):
        raise DatasetTypeError(
            f"unique: elements of dtype {kind} are not supported; only int32, int64 and "
            "string elements are (tf.data refuses the others too). Cast them first, e.g. "
            "ds.map(lambda x: x.astype(np.int64)).unique()."
        )


def _key(element: Any) -> Any:
    """A hashable key that is equal for equal elements (same shape, same values)."""
    a = np.asarray(element)
    if a.ndim == 0:
        return a.item()
    return (a.shape, tuple(a.ravel().tolist()))


class UniqueDataset(Dataset):
    """``Dataset.unique``: the input checked by the method."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset):
        self._input = input_dataset

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _UniqueIterator(self, ctx)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _compute_spec(self) -> Any:
        return self._input.element_spec


class _UniqueIterator(DatasetIterator):
    """Skips the elements seen before (internal)."""

    def __init__(self, ds: UniqueDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.input = ds._input._iterator(ctx)
        self.seen: set[Any] = set()
        self.read = 0

    def __next__(self) -> Any:
        while True:
            x = next(self.input)
            self.read += 1
            key = _key(x)
            if key not in self.seen:
                self.seen.add(key)
                return x

    def children(self) -> list[DatasetIterator]:
        return [self.input]

    def get_state(self) -> dict[str, Any]:
        self.input.get_state()  # raises for an input that cannot save its position
        return {"read": self.read}

    def set_state(self, state: dict[str, Any]) -> None:
        read = state_int(state, "read", what="input elements read by unique")
        self.close()
        self.input = self.ds._input._iterator(self.ctx)
        self.seen = set()
        replay(_adding_keys(self.input, self.seen), read, "unique's input")
        self.read = read


def _adding_keys(iterator: DatasetIterator, seen: set[Any]):
    """``iterator``'s elements, each added to ``seen`` as it passes (a restore's replay)."""
    for x in iterator:
        seen.add(_key(x))
        yield x
