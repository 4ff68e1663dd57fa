"""``Dataset.window``: a dataset of windows, each a (nest of) dataset(s), as tf.data.

Window ``k`` holds the input elements at ``k * shift + j * stride`` for
``j < size``, cut short at the end of the input; windows start at every
``shift``-th input element while one is left (``drop_remainder=True`` keeps
only the full ones). An element that is a tuple or dict gives a tuple or dict
of datasets, one per component, as TensorFlow's ``WindowDataset``; readers
usually follow with ``flat_map(lambda w: w.batch(size))``.

The iterator keeps the input elements from the current window's start to the
furthest one read. Its state holds counters only: the input's state saved just
before the current window's first element (taken before reading every
``shift``-th element), so a restore re-reads the buffered elements instead of
storing them. Each window is an in-memory dataset whose iterator saves its
position, so ``flat_map`` over windows checkpoints too.
"""

from __future__ import annotations

from typing import Any

from . import _structure as st
from ._cache import _to_access
from ._dataset import Dataset
from ._iterator import (
    AccessIterator,
    DatasetIterator,
    IterCtx,
    _safe_state,
    _unwrap_state,
    state_int,
)
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY


class DatasetSpec:
    """The spec of a dataset-valued component (a window), like ``tf.data.DatasetSpec``.

    Attributes:
        element_spec: the spec of the elements of the datasets it describes.
    """

    __slots__ = ("element_spec",)

    def __init__(self, element_spec: Any):
        self.element_spec = element_spec

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatasetSpec) and other.element_spec == self.element_spec

    def __hash__(self) -> int:
        return hash(("DatasetSpec", repr(self.element_spec)))

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r})"


class WindowDataset(Dataset):
    """``Dataset.window``: arguments checked by the method."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, size: int, shift: int, stride: int, drop: bool):
        self._input = input_dataset
        self._size, self._shift, self._stride, self._drop = size, shift, stride, drop

    @property
    def _span(self) -> int:
        """The number of input elements from a full window's first element to its last."""
        return (self._size - 1) * self._stride + 1

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _WindowIterator(self, ctx)

    def _cardinality(self) -> int:
        n = self._input.cardinality()
        if n in (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY):
            return n
        if self._drop:  # TensorFlow's WindowDatasetOp::CardinalityInternal
            rest = n - self._span
            return 0 if rest < 0 else rest // self._shift + 1
        return -(-n // self._shift)

    def _compute_spec(self) -> Any:
        return st.map_structure(DatasetSpec, self._input.element_spec)

    def _window(self, elements: list[Any]) -> Any:
        """The window of ``elements``: one dataset per component of the input's elements."""
        spec = self._input.element_spec
        tdef = st.treedef(spec)
        columns = zip(*(st.flatten_up_to(tdef, e) for e in elements), strict=True)
        leaves = st.flatten(spec)
        datasets = [_WindowElements(list(c), s) for c, s in zip(columns, leaves, strict=True)]
        return st.unflatten(tdef, datasets)


class _WindowElements(Dataset):
    """One component of one window: its elements in memory (internal)."""

    def __init__(self, elements: list[Any], spec: Any):
        self._access = _to_access(elements)
        self._spec = spec

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return AccessIterator(self._access)

    def _random_access(self):
        return self._access

    def _cardinality(self) -> int:
        return len(self._access)

    def _compute_spec(self) -> Any:
        return self._spec


class _WindowIterator(DatasetIterator):
    """Reads the input ahead to the end of the current window (internal)."""

    def __init__(self, ds: WindowDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.input = ds._input._iterator(ctx)
        self.buffer: list[Any] = []  # the input elements start, start + 1, ..., read - 1
        self.start = 0  # the input index of the current window's first element
        self.read = 0  # input elements read (or skipped) so far
        self.starts: dict[int, Any] = {}  # index -> the input's state before reading it
        self.end = False

    def _read_one(self) -> bool:
        """Reads input element ``self.read``; False at the end of the input."""
        if self.read % self.ds._shift == 0 and self.read >= self.start:
            self.starts[self.read] = _safe_state(self.input)
        try:
            x = next(self.input)
        except StopIteration:
            self.end = True
            return False
        if self.read >= self.start:
            self.buffer.append(x)
        self.read += 1
        return True

    def __next__(self) -> Any:
        ds = self.ds
        while not self.end and self.read < self.start + ds._span:
            self._read_one()
        if not self.buffer or (ds._drop and len(self.buffer) < ds._span):
            raise StopIteration
        window = ds._window(self.buffer[: ds._span : ds._stride])
        self.start += ds._shift
        del self.buffer[: ds._shift]
        self.starts = {i: s for i, s in self.starts.items() if i >= self.start}
        return window

    def children(self) -> list[DatasetIterator]:
        return [self.input]

    def get_state(self) -> dict[str, Any]:
        if self.buffer:  # re-read from the current window's first element
            at, saved = self.start, self.starts[self.start]
        else:
            at, saved = self.read, _safe_state(self.input)
        return {"input": _unwrap_state(saved), "at": at, "start": self.start}

    def set_state(self, state: dict[str, Any]) -> None:
        at = state_int(state, "at", what="input elements read by window")
        start = state_int(state, "start", low=at, what="first element of the next window")
        self.close()
        self.input = self.ds._input._iterator(self.ctx)
        self.input.set_state(state["input"])
        self.buffer, self.starts, self.end = [], {}, False
        self.read, self.start = at, start
