"""``Dataset.choose_from_datasets`` and ``Dataset.sample_from_datasets``, as tf.data.

``choose_from_datasets(datasets, choice_dataset)`` yields, for each index the
choice dataset gives, the next element of that input. When the chosen input is
used up, it stops (``stop_on_empty_dataset=True``, the default) or skips the
index (``False``), ending when every input is used up.

``sample_from_datasets(datasets, weights, seed)`` is the same with a choice
dataset of random indices drawn with ``weights`` (uniform by default). Its
default is ``stop_on_empty_dataset=False``: an input that is used up is never
drawn again, so the others are drawn in proportion to their weights.

The draws are a pure function of the seed words and the draw number (blocks
of 8192 from ``SeedSequence([*words, block])``, as ``shuffle``), so an
iterator's state is counters only: the draws made, each input's state, which
inputs are used up. Seed words: ``[1, seed]``, or ``[2, root_seed, depth]``
without a seed; ``rerandomize_each_iteration=True`` appends the epoch path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError, IteratorStateError
from . import _structure as st
from ._dataset import Dataset
from ._iterator import DatasetIterator, IterCtx, state_int
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

_BLOCK = 8192
_MASK = (1 << 63) - 1


def _check_datasets(datasets: Any, method: str) -> list[Dataset]:
    if isinstance(datasets, Dataset) or not isinstance(datasets, list | tuple):
        raise DatasetTypeError(
            f"{method}: datasets must be a list of phalanx.data.Dataset, got "
            f"{type(datasets).__name__}."
        )
    datasets = list(datasets)
    if not datasets:
        raise DatasetArgumentError(f"{method}: give at least one dataset, got an empty list.")
    for i, d in enumerate(datasets):
        if not isinstance(d, Dataset):
            raise DatasetTypeError(
                f"{method}: datasets[{i}] is {type(d).__name__}, not a phalanx.data.Dataset. "
                "Make arrays a dataset first: Dataset.from_tensor_slices(x)."
            )
    specs = [d.element_spec for d in datasets]
    for i, spec in enumerate(specs[1:], 1):
        same = st.treedef(spec) == st.treedef(specs[0]) and all(
            a.dtype == b.dtype for a, b in zip(st.flatten(spec), st.flatten(specs[0]), strict=True)
        )
        if not same:
            raise DatasetTypeError(
                f"{method}: datasets must have compatible element specs (one structure and "
                f"dtypes); dataset 0 has {specs[0]!r}, dataset {i} has {spec!r}. Map them to "
                "one structure and dtype first."
            )
    return datasets


def _merged_spec(datasets: list[Dataset]) -> Any:
    def merge(*specs: st.TensorSpec) -> st.TensorSpec:
        shapes = [s.shape for s in specs]
        if any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
            return st.TensorSpec(None, specs[0].dtype)
        dims = tuple(d[0] if len(set(d)) == 1 else None for d in zip(*shapes, strict=True))
        return st.TensorSpec(dims, specs[0].dtype)

    return st.map_structure(merge, *[d.element_spec for d in datasets])


class ChooseDataset(Dataset):
    """The inputs in the order a choice dataset (scalar int64 indices) gives."""

    def __init__(
        self, datasets: list[Dataset], choice: Dataset, stop: bool, never: tuple[int, ...] = ()
    ):
        self._datasets, self._choice, self._stop = list(datasets), choice, bool(stop)
        self._never = never  # inputs the choice never gives (weight 0): used up from the start

    def _inputs(self):
        return [*self._datasets, self._choice]

    def _with_inputs(self, inputs):
        out = super()._with_inputs([])
        out._datasets, out._choice = list(inputs[:-1]), inputs[-1]
        return out

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _ChooseIterator(self, ctx)

    def _cardinality(self) -> int:
        # TensorFlow's rule (its DirectedInterleave): infinite when an input is, else unknown.
        if any(d._cardinality() == INFINITE_CARDINALITY for d in self._datasets):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY

    def _compute_spec(self) -> Any:
        return _merged_spec(self._datasets)


class _ChooseIterator(DatasetIterator):
    def __init__(self, ds: ChooseDataset, ctx: IterCtx):
        self.ds = ds
        self.choice = ds._choice._iterator(ctx)
        self.inputs = [d._iterator(ctx) for d in ds._datasets]
        self.done = [i in ds._never for i in range(len(self.inputs))]
        self.ended = False

    def __next__(self) -> Any:
        while not self.ended:
            if all(self.done):
                break
            try:
                index = next(self.choice)
            except StopIteration:
                break
            i = _index(index, len(self.inputs))
            if self.done[i]:
                if self.ds._stop:
                    break
                continue
            try:
                return next(self.inputs[i])
            except StopIteration:
                self.done[i] = True
                if self.ds._stop:
                    break
        self.ended = True
        raise StopIteration

    def children(self) -> list[DatasetIterator]:
        return [self.choice, *self.inputs]

    def get_state(self) -> dict[str, Any]:
        return {
            "choice": self.choice.get_state(),
            "inputs": [it.get_state() for it in self.inputs],
            "done": list(self.done),
            "ended": self.ended,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        inputs = state.get("inputs") if isinstance(state, dict) else None
        if not isinstance(inputs, list) or len(inputs) != len(self.inputs):
            raise IteratorStateError(
                f"set_state: the state is not one of a choice over {len(self.inputs)} datasets "
                f"(got {str(state)[:80]}). Restore a state saved by get_state() of the same "
                "pipeline."
            )
        self.choice.set_state(state["choice"])
        for it, s in zip(self.inputs, inputs, strict=True):
            it.set_state(s)
        self.done = [bool(d) for d in state.get("done", self.done)]
        self.ended = bool(state.get("ended", False))


def _index(value: Any, n: int) -> int:
    i = int(np.asarray(value))
    if not 0 <= i < n:
        raise DatasetArgumentError(
            f"choose_from_datasets: selector index out of range: {i} >= {n}"
            f"; choice_dataset must give indices 0 to {n - 1} into the list of datasets."
            if i >= 0
            else f"choose_from_datasets: selector index out of range: {i} < 0"
            f"; choice_dataset must give indices 0 to {n - 1} into the list of datasets."
        )
    return i


def choose_from_datasets(
    datasets: Any, choice_dataset: Any, stop_on_empty_dataset: bool = True
) -> Dataset:
    """The elements of ``datasets`` in the order of ``choice_dataset``'s indices (tf.data's)."""
    datasets = _check_datasets(datasets, "choose_from_datasets")
    spec = choice_dataset.element_spec if isinstance(choice_dataset, Dataset) else None
    if spec != st.TensorSpec((), np.int64):
        raise DatasetTypeError(
            "choose_from_datasets: the elements of choice_dataset must be scalar int64 "
            f"indices, got {spec!r}. Map them: choice_dataset.map(lambda i: np.int64(i))."
        )
    return ChooseDataset(datasets, choice_dataset, _check_bool(stop_on_empty_dataset))


class _DrawsDataset(Dataset):
    """Endless int64 indices drawn with ``probs`` (``sample_from_datasets``'s choice)."""

    def __init__(self, probs: np.ndarray, seed: int | None, rerandomize: bool):
        self._cdf = np.cumsum(probs)
        self._cdf /= self._cdf[-1]
        self._seed, self._rerandomize = seed, rerandomize

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        base = (1, self._seed) if self._seed is not None else (2, ctx.root_seed, self._depth)
        words = base + ctx.epochs if self._rerandomize else base
        return _DrawsIterator(self._cdf, words)

    def _cardinality(self) -> int:
        return INFINITE_CARDINALITY

    def _compute_spec(self) -> Any:
        return st.TensorSpec((), np.int64)


class _DrawsIterator(DatasetIterator):
    def __init__(self, cdf: np.ndarray, words: tuple[int, ...]):
        self.cdf, self.words = cdf, words
        self.k = 0
        self._block, self._draws = -1, np.empty(0, np.int64)

    def __next__(self) -> np.int64:
        block = self.k // _BLOCK
        if block != self._block:
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([*self.words, block])))
            u = rng.random(_BLOCK)
            self._draws = np.minimum(np.searchsorted(self.cdf, u, side="right"), len(self.cdf) - 1)
            self._block = block
        out = np.int64(self._draws[self.k % _BLOCK])
        self.k += 1
        return out

    def get_state(self) -> dict[str, Any]:
        return {"k": self.k}

    def set_state(self, state: dict[str, Any]) -> None:
        self.k = state_int(state, "k", what="indices drawn by sample_from_datasets")


