"""Keras's ``keras.utils.split_dataset``: arrays or a ``Dataset`` into two ``Dataset``s."""

from __future__ import annotations

import random
from typing import Any

import jax
import numpy as np

from ..data import BatchDataset, Dataset
from ..errors import UtilsArgumentError


def split_dataset(
    dataset: Any,
    left_size: int | float | None = None,
    right_size: int | float | None = None,
    shuffle: bool = False,
    seed: int | None = None,
) -> tuple[Dataset, Dataset]:
    """Splits arrays or a small ``Dataset`` into a left and a right ``Dataset``, as Keras.

    The samples are read into memory (Keras's utility is for small in-memory data).
    An int size counts samples, a float is a fraction (rounded); the size left out
    is the rest. The left part is the first ``left_size`` samples, the right part
    the last ``right_size`` (samples between them, when both sizes are given and
    sum to less than the whole, are in neither). ``shuffle`` permutes the samples
    first with ``random.Random(seed)``: the same permutation as Keras's
    ``random.seed(seed); random.shuffle(...)``, without reseeding Python's global
    ``random`` as Keras does. A batched ``Dataset`` (one whose last step is
    ``batch``) is split by samples and both parts batched again by its batch size.

    Args:
      dataset: a numpy array, a tuple or list of numpy arrays of one length, or a
        ``phalanx.data.Dataset``.
      left_size: the left part's size (int: samples; float in (0, 1): fraction).
      right_size: the right part's size, the same way.
      shuffle: shuffle the samples before splitting.
      seed: the shuffle's seed; default drawn from Python's ``random``.

    Returns:
      ``(left, right)``, two ``phalanx.data.Dataset``s of the samples' structure.

    Raises:
      UtilsArgumentError: a ``dataset`` of another type or an empty one, arrays of
        different lengths, no size given, or sizes out of range (a ``ValueError``,
        a ``TypeError`` for the wrong types, as Keras).

    Examples:
      >>> left, right = split_dataset(np.arange(10), left_size=0.8)
      >>> int(left.cardinality()), int(right.cardinality())
      (8, 2)
    """
    samples = _samples(dataset)
    if right_size is None and left_size is None:
        raise UtilsArgumentError(
            "At least one of the `left_size` or `right_size` must be specified. Received: "
            "left_size=None and right_size=None"
        )
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        random.Random(seed).shuffle(samples)
    left_size, right_size = _split_sizes(left_size, right_size, len(samples))
    left = Dataset.from_tensor_slices(_stacked(samples[:left_size], dataset))
    right = Dataset.from_tensor_slices(_stacked(samples[-right_size:], dataset))
    if isinstance(dataset, BatchDataset):
        left, right = left.batch(dataset.batch_size), right.batch(dataset.batch_size)
    return left, right


def _samples(dataset: Any) -> list[Any]:
    """The samples of ``dataset`` as a list (Keras's ``_convert_dataset_to_list``)."""
    if isinstance(dataset, tuple | list):
        _check_arrays(dataset)
        samples = list(zip(*dataset, strict=True))
    elif isinstance(dataset, np.ndarray):
        samples = list(dataset)
    elif isinstance(dataset, Dataset):
        if isinstance(dataset, BatchDataset):
            dataset = dataset.unbatch()
        samples = list(dataset.as_numpy_iterator())
    else:
        raise UtilsArgumentError(
            f"Unsupported dataset type: {type(dataset)}. split_dataset takes a numpy array, a "
            "list/tuple of numpy arrays of one length, or a phalanx.data.Dataset."
        )
    if not samples:
        raise UtilsArgumentError(
            "Received an empty dataset. Argument `dataset` must be a non-empty list/tuple of "
            "`numpy.ndarray` objects or `phalanx.data.Dataset` objects."
        )
    if isinstance(samples[0], np.ndarray):
        for i, sample in enumerate(samples[1:]):
            if np.shape(sample) != samples[0].shape:
                raise UtilsArgumentError(
                    f"All `dataset` samples must have same shape, Expected shape: "
                    f"{samples[0].shape} Received shape: {np.shape(sample)} at index {i}. "
                    "Pad or crop them to one shape first (e.g. pad_sequences)."
                )
    return samples


