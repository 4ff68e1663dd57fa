"""Keras 3's ``keras.utils.PyDataset``: a dataset of batches read by index."""

from __future__ import annotations

import itertools
import warnings
from typing import Any


class PyDataset:
    """Keras 3's ``keras.utils.PyDataset``: batches by index, for ``fit``/``evaluate``/``predict``.

    Subclass it: ``__getitem__(index)`` returns one whole batch (``x``, ``(x,)``,
    ``(x, y)`` or ``(x, y, sample_weight)``), ``__len__`` (or the
    ``num_batches`` property; ``None`` for an endless one) the number of
    batches. ``on_epoch_begin``/``on_epoch_end`` are called around each pass
    ``fit`` reads, as Keras (shuffle there).

    Args:
      workers: threads that read batches ahead (in order), as Keras's.
      use_multiprocessing: Keras's process pool; phalanx refuses ``True`` when it reads
        the batches (threads only: ``workers=N``).
      max_queue_size: how many batches the workers read ahead.

    Examples:
      >>> import numpy as np
      >>> class Squares(PyDataset):
      ...     def __len__(self):
      ...         return 3
      ...     def __getitem__(self, index):
      ...         x = np.full((4, 1), index, np.float32)
      ...         return x, x**2
      >>> Squares().num_batches
      3
    """

    def __init__(
        self, workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10
    ):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    def _setting(self, name: str, default: Any) -> Any:
        if not hasattr(self, name):  # a subclass that did not call super().__init__()
            warnings.warn(
                "Your `PyDataset` class should call `super().__init__(**kwargs)` in its "
                "constructor. `**kwargs` can include `workers`, `use_multiprocessing`, "
                "`max_queue_size`. Do not pass these arguments to `fit()`, as they will be "
                "ignored.",
                stacklevel=3,
            )
            setattr(self, name, default)
        return getattr(self, name)

    @property
    def workers(self) -> int:
        """Threads that read batches ahead."""
        return self._setting("_workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        """Keras's process pool (refused by phalanx's ``fit``)."""
        return self._setting("_use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        """How many batches the workers read ahead."""
        return self._setting("_max_queue_size", 10)

    def __getitem__(self, index: int) -> Any:
        """Returns the batch at ``index``."""
        del index
        raise NotImplementedError

    def __iter__(self):
        """Yields the batches in order (no epoch hooks: ``fit`` calls those), as Keras."""
        num_batches = self.num_batches
        indices = range(num_batches) if num_batches is not None else itertools.count()
        for index in indices:
            yield self[index]

    @property
    def num_batches(self) -> int | None:
        """The number of batches (``len(self)``), or None for an endless dataset."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError(
            "You need to implement the `num_batches` property:\n\n"
            "@property\ndef num_batches(self):\n  return ..."
        )

    def on_epoch_begin(self) -> None:
        """Called at the beginning of every epoch."""

    def on_epoch_end(self) -> None:
        """Called at the end of every epoch."""
