"""The iterator protocol: per-node iterators, random access, and the public ``Iterator``.

Every dataset node makes a node iterator (``DatasetIterator``) for its place in
the pipeline. A node iterator yields elements with ``__next__`` and saves and
restores its position with ``get_state``/``set_state``: small JSON-able dicts
of counters, never element data. ``set_state`` is called on a freshly made
iterator of an identically built pipeline; it rebuilds its children from the
state and restores them in turn.

Nodes over in-memory data also speak in indices: a ``RandomAccess`` view
fetches one element or a whole batch by index arrays, and an
``IndexIterator`` yields chunks of indices into it. ``batch`` over an
``IndexIterator`` gathers each batch with one fancy-indexing call per
component, with no Python per element (see ``_index_batches.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._random import data_root_seed
from ..errors import (
    BatchShapeError,
    IteratorStateError,
    NotCheckpointableError,
    StructureMismatchError,
)
from . import _structure as st

STATE_FORMAT = "phalanx.data.iterator/1"


class IterCtx(NamedTuple):
    """Where a node iterator sits in the run: the seed and the epoch path.

    ``epochs`` starts with the dataset's iteration number (one per
    ``iter(dataset)``), then one entry per enclosing ``repeat`` epoch or
    ``interleave`` input element. Shuffles derive their per-epoch seeds from it,
    so a restored iterator rebuilds exactly the seeds of the original run.
    """

    root_seed: int
    epochs: tuple[int, ...]

    def child(self, tag: int) -> IterCtx:
        """The context of a child iterator made for epoch or input ``tag``."""
        return IterCtx(self.root_seed, (*self.epochs, int(tag)))


class DatasetIterator:
    """One node's iterator (internal). Subclasses implement ``__next__`` and the state pair."""

    indexable = False  # True while next_indices/base can be used (see IndexIterator)

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        raise NotImplementedError

    def get_state(self) -> dict[str, Any]:
        """The position of this iterator, as a JSON-able dict."""
        raise NotCheckpointableError(
            f"{type(self).__name__} cannot save its position. Use a checkpointable pipeline "
            "(the transformations of phalanx.data.Dataset) or do not checkpoint this iterator."
        )

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a position saved by ``get_state`` (on a fresh iterator)."""
        raise NotCheckpointableError(f"{type(self).__name__} cannot restore a position.")

    def children(self) -> list[DatasetIterator]:
        """The live child iterators (closed with this one)."""
        return []

    def index_batches(self) -> Any | None:
        """The ``batch`` node iterator at or under this one whose batches ``fit`` may read as
        indices (``_index_batches.next_batch``); None (the default) when there is none."""
        return None

    def close(self) -> None:
        """Stop background work (threads) of this iterator and its children."""
        for c in self.children():
            c.close()


class RandomAccess:
    """A finite dataset whose elements can be fetched by index (internal).

    Attributes:
        materialized: True when elements are plain numpy data already in memory
            (no user function runs to fetch them), so ``cache()`` may skip them.
    """

    materialized = False

    def __len__(self) -> int:
        raise NotImplementedError

    def get(self, i: int) -> Any:
        """Element ``i``."""
        raise NotImplementedError

    def gather(self, idx: np.ndarray) -> Any:
        """The elements at ``idx`` stacked on a new leading axis."""
        return stack_elements([self.get(int(i)) for i in idx])


class ArraysAccess(RandomAccess):
    """Random access into the leading axis of a nest of numpy arrays."""

    materialized = True

    def __init__(self, tdef: Any, leaves: list[np.ndarray], as_arrays: Sequence[bool] = ()):
        self.tdef = tdef
        self.leaves = leaves
        self.n = int(leaves[0].shape[0]) if leaves else 0
        # Leaves whose elements were arrays (0-d included) come back as arrays, not as the
        # numpy scalar or Python object that ``a[i]`` gives (a cache yields what it was fed).
        self.as_arrays = list(as_arrays) or [False] * len(leaves)

    def __len__(self) -> int:
        return self.n

    def get(self, i: int) -> Any:
        values = [
            a[i, ...] if keep else a[i] for a, keep in zip(self.leaves, self.as_arrays, strict=True)
        ]
        if self.tdef is st.LEAF:
            return values[0]
        return st.unflatten(self.tdef, values)

    def gather(self, idx: np.ndarray) -> Any:
        if self.tdef is st.LEAF:
            return self.leaves[0][idx]
        return st.unflatten(self.tdef, [a[idx] for a in self.leaves])


def stack_elements(
    elements: list[Any], *, what: str = "batch", first_index: int | None = None
) -> Any:
    """Stack same-shaped elements on a new leading axis; clear errors otherwise.

    ``first_index`` is the dataset position of ``elements[0]``, named in errors.
    """
    tdef = st.treedef(elements[0])
    flats = [st.flatten(e) for e in elements]
    at = "" if first_index is None else f" (dataset element {first_index} onwards)"
    for n, e in enumerate(elements):
        if len(flats[n]) != len(flats[0]) or st.treedef(e) != tdef:
            raise StructureMismatchError(
                f"{what}{at}: element {n} of the batch has structure {st.describe(st.treedef(e))}, "
                f"element 0 has {st.describe(tdef)}. Every element of a dataset must have the same nesting."
            )
    out = []
    for j, column in enumerate(zip(*flats, strict=True)):
        try:
            out.append(st.stack(column))
        except ValueError:
            shape0 = np.shape(column[0])
            bad = next(i for i, c in enumerate(column) if np.shape(c) != shape0)
            comp = "" if len(flats[0]) == 1 else f" (component {j})"
            where = "" if first_index is None else f" = dataset element {first_index + bad}"
            raise BatchShapeError(
                f"{what}: cannot stack elements of different shapes{comp}: element 0 of the batch "
                f"has shape {shape0}, element {bad}{where} has shape {np.shape(column[bad])}. "
                "Use padded_batch(batch_size) to pad them to a common shape, or map them to one "
                "shape first."
            ) from None
    return st.unflatten(tdef, out)


class IndexIterator(DatasetIterator):
    """A node iterator that can yield indices into ``self.base`` (a ``RandomAccess``).

    ``indexable`` may change while iterating (a ``repeat`` whose next epoch
    reads a cache that is not filled yet): callers check it before each
    ``next_indices`` call, and ``next_indices`` returns ``None`` when the
    iterator stopped being indexable, in which case ``__next__`` still works.
    """

    indexable = True
    base: RandomAccess

    def next_indices(self, k: int) -> np.ndarray | None:
        """Up to ``k`` next indices (int64); an empty array means the end, ``None`` "use __next__"."""
        raise NotImplementedError

    def __next__(self) -> Any:
        idx = self.next_indices(1)
        if idx.size == 0:
            raise StopIteration
        return self.base.get(int(idx[0]))


class AccessIterator(IndexIterator):
    """Iterates a ``RandomAccess`` in order; its state is the next position."""

    def __init__(self, base: RandomAccess):
        self.base = base
        self.pos = 0
        self.n = len(base)

    def next_indices(self, k: int) -> np.ndarray:
        end = min(self.pos + k, self.n)
        out = np.arange(self.pos, end, dtype=np.int64)
        self.pos = end
        return out

    def __next__(self) -> Any:
        if self.pos >= self.n:
            raise StopIteration
        self.pos += 1
        return self.base.get(self.pos - 1)

    def get_state(self) -> dict[str, Any]:
        return {"i": self.pos, "n": self.n}

    def set_state(self, state: dict[str, Any]) -> None:
        check_length(state, self.n, type(self.base).__name__)
        self.pos = state_int(state, "i", high=self.n, what="position")


def state_int(
    state: Any, key: str, *, low: int = 0, high: int | None = None, what: str = "position"
) -> int:
    """``state[key]`` as an int in ``[low, high]``, or an ``IteratorStateError`` saying why not.

    A state is data from outside (a checkpoint file): a tampered or foreign one
    must not make the pipeline yield elements that were never in the dataset.
    """
    if not isinstance(state, dict) or key not in state:
        raise IteratorStateError(
            f"set_state: the iterator state has no {key!r} ({what}) where the "
            f"pipeline expects one; got {str(state)[:80]}. The state is damaged or from another "
            "pipeline: restore a state saved by get_state() of the same pipeline."
        )
    value = state[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise IteratorStateError(
            f"set_state: {key!r} ({what}) must be an int, got {value!r} of type "
            f"{type(value).__name__}. The state is damaged: restore one saved by get_state()."
        )
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise IteratorStateError(
            f"set_state: {key!r} ({what}) is {int(value)}, outside {bound} for this "
            "pipeline. The state was altered, or saved on other data (another number of "
            "elements): restore a state saved by get_state() on the same data."
        )
    return int(value)


def check_length(state: Any, length: int, what: str) -> None:
    """Raises ``IteratorStateError`` when ``state`` was saved on data of another length."""
    saved = state.get("n") if isinstance(state, dict) else None
    if saved is not None and saved != length:
        raise IteratorStateError(
            f"set_state: the state was saved on data of {saved!r} elements ({what}), but this "
            f"dataset has {length}. Restore it on the same data, or start this dataset afresh."
        )


def replay(iterator: Any, count: int, what: str, done: int = 0) -> None:
    """Advances ``iterator`` from element ``done`` to element ``count``, or says the data is
    shorter than the state."""
    for at in range(done, count):
        try:
            next(iterator)
        except StopIteration:
            raise IteratorStateError(
                f"set_state: the state was saved after {count} elements of {what}, but this "
                f"data has only {at}. It was saved on other data: restore it on the same "
                "data, or start this dataset afresh."
            ) from None


class Iterator:
    """An iterator over a ``Dataset``, with a saveable position, as ``tf.data.Iterator``.

    Made by ``iter(dataset)`` or ``dataset.as_numpy_iterator()``. Elements are
    numpy arrays in the dataset's nesting. An exhausted iterator raises
    ``StopIteration`` (``get_next`` raises ``tf``'s ``OutOfRangeError``
    equivalent, ``StopIteration``, too).

    ``get_state()`` returns a small JSON-serializable dict (positions, epoch
    counters and seeds, never element data); ``set_state(state)`` on an
    iterator of an identically built dataset resumes with exactly the same
    remaining elements in the same order.

    Examples:
        >>> from phalanx.data import Dataset
        >>> it = iter(Dataset.range(5).shuffle(5, seed=1))
        >>> first = next(it)
        >>> state = it.get_state()
        >>> rest = list(it)
        >>> it2 = iter(Dataset.range(5).shuffle(5, seed=1))
        >>> it2.set_state(state)
        >>> [int(x) for x in it2] == [int(x) for x in rest]
        True
    """

    _python_strings = False  # as_numpy_iterator: scalar strings as Python bytes

    def __init__(self, dataset: Any, *, iteration: int, root_seed: int):
        self._dataset = dataset
        self._iteration = iteration
        self._root_seed = root_seed
        self._node = dataset._iterator(IterCtx(root_seed, (iteration,)))

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> Any:
        x = next(self._node)
        return _strings_as_bytes(x) if self._python_strings else x

    def get_next(self) -> Any:
        """The next element; raises ``StopIteration`` at the end."""
        return next(self)

    @property
    def element_spec(self) -> Any:
        """The ``TensorSpec`` nest of the elements (the dataset's ``element_spec``)."""
        return self._dataset.element_spec

    def get_state(self) -> dict[str, Any]:
        """The iterator's position as a small JSON-serializable dict.

        Raises:
            NotCheckpointableError: A node of the pipeline cannot save its position
                (the message says which and why).
        """
        state = {
            "format": STATE_FORMAT,
            "pipeline": self._dataset._signature(),
            "root_seed": self._root_seed,
            "iteration": self._iteration,
            "node": self._node.get_state(),
        }
        shard = self._dataset._input_shard
        if shard is not None:  # one of several input pipelines (distribute/_input.py)
            state["shard"] = dict(shard)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Resume at a position saved by ``get_state`` (of this or an identically built dataset).

        Raises:
            IteratorStateError: The state was saved from a different pipeline.
        """
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise IteratorStateError(
                f"set_state expected a dict made by Iterator.get_state() with format {STATE_FORMAT!r}; "
                f"got {type(state).__name__} {str(state)[:80]}."
            )
        check_shard(state.get("shard"), self._dataset._input_shard)
        mine = self._dataset._signature()
        if state.get("pipeline") != mine:
            raise IteratorStateError(
                "set_state got the state of a different pipeline: it was saved from "
                f"{state.get('pipeline')!r}, this iterator's dataset is {mine!r}. Rebuild the dataset "
                "with the same transformations before restoring."
            )
        iteration = state_int(state, "iteration", what="pass over the dataset")
        root_seed = state_int(state, "root_seed", low=-(2**63), high=2**64 - 1, what="seed")
        if "node" not in state:
            state_int(state, "node")  # raises, naming the missing key
        self._node.close()
        self._iteration, self._root_seed = iteration, root_seed
        self._node = self._dataset._iterator(IterCtx(self._root_seed, (self._iteration,)))
        try:
            self._node.set_state(state["node"])
        except IteratorStateError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, StopIteration) as e:
            raise IteratorStateError(
                f"set_state: the iterator state of {mine!r} is damaged ({type(e).__name__}: "
                f"{e}); restore a state saved by get_state() of the same pipeline on the same "
                "data."
            ) from None

    def close(self) -> None:
        """Stop the iterator's background threads (also done when it is garbage-collected)."""
        self._node.close()

    def __del__(self) -> None:
        # No module globals here: at interpreter exit they may already be None.
        try:  # noqa: SIM105 - contextlib may be None by then
            self._node.close()
        except Exception:
            pass


_SHARE_WHY = {
    "FILE": "FILE sharding: each process reads its own files",
    "OFF": (
        "auto-shard policy OFF: every process reads every element, so a global batch is "
        "the processes' batches together and changes with their number"
    ),
    "DATA": (
        "DATA sharding of elements (the pipeline does not end with batch): each process "
        "takes every n-th element, so a global batch changes with the number of processes"
    ),
    "FUNCTION": (
        "distribute_datasets_from_function: each process's dataset is its own, and phalanx "
        "cannot map its position onto other processes' datasets"
    ),
}


def share_why(shard: dict) -> str:
    """Why a pipeline's position is its own share's (for messages)."""
    return _SHARE_WHY.get(shard.get("policy"), f"auto-shard policy {shard.get('policy')}")


def check_shard(saved: Any, mine: Any) -> None:
    """Refuses a position saved by one of ``n`` input pipelines restored into one of ``m != n``,
    unless both positions are the whole pipeline's.

    ``saved``/``mine`` are the ``"shard"`` of a state and of this pipeline (None: the
    only pipeline, which reads everything). DATA sharding that splits each global batch
    by rows leaves every pipeline at the whole pipeline's position (``"global"``), so
    its position moves to any number of pipelines; the others are per-pipeline shares.
    """
    n = saved.get("pipelines", 1) if isinstance(saved, dict) else 1
    m = mine.get("pipelines", 1) if isinstance(mine, dict) else 1
    if n == m:
        return
    for shard, who in ((saved, "saved"), (mine, "restoring")):
        if isinstance(shard, dict) and not shard.get("global"):
            raise IteratorStateError(
                f"set_state: this position was saved with {_pipelines(n)} and is restored "
                f"with {m}, but the {who} pipelines each read their own share "
                f"({share_why(shard)}), so no position maps onto the other count. Restore it "
                f"with {_pipelines(n)}, or resume from a checkpoint saved at an epoch "
                "end; to move mid-epoch between process counts, end the "
                "pipeline with batch(global_batch) under AutoShardPolicy.DATA (each process "
                "takes rows of every global batch) or pass arrays to fit."
            )


def _pipelines(n: int) -> str:
    return "1 input pipeline (process)" if n == 1 else f"{n} input pipelines (processes)"


def _strings_as_bytes(element: Any) -> Any:
    """``element`` with each scalar string (a 0-d object array) as Python ``bytes``, as
    ``tf.data``'s ``as_numpy_iterator`` gives (``bytes()`` of a 0-d object array would give
    the 8 bytes of a pointer, and it has no ``decode``)."""
    return st.map_structure(
        lambda a: (
            a.item() if isinstance(a, np.ndarray) and a.ndim == 0 and a.dtype == object else a
        ),
        element,
    )


def new_root_seed() -> int:
    """A 63-bit seed for the unseeded shuffles of one dataset: fresh randomness, or the next
    draw of ``phalanx.utils.set_random_seed``'s stream once it was called."""
    return data_root_seed()


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
