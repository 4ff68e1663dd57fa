"""``tf.data.experimental``'s names that the seeds' programs spell that way.

TensorFlow moved these to ``tf.data`` itself; programs written for older
releases (``dataset.prefetch(tf.data.experimental.AUTOTUNE)``) still say
``experimental``, so they port with the one rename ``tf`` -> ``phalanx``. Each
name here is the same object as in :mod:`phalanx.data`.

Example:
  >>> import phalanx
  >>> phalanx.data.experimental.AUTOTUNE == phalanx.data.AUTOTUNE
  True
"""

from typing import Any

from ..errors import DatasetTypeError
from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import DistributeOptions as DistributeOptions


def cardinality(dataset: Any) -> int:
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality(dataset)``).

    Returns:
      The number of elements, ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2).

    Raises:
      DatasetTypeError: ``dataset`` is not a ``phalanx.data.Dataset``.

    Example:
      >>> import phalanx
      >>> cardinality(phalanx.data.Dataset.range(10).batch(4))
      3
    """
    from ._dataset import Dataset

    if not isinstance(dataset, Dataset):
        raise DatasetTypeError(
            f"cardinality expects a phalanx.data.Dataset, got {type(dataset).__name__}."
        )
    return dataset.cardinality()


def choose_from_datasets(
    datasets: Any, choice_dataset: Any, stop_on_empty_dataset: bool = False
) -> Any:
    """``tf.data.experimental.choose_from_datasets``: ``Dataset.choose_from_datasets``, with
    that function's default ``stop_on_empty_dataset=False`` (the method's is True)."""
    from ._choose import choose_from_datasets as choose

    return choose(datasets, choice_dataset, stop_on_empty_dataset)


def sample_from_datasets(
    datasets: Any,
    weights: Any = None,
    seed: int | None = None,
    stop_on_empty_dataset: bool = False,
) -> Any:
    """``tf.data.experimental.sample_from_datasets``: ``Dataset.sample_from_datasets``."""
    from ._choose import sample_from_datasets as sample

    return sample(datasets, weights, seed, stop_on_empty_dataset)


def unique() -> Any:
    """``tf.data.experimental.unique()``: the transformation ``ds.apply`` takes for ``ds.unique()``.

    Returns:
      A function ``Dataset -> Dataset``.

    Example:
      >>> import numpy as np, phalanx
      >>> ds = phalanx.data.Dataset.from_tensor_slices(np.array([3, 1, 3]))
      >>> [int(x) for x in ds.apply(unique())]
      [3, 1]
    """

    def _apply(dataset: Any) -> Any:
        from ._dataset import Dataset

        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"unique() transforms a phalanx.data.Dataset, got {type(dataset).__name__}; "
                "use it as ds.apply(phalanx.data.experimental.unique())."
            )
        return dataset.unique()

    return _apply


__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "AutoShardPolicy",
    "DistributeOptions",
    "cardinality",
    "choose_from_datasets",
    "sample_from_datasets",
    "unique",
]
