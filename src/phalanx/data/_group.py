"""``Dataset.group_by_window`` and ``Dataset.bucket_by_sequence_length``, as tf.data.

``group_by_window`` puts each element in the window of its key
(``key_func(element)``, an int64); when a window holds ``window_size`` elements
(or ``window_size_func(key)``), ``reduce_func(key, window_dataset)`` turns it
into a dataset whose elements are yielded. When the input ends, the windows
left are reduced in ascending key order (TensorFlow keeps them in an ordered
map). ``bucket_by_sequence_length`` is TensorFlow's recipe on top of it: the
key is the bucket of ``element_length_func(element)`` among
``bucket_boundaries``, each bucket batched (and padded) by its own size.

The iterator's state is the number of elements yielded: a restore replays the
pipeline up to there (the windows hold data, so the state stays counters).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError
from . import _structure as st
from ._dataset import Dataset
from ._iterator import DatasetIterator, IterCtx, replay, state_int
from ._map import _EMPTY, first_element
from ._options import UNKNOWN_CARDINALITY
from ._structure import TensorSpec


def _window_dataset(elements: list[Any], spec: Any) -> Dataset:
    """The elements of one window, as the dataset ``reduce_func`` gets."""
    kept = list(elements)
    return Dataset.from_generator(lambda: iter(kept), output_signature=_window_spec(kept, spec))


def _window_spec(elements: list[Any], spec: Any) -> Any:
    """``spec`` with a dimension ``None`` wherever the window's elements differ in it.

    The input's spec can be too narrow: a ``map``'s is its first output's (phalanx runs the
    function where TF traces it), so the variable-length elements of the bucketing pattern
    would not match it."""

    def merge(s: TensorSpec, *values: Any) -> TensorSpec:
        if s.shape is None:
            return s
        shapes = {np.shape(v) for v in values}
        if any(len(p) != len(s.shape) for p in shapes):
            return TensorSpec(None, s.dtype)
        dims = tuple(
            d if d is not None and all(p[k] == d for p in shapes) else None
            for k, d in enumerate(s.shape)
        )
        return TensorSpec(dims, s.dtype)

    return st.map_structure(merge, spec, *elements) if elements else spec


def _key(key_func: Any, element: Any) -> int:
    key = np.asarray(st.call_unpacked(key_func, element))
    if key.shape != () or key.dtype.kind not in "iu":
        raise DatasetTypeError(
            f"group_by_window: key_func must return a scalar int64, got {key.dtype.name} of "
            f"shape {key.shape}."
        )
    return int(key)


def _size(window_size: int | None, window_size_func: Any, key: int) -> int:
    size = (
        window_size
        if window_size_func is None
        else st.call_function(window_size_func, np.int64(key))
    )
    size = int(np.asarray(size))
    if size < 1:
        raise DatasetArgumentError(
            f"group_by_window: the window size of key {key} is {size}; it must be >= 1."
        )
    return size


class GroupByWindowDataset(Dataset):
    """``Dataset.group_by_window``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, key_func, reduce_func, window_size, size_func):
        self._input, self._key_func, self._reduce = input_dataset, key_func, reduce_func
        self._window_size, self._size_func = window_size, size_func

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _GroupIterator(self, ctx)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _compute_spec(self) -> Any:
        x = first_element(self._input)
        if x is _EMPTY:
            return None
        key = _key(self._key_func, x)
        window = _window_dataset([x], self._input.element_spec)
        return st.call_function(self._reduce, np.int64(key), window).element_spec


