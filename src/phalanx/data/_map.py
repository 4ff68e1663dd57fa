"""Element-wise transformations: map (sequential or on threads), filter, repeat, take, skip, enumerate.

``repeat``, ``take`` and ``skip`` keep the index protocol of their input
(``IndexIterator``) so that a batch after them still gathers by index.
"""

from __future__ import annotations

import collections
import os
import weakref
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from ..errors import (
    DatasetArgumentError,
    DatasetTypeError,
    NotCheckpointableError,
    StructureMismatchError,
)
from . import _structure as st
from ._dataset import Dataset
from ._iterator import DatasetIterator, IndexIterator, IterCtx, RandomAccess
from ._options import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Options

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


def _safe_state(it: Any) -> Any:
    """``it.get_state()``; the error to raise when someone asks for it; None without one."""
    getter = getattr(it, "get_state", None)
    if getter is None:
        return None
    try:
        return getter()
    except NotCheckpointableError as e:
        return e


def _unwrap_state(state: Any) -> Any:
    if isinstance(state, BaseException):
        raise state
    return state


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
        lead = np.shape(st.flatten(x)[0])[:1]
        if in_spec and in_spec[0].shape and in_spec[0].shape[0] is None and lead:

            def relax(s):
                return st.TensorSpec((None, *s.shape[1:]), s.dtype) if s.shape[:1] == lead else s

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
            except Exception as e:
                out.append((False, e))
                break
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
            self.current.clear()
            self.pending.clear()
            self.ended = True
            raise value
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


class TakeDataset(Dataset):
    """``Dataset.take``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, count: int):
        self._input, self._count = input_dataset, int(count)

    def _iterator(self, ctx):
        return _TakeIterator(self._input._iterator(ctx), self._count)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == UNKNOWN_CARDINALITY:
            return n
        return self._count if n == INFINITE_CARDINALITY else min(n, self._count)

    def _compute_spec(self):
        return self._input.element_spec


class _PassIndex(IndexIterator):
    """Shared plumbing of index-preserving iterators over one child."""

    @property
    def indexable(self):
        return self.child.indexable

    @property
    def base(self):
        return self.child.base

    def children(self):
        return [self.child]


class _TakeIterator(_PassIndex):
    def __init__(self, child, count):
        self.child, self.count, self.n = child, count, 0

    def __next__(self):
        if 0 <= self.count <= self.n:
            raise StopIteration
        x = next(self.child)
        self.n += 1
        return x

    def next_indices(self, k):
        if self.count >= 0:
            k = min(k, self.count - self.n)
            if k <= 0:
                return np.empty(0, np.int64)
        idx = self.child.next_indices(k)
        if idx is not None:
            self.n += idx.size
        return idx

    def get_state(self):
        return {"n": self.n, "child": self.child.get_state()}

    def set_state(self, state):
        self.n = int(state["n"])
        self.child.set_state(state["child"])


class SkipDataset(TakeDataset):
    """``Dataset.skip``."""

    def _iterator(self, ctx):
        return _SkipIterator(self._input._iterator(ctx), self._count)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return 0 if self._count < 0 else max(0, n - self._count)


class _SkipIterator(_TakeIterator):
    def _skip(self) -> bool:
        while self.count < 0 or self.n < self.count:
            if self.child.indexable:
                want = 1 << 20 if self.count < 0 else self.count - self.n
                idx = self.child.next_indices(want)
                if idx is None:
                    continue
                if idx.size == 0:
                    return False
                self.n += idx.size
            else:
                try:
                    next(self.child)
                except StopIteration:
                    return False
                self.n += 1
        return True

    def __next__(self):
        if not self._skip():
            raise StopIteration
        return next(self.child)

    def next_indices(self, k):
        if not self._skip():
            return np.empty(0, np.int64)
        return self.child.next_indices(k)


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


class OptionsDataset(Dataset):
    """``Dataset.with_options``: the same elements, with options attached."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, options: Options):
        if not isinstance(options, Options):
            raise TypeError(
                f"with_options expects phalanx.data.Options, got {type(options).__name__}."
            )
        self._input, self._opts = input_dataset, options

    def _options_here(self):
        return self._opts

    def _iterator(self, ctx):
        return self._input._iterator(ctx)

    def _random_access(self):
        return self._input._random_access()

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec
