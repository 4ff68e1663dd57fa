"""Keras's ``keras.utils.timeseries_dataset_from_array``: sliding windows as a ``Dataset``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data import Dataset
from ..errors import UtilsArgumentError


def timeseries_dataset_from_array(
    data: Any,
    targets: Any,
    sequence_length: int,
    sequence_stride: int = 1,
    sampling_rate: int = 1,
    batch_size: int | None = 128,
    shuffle: bool = False,
    seed: int | None = None,
    start_index: int | None = None,
    end_index: int | None = None,
) -> Dataset:
    """Sliding windows over ``data`` (with their targets) as a ``Dataset``, as Keras's.

    Window ``i`` starts at row ``start_index + p`` for ``p = i * sequence_stride`` and
    holds ``sequence_length`` rows ``sampling_rate`` apart; its target is
    ``targets[start_index + p]``. Windows that would read past ``end_index`` are left
    out, as are those past ``len(targets)``. ``shuffle`` permutes the windows' starts
    with ``np.random.RandomState(seed)`` as Keras does, then shuffles the windows
    again with a buffer of ``batch_size * 8`` (1024 without batching), fresh each
    epoch, as Keras's ``tf.data`` shuffle (the order of that second shuffle is
    phalanx's, not TensorFlow's).

    Args:
      data: an array (or anything ``np.asarray`` takes) of rows, the time axis first.
      targets: the targets, aligned with ``data``'s rows; None for windows alone.
      sequence_length: the number of rows in a window.
      sequence_stride: the step between consecutive windows' starts.
      sampling_rate: the step between the rows of a window.
      batch_size: windows per batch (the last may be smaller); None for single windows.
      shuffle: shuffle the windows.
      seed: the seed of the shuffles; default drawn from numpy's global generator.
      start_index: the first row used; default 0.
      end_index: the row after the last one used; default ``len(data)``.

    Returns:
      A ``phalanx.data.Dataset`` of ``(windows, targets)`` batches (or of windows
      when ``targets`` is None), windows of shape
      ``(batch, sequence_length) + data.shape[1:]``.

    Raises:
      UtilsArgumentError: an index, stride or rate out of range (Keras's
        ``ValueError``s, with its messages).

    Examples:
      >>> ds = timeseries_dataset_from_array(np.arange(10), None, 3, batch_size=4)
      >>> [batch.tolist() for batch in ds.as_numpy_iterator()][0]
      [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]
    """
    _check_arguments(len(data), sequence_stride, sampling_rate, start_index, end_index)
    start_index = start_index or 0
    end_index = len(data) if end_index is None else end_index
    num_seqs = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    index_dtype = "int32" if num_seqs < 2147483647 else "int64"
    starts = np.arange(0, num_seqs, sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    offsets = np.arange(0, sequence_length * sampling_rate, sampling_rate, dtype=index_dtype)
    windows = _Windows(
        np.asarray(data[start_index:end_index]),
        None if targets is None else np.asarray(targets[start_index:end_index]),
        offsets,
    )
    dataset = Dataset.from_tensor_slices(starts)
    if shuffle:
        dataset = dataset.shuffle(1024 if batch_size is None else batch_size * 8, seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    return dataset.map(windows)


class _Windows:
    """The windows (and targets) that start at the given positions: one numpy gather."""

    def __init__(self, data: np.ndarray, targets: np.ndarray | None, offsets: np.ndarray):
        self._data, self._targets, self._offsets = data, targets, offsets

    def __call__(self, starts: np.ndarray) -> Any:
        starts = np.asarray(starts)
        windows = self._data[starts[..., None] + self._offsets]
        return windows if self._targets is None else (windows, self._targets[starts])


def _check_arguments(
    length: int,
    sequence_stride: int,
    sampling_rate: int,
    start_index: int | None,
    end_index: int | None,
) -> None:
    """Keras's argument checks, in its order (``length``: ``len(data)``)."""
    if start_index:
        if start_index < 0:
            _refuse(f"`start_index` must be 0 or greater. Received: start_index={start_index}")
        if start_index >= length:
            _refuse(
                "`start_index` must be lower than the length of the data. Received: "
                f"start_index={start_index}, for data of length {length}"
            )
    if end_index:
        if start_index and end_index <= start_index:
            _refuse(
                "`end_index` must be higher than `start_index`. Received: "
                f"start_index={start_index}, and end_index={end_index}"
            )
        if end_index >= length:
            _refuse(
                "`end_index` must be lower than the length of the data. Received: "
                f"end_index={end_index}, for data of length {length}"
            )
        if end_index <= 0:
            _refuse(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            _refuse(f"`{name}` must be higher than 0. Received: {name}={value}")
        if value >= length:
            _refuse(
                f"`{name}` must be lower than the length of the data. Received: "
                f"{name}={value}, for data of length {length}"
            )


def _refuse(message: str) -> None:
    raise UtilsArgumentError(f"timeseries_dataset_from_array: {message}")