class _GroupIterator(DatasetIterator):
    def __init__(self, ds: GroupByWindowDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.input = ds._input._iterator(ctx)
        self.windows: dict[int, list[Any]] = {}
        self.output: Any = None  # the iterator of the window being yielded
        self.flushing = False
        self.emitted = 0

    def _reduced(self, key: int) -> Any:
        elements = self.windows.pop(key)
        window = _window_dataset(elements, self.ds._input.element_spec)
        out = st.call_function(self.ds._reduce, np.int64(key), window)
        if not isinstance(out, Dataset):
            raise DatasetTypeError(
                f"group_by_window: reduce_func must return a Dataset, got {type(out).__name__}; "
                "e.g. reduce_func=lambda key, window: window.batch(n)."
            )
        return iter(out)

    def __next__(self) -> Any:
        while True:
            if self.output is not None:
                try:
                    x = next(self.output)
                    self.emitted += 1
                    return x
                except StopIteration:
                    self.output = None
            if not self.flushing:
                try:
                    x = next(self.input)
                except StopIteration:
                    self.flushing = True
                    continue
                key = _key(self.ds._key_func, x)
                window = self.windows.setdefault(key, [])
                window.append(x)
                if len(window) >= _size(self.ds._window_size, self.ds._size_func, key):
                    self.output = self._reduced(key)
                continue
            if not self.windows:
                raise StopIteration
            self.output = self._reduced(min(self.windows))

    def children(self) -> list[DatasetIterator]:
        return [self.input]

    def get_state(self) -> dict[str, Any]:
        self.input.get_state()  # raises for an input that cannot save its position
        return {"emitted": self.emitted}

    def set_state(self, state: dict[str, Any]) -> None:
        emitted = state_int(state, "emitted", what="elements yielded by group_by_window")
        self.close()
        self.input = self.ds._input._iterator(self.ctx)
        self.windows, self.output, self.flushing, self.emitted = {}, None, False, 0
        replay(self, emitted, "group_by_window")


def group_by_window(
    dataset: Dataset, key_func, reduce_func, window_size=None, window_size_func=None
) -> Dataset:
    """Checks the arguments (TensorFlow's rules) and builds the dataset."""
    if (window_size is None) == (window_size_func is None):
        raise DatasetArgumentError(
            "group_by_window: give exactly one of window_size and window_size_func."
        )
    for name, fn in (("key_func", key_func), ("reduce_func", reduce_func)):
        if not callable(fn):
            raise DatasetTypeError(f"group_by_window: {name} must be a function.")
    if window_size is not None and (
        isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1
    ):
        raise DatasetArgumentError(
            f"group_by_window: window_size must be a positive int, got {window_size!r}."
        )
    return GroupByWindowDataset(dataset, key_func, reduce_func, window_size, window_size_func)


def bucket_by_sequence_length(
    dataset: Dataset,
    element_length_func,
    bucket_boundaries,
    bucket_batch_sizes,
    padded_shapes=None,
    padding_values=None,
    pad_to_bucket_boundary=False,
    no_padding=False,
    drop_remainder=False,
) -> Dataset:
    """TensorFlow's ``bucket_by_sequence_length``, on ``group_by_window``."""
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(s) for s in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise DatasetArgumentError(
            "bucket_by_sequence_length: len(bucket_batch_sizes) must equal "
            f"len(bucket_boundaries) + 1, got {len(sizes)} and {len(boundaries)}."
        )
    if boundaries != sorted(boundaries) or len(set(boundaries)) != len(boundaries):
        raise DatasetArgumentError(
            f"bucket_by_sequence_length: bucket_boundaries must be increasing, got {boundaries}."
        )
    lower = np.array([np.iinfo(np.int32).min, *boundaries])
    upper = np.array([*boundaries, np.iinfo(np.int32).max])

    def key_func(*element):
        length = int(np.asarray(element_length_func(*element)))
        return np.int64(np.argmax((lower <= length) & (length < upper)))

    def reduce_func(key, window):
        size = sizes[int(key)]
        if no_padding:
            return window.batch(size, drop_remainder=drop_remainder)
        shapes = padded_shapes
        if pad_to_bucket_boundary:
            if int(key) == len(boundaries):
                raise DatasetArgumentError(
                    "bucket_by_sequence_length: with pad_to_bucket_boundary=True an element is "
                    "longer than the last boundary; add a boundary above the longest element."
                )
            bound = boundaries[int(key)] - 1
            spec = window.element_spec
            shapes = st.map_structure(
                lambda s: (bound, *([None] * (len(s.shape) - 1))) if s.shape else (), spec
            )
        return window.padded_batch(size, shapes, padding_values, drop_remainder=drop_remainder)

    def window_size(key):
        return sizes[int(key)]

    return GroupByWindowDataset(dataset, key_func, reduce_func, None, window_size)