def sample_from_datasets(
    datasets: Any,
    weights: Any = None,
    seed: int | None = None,
    stop_on_empty_dataset: bool = False,
    rerandomize_each_iteration: bool | None = None,
) -> Dataset:
    """Elements drawn at random from ``datasets`` with probabilities ``weights`` (tf.data's)."""
    datasets = _check_datasets(datasets, "sample_from_datasets")
    n = len(datasets)
    if weights is None:
        probs = np.full(n, 1.0 / n)
    else:
        if isinstance(weights, Dataset):
            raise DatasetTypeError(
                "sample_from_datasets: weights must be a list of numbers; a Dataset of weights "
                "is not supported. Give fixed weights, e.g. [0.5, 0.5]."
            )
        probs = np.asarray(weights, dtype=np.float64).reshape(-1)
        if probs.size != n:
            raise DatasetArgumentError(
                f"sample_from_datasets: got {n} datasets and {probs.size} weights; give one "
                "weight per dataset."
            )
        if not np.all(np.isfinite(probs)) or np.any(probs < 0) or probs.sum() <= 0:
            raise DatasetArgumentError(
                f"sample_from_datasets: weights must be finite, non-negative and not all 0, "
                f"got {probs.tolist()}."
            )
    if seed is not None:
        seed = int(seed) & _MASK
    draws = _DrawsDataset(probs, seed, bool(rerandomize_each_iteration))
    never = tuple(int(i) for i in np.flatnonzero(probs == 0))
    return ChooseDataset(datasets, draws, _check_bool(stop_on_empty_dataset), never)


def _check_bool(value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise DatasetTypeError(f"stop_on_empty_dataset must be True or False, got {value!r}.")
    return bool(value)
