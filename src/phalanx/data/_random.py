"""``Dataset.random``: an endless dataset of uniformly distributed int64 values, as tf.data.

Value ``k`` is element ``k % 4096`` of the int64s a PCG64 generator seeded with
``SeedSequence([*words, k // 4096])`` draws, so the values are a pure function
of the seed words and the position, and the iterator's state is the position.
Seed words: ``[3, seed]`` for a given seed, ``[4, root_seed, depth]`` otherwise
(the dataset's root seed, as ``shuffle``); with ``rerandomize_each_iteration``
the epoch path is appended, so each iteration draws a new sequence. The values
are not TensorFlow's (another generator), only their distribution is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetTypeError
from ._dataset import Dataset
from ._iterator import DatasetIterator, IterCtx, state_int
from ._options import INFINITE_CARDINALITY
from ._structure import TensorSpec

_BLOCK = 4096
_MASK = (1 << 64) - 1
_INT64 = np.iinfo(np.int64)


class RandomDataset(Dataset):
    """``Dataset.random(seed, rerandomize_each_iteration)``."""

    def __init__(self, seed: Any = None, rerandomize_each_iteration: Any = None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise DatasetTypeError(
                f"random: seed must be an int or None, got {type(seed).__name__} {seed!r:.40}."
            )
        if rerandomize_each_iteration not in (None, True, False):
            raise DatasetTypeError(
                "random: rerandomize_each_iteration must be True, False or None, got "
                f"{rerandomize_each_iteration!r:.40}."
            )
        self._seed = None if seed is None else int(seed) & _MASK
        self._rerandomize = bool(rerandomize_each_iteration)

    def _words(self, ctx: IterCtx) -> tuple[int, ...]:
        base = (3, self._seed) if self._seed is not None else (4, ctx.root_seed, self._depth)
        return base + ctx.epochs if self._rerandomize else base

    def _iterator(self, ctx: IterCtx) -> DatasetIterator:
        return _RandomIterator(self._words(ctx))

    def _cardinality(self) -> int:
        return INFINITE_CARDINALITY

    def _compute_spec(self) -> Any:
        return TensorSpec((), np.int64)


class _RandomIterator(DatasetIterator):
    def __init__(self, words: tuple[int, ...]):
        self.words = words
        self.k = 0
        self._block: tuple[int, np.ndarray] | None = None

    def __next__(self) -> Any:
        b = self.k // _BLOCK
        if self._block is None or self._block[0] != b:
            gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([*self.words, b])))
            values = gen.integers(
                _INT64.min, _INT64.max, size=_BLOCK, dtype=np.int64, endpoint=True
            )
            self._block = (b, values)
        value = self._block[1][self.k % _BLOCK]
        self.k += 1
        return value

    def get_state(self) -> dict[str, Any]:
        return {"k": self.k}

    def set_state(self, state: dict[str, Any]) -> None:
        self.k = state_int(state, "k", what="random values drawn")