def _check_arrays(dataset: tuple | list) -> None:
    """Keras's checks of a tuple or list dataset: numpy arrays, one length."""
    kind = type(dataset).__name__
    if not len(dataset):
        raise UtilsArgumentError(
            f"Received an empty {kind} dataset. Please provide a non-empty {kind} of arrays."
        )
    for i, element in enumerate(dataset):
        if not isinstance(element, np.ndarray):
            raise UtilsArgumentError(
                f"Expected a {kind} of `numpy.ndarray` objects, Received: {type(element)} "
                f"at index {i}."
            )
        if element.shape[0] != dataset[0].shape[0]:
            raise UtilsArgumentError(
                f"Received a {kind} of NumPy arrays with different lengths. Mismatch "
                f"found at index {i}, Expected shape={dataset[0].shape} Received "
                f"shape={element.shape}. Please provide a {kind} of NumPy arrays of the "
                "same length."
            )


def _stacked(samples: list[Any], dataset: Any) -> Any:
    """The samples stacked component by component, in the first sample's structure."""
    if isinstance(dataset, np.ndarray):
        return np.stack(samples)
    leaves = [jax.tree.leaves(sample) for sample in samples]
    treedef = jax.tree.structure(samples[0])
    return jax.tree.unflatten(treedef, [np.array(column) for column in zip(*leaves, strict=True)])


def _split_sizes(left_size: Any, right_size: Any, total_length: int) -> tuple[int, int]:
    """Keras's ``_rescale_dataset_split_sizes``: the two sizes as sample counts."""
    _check_sizes(left_size, right_size, total_length)
    left = round(left_size * total_length) if type(left_size) is float else _as_float(left_size)
    right = round(right_size * total_length) if type(right_size) is float else _as_float(right_size)
    left = total_length - right if left is None else left
    right = total_length - left if right is None else right
    if left + right > total_length:
        raise UtilsArgumentError(
            f"The sum of `left_size` and `right_size` should be smaller than the {total_length}. "
            f"Received: left_size + right_size = {left + right} and total_length = {total_length}"
        )
    for split, side in ((left, "left"), (right, "right")):
        if split == 0:
            raise UtilsArgumentError(
                f"With `dataset` of length={total_length}, `left_size`={left} and "
                f"`right_size`={right}. Resulting {side} side dataset split will be empty. "
                "Adjust any of the aforementioned parameters"
            )
    return int(left), int(right)


def _check_sizes(left_size: Any, right_size: Any, total_length: int) -> None:
    """Keras's checks of the sizes' types and ranges, in its order."""
    left_type, right_type = type(left_size), type(right_size)
    left_bad = left_size is not None and left_type not in (int, float)
    right_bad = right_size is not None and right_type not in (int, float)
    if left_bad and right_bad:
        raise UtilsArgumentError(
            "Invalid `left_size` and `right_size` Types. Expected: integer or float or None, "
            f"Received: type(left_size)={left_type} and type(right_size)={right_type}"
        )
    for name, bad, kind in (
        ("left_size", left_bad, left_type),
        ("right_size", right_bad, right_type),
    ):
        if bad:
            raise UtilsArgumentError(
                f"Invalid `{name}` Type. Expected: int or float or None, Received: "
                f"type({name})={kind}."
            )
    if left_size == 0 and right_size == 0:
        raise UtilsArgumentError(
            "Both `left_size` and `right_size` are zero. At least one of the split sizes must "
            "be non-zero."
        )
    for name, size, kind in (
        ("left_size", left_size, left_type),
        ("right_size", right_size, right_type),
    ):
        if (kind is int and (size <= 0 or size >= total_length)) or (
            kind is float and (size <= 0 or size >= 1)
        ):
            raise UtilsArgumentError(
                f"`{name}` should be either a positive integer smaller than {total_length}, "
                f"or a float within the range `[0, 1]`. Received: {name}={size}"
            )
    if right_type is left_type is float and right_size + left_size > 1:
        raise UtilsArgumentError(
            "The sum of `left_size` and `right_size` is greater than 1. It must be less than "
            "or equal to 1."
        )


def _as_float(size: int | None) -> float | None:
    """An int size as Keras holds it until the end (its messages print ``8.0``)."""
    return None if size is None else float(size)
