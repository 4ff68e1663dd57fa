"""A ``phalanx.utils.PyDataset`` as an iterable of passes, for ``IterableAdapter`` (Keras's
``PyDatasetAdapter``): each pass calls ``on_epoch_begin``, reads the batches by index (ahead,
in order, in ``workers`` threads) and calls ``on_epoch_end`` once it has read the last one."""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
from typing import Any

import numpy as np

from ...utils import PyDataset
from ._checks import FitInputError


class PyDatasetPasses:
    """Iterating gives one pass over a ``PyDataset``, its epoch hooks called around it."""

    def __init__(self, dataset: PyDataset, *, shuffle: bool = False, seed: int = 0):
        if dataset.use_multiprocessing:
            raise FitInputError(
                f"{type(dataset).__name__}(use_multiprocessing=True): phalanx reads a "
                "PyDataset's batches in threads, not processes. Pass workers=N (threads) "
                "and use_multiprocessing=False."
            )
        self.dataset = dataset
        self._shuffle = shuffle  # fit's shuffle=True: the batches' order, each pass anew (Keras)
        self._rng = np.random.default_rng(seed % 2**63)

    def __len__(self) -> int:
        n = self.dataset.num_batches
        if n is None:
            raise TypeError("an endless PyDataset has no length")
        return n

    def __iter__(self):
        ds = self.dataset
        n = ds.num_batches
        indices = range(n) if n is not None else itertools.count()
        if self._shuffle and n is not None:
            indices = [int(i) for i in self._rng.permutation(n)]
        ds.on_epoch_begin()
        for k, (_, batch) in enumerate(_read(ds, indices)):
            if n is not None and k == n - 1:
                # the adapter reads no further than the known length: the pass ends here
                ds.on_epoch_end()
            yield _standardize(batch)


def _read(ds: PyDataset, indices):
    """``(i, ds[i])`` for each index, in order; with several workers, up to the queue size ahead."""
    if ds.workers <= 1:
        yield from ((i, ds[i]) for i in indices)
        return
    with concurrent.futures.ThreadPoolExecutor(ds.workers) as pool:
        queue: collections.deque = collections.deque()
        it = iter(indices)
        for i in itertools.islice(it, max(ds.max_queue_size, 1)):
            queue.append((i, pool.submit(ds.__getitem__, i)))
        while queue:
            i, future = queue.popleft()
            batch = future.result()
            nxt = next(it, None)
            if nxt is not None:
                queue.append((nxt, pool.submit(ds.__getitem__, nxt)))
            yield i, batch


def _standardize(batch: Any) -> Any:
    """A bare ``x`` batch as ``(x,)``; lists as tuples (Keras's ``_standardize_batch``)."""
    if isinstance(batch, list):
        return tuple(batch)
    if isinstance(batch, tuple | dict):
        return batch
    return (batch,)
