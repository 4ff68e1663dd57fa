"""Keras's ``keras.utils`` helpers: ``set_random_seed``, ``to_categorical``, ``PyDataset``."""

from __future__ import annotations

import itertools
import random
import warnings
from typing import Any

import numpy as np

from . import _random
from .errors import LabelOutOfRangeError, RandomSeedError

__all__ = ["PyDataset", "set_random_seed", "to_categorical"]


def set_random_seed(seed: int) -> None:
    """Seeds Python's ``random``, numpy's global generator and phalanx (Keras's ``set_random_seed``).

    After it, a script run twice gives the same weights, dropout masks, shuffles
    and history. phalanx's own defaults are then drawn from one stream derived
    from ``seed``, in the order the script asks for them: the initial weights of
    a model built without a seed, ``compile``'s seed (dropout keys and ``fit``'s
    shuffling) when none is given, and the root seed of each ``Dataset``'s
    unseeded shuffles. Two models built one after the other differ, as in Keras.
    Seeds given explicitly are used as they are. Without a call, models build
    from seed 0 and unseeded dataset shuffles are fresh each run.

    Args:
      seed: an int in ``[0, 2**32)`` (numpy's range).

    Raises:
      RandomSeedError: ``seed`` is not an int in that range.

    An example, not run as a doctest (it would seed the rest of the test process):

        phalanx.utils.set_random_seed(0)
        model = build_model()  # the same initial weights in every run
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RandomSeedError(
            f"set_random_seed expects an int, got {type(seed).__name__} {seed!r} (Keras 3 "
            "refuses it too). Pass e.g. set_random_seed(42)."
        )
    if not 0 <= seed < 2**32:
        raise RandomSeedError(
            f"set_random_seed expects an int in [0, 2**32) (numpy's seed range), got {seed}. "
            "Pass seed % 2**32."
        )
    random.seed(int(seed))
    np.random.seed(int(seed))
    _random.set_global_seed(int(seed))


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """Converts integer class labels to one-hot rows (Keras's ``to_categorical``).

    Args:
      y: integer labels, any shape; a trailing axis of size 1 is dropped, as Keras does.
      num_classes: the number of classes; default ``max(y) + 1``.
      dtype: the dtype of the result.

    Returns:
      A numpy array of shape ``y.shape + (num_classes,)``.

    Raises:
      LabelOutOfRangeError: a label is not a class index (negative, not below
        ``num_classes``, not a whole number, not a number), or ``num_classes`` is
        not a positive int (a ``ValueError``).

    Examples:
      >>> to_categorical([0, 2], 3)
      array([[1., 0., 0.],
             [0., 0., 1.]], dtype=float32)
    """
    if num_classes is not None and (
        isinstance(num_classes, bool)
        or not isinstance(num_classes, int | np.integer)
        or num_classes < 1
    ):
        raise LabelOutOfRangeError(
            f"to_categorical's num_classes must be a positive int (the number of classes), got "
            f"{type(num_classes).__name__} {num_classes!r}; or leave it out for max(y) + 1."
        )
    labels = _class_indices(y)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    bad = labels[(labels < 0) | (labels >= num_classes)]
    if bad.size:
        raise LabelOutOfRangeError(
            f"to_categorical got label {int(bad.flat[0])} outside [0, {num_classes}) "
            f"(num_classes={num_classes}): labels must be class indices; pass num_classes="
            "the number of classes, or remap the labels."
        )
    return np.eye(num_classes, dtype=dtype)[labels]


def _class_indices(y) -> np.ndarray:
    """``y`` as int64 class indices; labels that are not whole numbers raise (Keras truncates)."""
    values = np.asarray(y)
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        whole = np.isfinite(values) & (values == np.round(values))
        if whole.all():
            return values.astype(np.int64)
        first = values[~whole].flat[0]
        raise LabelOutOfRangeError(
            f"to_categorical got label {float(first):g}, which is not a class index (a whole "
            "number): labels are integers 0..num_classes-1; round or cast them "
            "(y.astype(np.int32)) on purpose. Soft targets need no to_categorical: give them "
            "to categorical_crossentropy as they are."
        )
    example = f" (e.g. {values.flat[0].item()!r})" if values.size else ""
    raise LabelOutOfRangeError(
        f"to_categorical takes integer class labels, got an array of dtype {values.dtype}"
        f"{example}. Map names to indices first: np.unique(y, return_inverse=True)[1]."
    )


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
