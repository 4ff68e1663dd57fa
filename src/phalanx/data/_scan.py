"""``Dataset.scan``: a running state carried over the elements, as tf.data.

``scan_func(state, element)`` returns ``(new_state, output)``; the dataset
yields the outputs. The element is passed whole (a tuple element is not
unpacked), as TensorFlow does. The new state must keep the initial state's
structure and dtypes (TensorFlow's rule).

The iterator's state is the number of input elements read: a restore replays
them through ``scan_func`` to rebuild the running state, so the saved state
stays counters only (``unique`` restores the same way).
"""

from __future__ import annotations

from typing import Any

from ..errors import DatasetTypeError
from . import _structure as st
from ._dataset import Dataset
from ._iterator import DatasetIterator, IterCtx, replay, state_int
from ._map import _EMPTY, first_element


def _leaf(value: Any) -> Any:
    a = st.to_array(value)
    return a[()] if a.ndim == 0 else a  # a numpy scalar, as tf.data's as_numpy_iterator gives


def _as_state(value: Any) -> Any:
    """The state as numpy leaves (Python numbers converted as phalanx.data converts them)."""
    return st.map_structure(_leaf, value)


def _check_state(initial: Any, new: Any) -> Any:
    """``new`` as arrays, or a ``DatasetTypeError`` when it is not shaped as ``initial``."""
    new = _as_state(new)
    if st.treedef(new) != st.treedef(initial):
        raise DatasetTypeError(
            "Invalid `scan_func`. The new state must have the initial state's structure: "
            f"expected {st.describe(st.treedef(initial))}, got {st.describe(st.treedef(new))}."
        )
    for a, b in zip(st.flatten(initial), st.flatten(new), strict=True):
        if a.dtype != b.dtype:
            raise DatasetTypeError(
                "Invalid `scan_func`. The element types for the new state must match the "
                f"initial state. Expected {a.dtype}, got {b.dtype}. Cast it, e.g. "
                f"new_state.astype(np.{a.dtype})."
            )
    return new


def _step(fn: Any, state: Any, element: Any) -> tuple[Any, Any]:
    out = st.call_function(fn, state, element)
    if not isinstance(out, tuple) or len(out) != 2:
        raise DatasetTypeError(
            "Invalid `scan_func`. It must return a pair (new_state, output_element), got "
            f"{type(out).__name__}."
        )
    return _check_state(state, out[0]), st.normalize(out[1])


class ScanDataset(Dataset):
    """``Dataset.scan``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, initial_state: Any, scan_func: Any):
        self._input, self._initial, self._fn = input_dataset, _as_state(initial_state), scan_func

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _ScanIterator(self, ctx)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self) -> Any:
        x = first_element(self._input)
        if x is _EMPTY:
            return None
        return st.spec_of(_step(self._fn, self._initial, x)[1])


class _ScanIterator(DatasetIterator):
    def __init__(self, ds: ScanDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.input = ds._input._iterator(ctx)
        self.state = ds._initial
        self.read = 0

    def __next__(self) -> Any:
        x = next(self.input)
        self.state, out = _step(self.ds._fn, self.state, x)
        self.read += 1
        return out

    def children(self) -> list[DatasetIterator]:
        return [self.input]

    def get_state(self) -> dict[str, Any]:
        self.input.get_state()  # raises for an input that cannot save its position
        return {"read": self.read}

    def set_state(self, state: dict[str, Any]) -> None:
        read = state_int(state, "read", what="input elements read by scan")
        self.close()
        self.input = self.ds._input._iterator(self.ctx)
        self.state, self.read = self.ds._initial, 0
        replay(self, read, "scan's input")
