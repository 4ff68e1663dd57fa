"""``Dataset.map`` (sequential or on threads), and ``first_element``, how ``map`` and
``interleave`` learn their output spec.
"""

from __future__ import annotations

import collections
import os
import weakref
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from ..errors import (
    DatasetFunctionError,
    DatasetTypeError,
    NotCheckpointableError,
    StructureMismatchError,
)
from . import _structure as st
from ._dataset import Dataset
from ._iterator import (
    ArraysAccess,
    DatasetIterator,
    IterCtx,
    RandomAccess,
    _safe_state,
    _unwrap_state,
    stack_elements,
)
from ._options import AUTOTUNE

_EMPTY = object()


def first_element(dataset: Any) -> Any:
    """The first element of ``dataset`` (a throwaway pass), or ``_EMPTY``.

    How ``map`` and ``interleave`` learn their output spec: by running their
    function on it, where TensorFlow traces the function.
    """
    it = dataset._iterator(IterCtx(0, (0,)))
    try:
        return next(it)
    except StopIteration:
        return _EMPTY
    finally:
        it.close()


class _Mapper:
    """Calls a user function on elements, converts its output and checks its structure."""

    def __init__(self, fn, name: str = "map"):
        self.fn, self.name = fn, name
        self.tdef: Any = "unset"

    def __call__(self, element: Any) -> Any:
        return self.output(st.call_unpacked(self.fn, element))

    def output(self, raw: Any) -> Any:
        """The function's output ``raw``, converted and checked."""
        out = st.normalize(raw)
        tdef = st.treedef(out)
        if self.tdef == "unset":
            if not st.num_leaves(tdef):
                raise DatasetFunctionError(
                    f"{self.name}: the function returned {raw!r:.60}, an element without arrays "
                    "(None components only); tf.data refuses it too (InvalidArgumentError). "
                    "Return at least one array, e.g. (x, None) rather than None."
                )
            self.tdef = tdef
        elif tdef != self.tdef:
            raise StructureMismatchError(
                f"{self.name}: the function returned {st.describe(tdef)}, but earlier it returned "
                f"{st.describe(self.tdef)}. A map function must return the same nesting (tuple/dict "
                "structure) for every element; return empty arrays instead of omitting entries."
            )
        return out


class MapAccess(RandomAccess):
    """Random access through a map function (the function runs on each fetch)."""

    def __init__(self, inner: RandomAccess, fn):
        self.inner, self.fn = inner, fn

    def __len__(self) -> int:
        return len(self.inner)

    def get(self, i: int) -> Any:
        return self.fn(self.inner.get(i))

    def gather(self, idx: np.ndarray) -> Any:
        """The mapped elements at ``idx``, with less work per element over in-memory arrays.

        The function still runs once per element, in order, on the same values;
        what is saved is the conversion and structure check of each output when
        it is a plain tuple of numpy values (or one numpy value) like the first
        (``_Mapper.output`` checks any other), and the per-element gather of the inputs.
        """
        if isinstance(self.inner, ArraysAccess) and len(idx):
            return _map_rows(self.inner, self.fn, idx)
        return super().gather(idx)


class MapDataset(Dataset):
    """``Dataset.map``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, fn, num_parallel_calls=None, deterministic=None):
        if not callable(fn):
            raise DatasetTypeError(
                f"map expects a callable (the function applied to each element), got "
                f"{type(fn).__name__} {fn!r:.60}."
            )
        self._input, self._fn = input_dataset, fn
        if num_parallel_calls == AUTOTUNE:
            num_parallel_calls = os.cpu_count() or 1
        self._parallel = int(num_parallel_calls) if num_parallel_calls else 0
        self._deterministic = deterministic

    def _iterator(self, ctx):
        child = self._input._iterator(ctx)
        if self._parallel > 1:
            det = self._deterministic
            if det is None:
                det = self.options().deterministic
            return _ParallelMapIterator(child, _Mapper(self._fn), self._parallel, det is not False)
        return _MapIterator(child, _Mapper(self._fn))

    def _random_access(self):
        inner = self._input._random_access()
        return None if inner is None else MapAccess(inner, _Mapper(self._fn))

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        x = first_element(self._input)
        if x is _EMPTY:
            return None
        y = _Mapper(self._fn)(x)
        spec = st.spec_of(y)
        in_spec = st.flatten(self._input.element_spec)
        first = getattr(in_spec[0], "shape", None) if in_spec else None  # a window: DatasetSpec
        lead = np.shape(st.flatten(x)[0])[:1] if first else ()
        if first and first[0] is None and lead:

            def relax(s):
                return st.with_leading_none(s) if s.shape and s.shape[:1] == lead else s

            spec = st.map_structure(relax, spec)
        return spec


class _MapIterator(DatasetIterator):
    def __init__(self, child: DatasetIterator, mapper: _Mapper):
        self.child, self.mapper = child, mapper

    def __next__(self):
        return self.mapper(next(self.child))

    def children(self):
        return [self.child]

    def get_state(self):
        return {"child": self.child.get_state()}

    def set_state(self, state):
        self.child.set_state(state["child"])


class _ParallelMapIterator(DatasetIterator):
    """Runs the map function on a thread pool, ahead of the consumer.

    Small elements go to the pool in chunks (one task maps up to
    ``_CHUNK`` elements) so that the pool's overhead is paid per chunk; large
    elements (batches) go one per task. At most ``2 * workers`` tasks are in
    flight. Each element carries a snapshot of the input's state after it, so
    the state is the consumer's position and read-ahead never leaks into a
    checkpoint. An error in the function is raised at its element's position.
    """

    _CHUNK = 16
    _LARGE_BYTES = 1 << 16

    def __init__(self, child, mapper, workers: int, deterministic: bool):
        self.child, self.mapper, self.workers = child, mapper, workers
        self.deterministic = deterministic
        self.pending: collections.deque = collections.deque()
        self.current: collections.deque = collections.deque()  # (result or error, state) ready
        self.state = _safe_state(child)
        self.ended = False
        self.chunk = 0  # decided from the first element's size
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="phalanx-map")
        self._finalizer = weakref.finalize(
            self, self.pool.shutdown, wait=False, cancel_futures=True
        )

    def _map_chunk(self, xs: list[Any]) -> list[tuple[bool, Any]]:
        out = []
        for x in xs:
            try:
                out.append((True, self.mapper(x)))
            except Exception as e:  # raised at its position; the elements after it follow
                out.append((False, e))
        return out

    def _fill(self) -> None:
        while not self.ended and len(self.pending) < 2 * self.workers:
            xs, states = [], []
            while not xs or len(xs) < self.chunk:
                try:
                    x = next(self.child)
                except StopIteration:
                    self.ended = True
                    break
                if not self.chunk:
                    size = sum(np.asarray(a).nbytes for a in st.flatten(x))
                    self.chunk = 1 if size >= self._LARGE_BYTES else self._CHUNK
                xs.append(x)
                states.append(_safe_state(self.child))
            if xs:
                self.pending.append((self.pool.submit(self._map_chunk, xs), states))

    def _take_task(self) -> None:
        if self.deterministic:
            future, states = self.pending.popleft()
        else:
            done, _ = wait([f for f, _ in self.pending], return_when=FIRST_COMPLETED)
            k = next(i for i, (f, _) in enumerate(self.pending) if f in done)
            future, states = self.pending[k]
            del self.pending[k]
        self.current.extend(zip(future.result(), states, strict=False))

    def __next__(self):
        if not self.current:
            self._fill()
            if not self.pending:
                raise StopIteration
            self._take_task()
            self._fill()
        (ok, value), state = self.current.popleft()
        if not self.deterministic:
            state = NotCheckpointableError(
                "map(num_parallel_calls=..., deterministic=False) returns elements out of order, so "
                "its position cannot be saved. Use deterministic=True (the default) to checkpoint."
            )
        self.state = state
        if not ok:
            raise value  # the next call returns the next element, as tf.data
        return value

    def children(self):
        return [self.child]

    def close(self):
        self._finalizer()
        self.child.close()

    def get_state(self):
        return {"child": _unwrap_state(self.state)}

    def set_state(self, state):
        self.pending.clear()
        self.current.clear()
        self.ended = False
        self.child.set_state(state["child"])
        self.state = state["child"]


_NUMPY = (np.ndarray, np.generic)


def _map_rows(inner: ArraysAccess, mapper: Any, idx: np.ndarray) -> Any:
    rows = [a[idx] for a in inner.leaves]
    plain = inner.tdef is not st.LEAF and inner.tdef[0] is tuple
    first = mapper.output(st.call_unpacked(mapper.fn, _row(inner, rows, 0, plain)))
    width = len(first) if type(first) is tuple else None
    if not _is_flat(mapper.tdef, width):  # dicts, nests: each output converted and checked
        rest = [mapper(_row(inner, rows, i, plain)) for i in range(1, len(idx))]
        return stack_elements([first, *rest])
    outs = [first]
    for i in range(1, len(idx)):
        raw = st.call_unpacked(mapper.fn, _row(inner, rows, i, plain))
        if width is None:
            fast = isinstance(raw, _NUMPY)
        else:
            fast = (
                type(raw) is tuple and len(raw) == width and all(isinstance(v, _NUMPY) for v in raw)
            )
        outs.append(raw if fast else mapper.output(raw))
    try:
        if width is None:
            return np.stack(outs)
        return tuple(np.stack(column) for column in zip(*outs, strict=True))
    except ValueError:
        return stack_elements(outs)  # says which element has which shape


def _row(inner: ArraysAccess, rows: list[np.ndarray], i: int, plain: bool) -> Any:
    if plain and len(rows) == len(inner.tdef[1]):
        return tuple(r[i] for r in rows)
    return st.unflatten(inner.tdef, [r[i] for r in rows])


def _is_flat(tdef: Any, width: int | None) -> bool:
    """Whether ``tdef`` is a leaf (``width`` None) or a plain tuple of ``width`` leaves."""
    if width is None:
        return tdef is st.LEAF
    return tdef[0] is tuple and len(tdef[1]) == width and all(t is st.LEAF for t in tdef[1])
