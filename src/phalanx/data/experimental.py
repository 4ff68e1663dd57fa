"""``tf.data.experimental``'s names, for programs that spell them that way.

TensorFlow moved these to ``tf.data`` itself; programs written for older
releases (``dataset.prefetch(tf.data.experimental.AUTOTUNE)``) still say
``experimental``, so they port with the one rename ``tf`` -> ``phalanx``. Each
name here is the same object as in `phalanx.data`.

Examples:
  >>> import phalanx
  >>> phalanx.data.experimental.AUTOTUNE == phalanx.data.AUTOTUNE
  True
"""

from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError
from ..io import TFRecordWriter as _FileWriter
from ._choose import choose_from_datasets as choose
from ._choose import sample_from_datasets as sample
from ._csv import CsvDataset as CsvDataset
from ._csv import make_csv_dataset as make_csv_dataset
from ._dataset import Dataset
from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import AutotuneOptions as AutotuneOptions
from ._options import DistributeOptions as DistributeOptions
from ._options import OptimizationOptions as OptimizationOptions
from ._options import ThreadingOptions as ThreadingOptions
from ._readers import make_tf_record_dataset as make_tf_record_dataset
from ._readers import parse_example_dataset as parse_example_dataset
from ._shard import SHARD_HINT as SHARD_HINT
from ._to_device import copy_to_device as copy_to_device
from ._to_device import prefetch_to_device as prefetch_to_device


def cardinality(dataset: Any) -> int:
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality(dataset)``).

    Returns:
      The number of elements, ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2).

    Raises:
      DatasetTypeError: ``dataset`` is not a ``phalanx.data.Dataset``.

    Examples:
      >>> import phalanx
      >>> cardinality(phalanx.data.Dataset.range(10).batch(4))
      3
    """
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
    return choose(datasets, choice_dataset, stop_on_empty_dataset)


def sample_from_datasets(
    datasets: Any,
    weights: Any = None,
    seed: int | None = None,
    stop_on_empty_dataset: bool = False,
) -> Any:
    """``tf.data.experimental.sample_from_datasets``: ``Dataset.sample_from_datasets``."""
    return sample(datasets, weights, seed, stop_on_empty_dataset)


def _transformation(name: str, apply: Any) -> Any:
    """A function ``Dataset -> Dataset`` for ``ds.apply``, refusing anything else."""

    def _apply(dataset: Any) -> Any:
        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"{name}(...) transforms a phalanx.data.Dataset, got {type(dataset).__name__}; "
                f"use it as ds.apply(phalanx.data.experimental.{name}(...))."
            )
        return apply(dataset)

    return _apply


def map_and_batch(
    map_func: Any,
    batch_size: int,
    num_parallel_batches: int | None = None,
    drop_remainder: bool = False,
    num_parallel_calls: int | None = None,
) -> Any:
    """``ds.apply(map_and_batch(f, n))``: ``ds.map(f).batch(n)``, as TensorFlow's fused op.

    Examples:
      >>> import phalanx
      >>> ds = phalanx.data.Dataset.range(6).apply(map_and_batch(lambda x: x * 2, 4))
      >>> [b.tolist() for b in ds]
      [[0, 2, 4, 6], [8, 10]]
    """
    calls = num_parallel_calls if num_parallel_calls is not None else num_parallel_batches
    return _transformation(
        "map_and_batch",
        lambda ds: ds.map(map_func, num_parallel_calls=calls).batch(
            batch_size, drop_remainder=drop_remainder
        ),
    )


def dense_to_ragged_batch(
    batch_size: int, drop_remainder: bool = False, row_splits_dtype: Any = "int64"
) -> Any:
    """``ds.apply(dense_to_ragged_batch(n))``: ``ds.ragged_batch(n, ...)``, as TensorFlow."""
    return _transformation(
        "dense_to_ragged_batch",
        lambda ds: ds.ragged_batch(batch_size, drop_remainder, row_splits_dtype),
    )


def dense_to_sparse_batch(batch_size: int, row_shape: Any) -> Any:
    """``ds.apply(dense_to_sparse_batch(n, row_shape))``: ``ds.sparse_batch(n, row_shape)``."""
    return _transformation(
        "dense_to_sparse_batch", lambda ds: ds.sparse_batch(batch_size, row_shape)
    )


def shuffle_and_repeat(buffer_size: int, count: int | None = None, seed: int | None = None) -> Any:
    """``ds.shuffle(buffer_size, seed, reshuffle_each_iteration=True).repeat(count)``."""
    return _transformation(
        "shuffle_and_repeat",
        lambda ds: ds.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True).repeat(count),
    )


def parallel_interleave(
    map_func: Any,
    cycle_length: int,
    block_length: int = 1,
    sloppy: bool | None = False,
    buffer_output_elements: int | None = None,
    prefetch_input_elements: int | None = None,
) -> Any:
    """``ds.interleave(map_func, cycle_length, block_length)`` read in parallel; the order is
    ``interleave``'s unless ``sloppy=True`` (then any order, as TensorFlow)."""
    return _transformation(
        "parallel_interleave",
        lambda ds: ds.interleave(
            map_func,
            cycle_length=cycle_length,
            block_length=block_length,
            num_parallel_calls=cycle_length,
            deterministic=not sloppy,
        ),
    )


def enumerate_dataset(start: int = 0) -> Any:
    """``ds.enumerate(start)``."""
    return _transformation("enumerate_dataset", lambda ds: ds.enumerate(start))


def rejection_resample(
    class_func: Any, target_dist: Any, initial_dist: Any = None, seed: int | None = None
) -> Any:
    """``ds.rejection_resample(class_func, target_dist, initial_dist, seed)``."""
    return _transformation(
        "rejection_resample",
        lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed),
    )


def scan(initial_state: Any, scan_func: Any) -> Any:
    """``ds.scan(initial_state, scan_func)``."""
    return _transformation("scan", lambda ds: ds.scan(initial_state, scan_func))


def take_while(predicate: Any) -> Any:
    """``ds.take_while(predicate)``."""
    return _transformation("take_while", lambda ds: ds.take_while(predicate))


def unbatch() -> Any:
    """``ds.unbatch()``."""
    return _transformation("unbatch", lambda ds: ds.unbatch())


def assert_cardinality(expected_cardinality: int) -> Any:
    """``ds.assert_cardinality(expected_cardinality)``."""
    return _transformation(
        "assert_cardinality", lambda ds: ds.assert_cardinality(expected_cardinality)
    )


def group_by_window(
    key_func: Any, reduce_func: Any, window_size: int | None = None, window_size_func: Any = None
) -> Any:
    """``ds.group_by_window(key_func, reduce_func, window_size, window_size_func)``."""
    return _transformation(
        "group_by_window",
        lambda ds: ds.group_by_window(key_func, reduce_func, window_size, window_size_func),
    )


def bucket_by_sequence_length(
    element_length_func: Any,
    bucket_boundaries: Any,
    bucket_batch_sizes: Any,
    padded_shapes: Any = None,
    padding_values: Any = None,
    pad_to_bucket_boundary: bool = False,
    no_padding: bool = False,
    drop_remainder: bool = False,
) -> Any:
    """``ds.bucket_by_sequence_length(...)``, the same arguments."""
    return _transformation(
        "bucket_by_sequence_length",
        lambda ds: ds.bucket_by_sequence_length(
            element_length_func,
            bucket_boundaries,
            bucket_batch_sizes,
            padded_shapes,
            padding_values,
            pad_to_bucket_boundary,
            no_padding,
            drop_remainder,
        ),
    )


def get_single_element(dataset: Any) -> Any:
    """``dataset.get_single_element()``."""
    if not isinstance(dataset, Dataset):
        raise DatasetTypeError(
            f"get_single_element expects a phalanx.data.Dataset, got {type(dataset).__name__}."
        )
    return dataset.get_single_element()


class TFRecordWriter:
    """Writes a dataset of serialized records to a TFRecord file
    (``tf.data.experimental.TFRecordWriter(filename).write(dataset)``).

    Args:
      filename: the file to create (a local path or a URL).
      compression_type: ``None``/``""``, ``"GZIP"`` or ``"ZLIB"``.

    Examples:
      >>> import os, tempfile, phalanx
      >>> path = os.path.join(tempfile.mkdtemp(), "x.tfrecord")
      >>> records = phalanx.data.Dataset.from_tensor_slices([b"a", b"bc"])
      >>> TFRecordWriter(path).write(records)
      >>> [bytes(r) for r in phalanx.data.TFRecordDataset(path).as_numpy_iterator()]
      [b'a', b'bc']
    """

    def __init__(self, filename: Any, compression_type: str | None = None):
        self._filename = filename
        self._compression = compression_type

    def write(self, dataset: Any) -> None:
        """Writes every element of ``dataset`` (scalar bytes) as one record, in order.

        Raises:
          DatasetTypeError: ``dataset`` is not a dataset of scalar strings.
        """
        spec = dataset.element_spec if isinstance(dataset, Dataset) else None
        kind = getattr(getattr(spec, "dtype", None), "kind", None)
        if kind not in ("S", "O") or getattr(spec, "shape", None) != ():
            raise DatasetTypeError(
                "Invalid `dataset`. Expected a `dataset` that produces scalar string elements "
                f"(serialized records), got {spec!r}. Map the elements to bytes first, e.g. "
                "ds.map(lambda x: phalanx.data.serialize_example({'x': x}))."
            )
        with _FileWriter(self._filename, self._compression) as writer:
            for record in dataset.as_numpy_iterator():
                writer.write(record.item() if isinstance(record, np.ndarray) else bytes(record))


def ignore_errors(log_warning: bool = False) -> Any:
    """``tf.data.experimental.ignore_errors()``: ``ds.apply`` of it is ``ds.ignore_errors(...)``.

    Returns:
      A function ``Dataset -> Dataset``.
    """
    return _transformation("ignore_errors", lambda ds: ds.ignore_errors(log_warning))


def unique() -> Any:
    """``tf.data.experimental.unique()``: the transformation ``ds.apply`` takes for ``ds.unique()``.

    Returns:
      A function ``Dataset -> Dataset``.

    Examples:
      >>> import numpy as np, phalanx
      >>> ds = phalanx.data.Dataset.from_tensor_slices(np.array([3, 1, 3]))
      >>> [int(x) for x in ds.apply(unique())]
      [3, 1]
    """

    def _apply(dataset: Any) -> Any:
        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"unique() transforms a phalanx.data.Dataset, got {type(dataset).__name__}; "
                "use it as ds.apply(phalanx.data.experimental.unique())."
            )
        return dataset.unique()

    return _apply


def snapshot(
    path: Any,
    compression: str | None = "AUTO",
    reader_func: Any = None,
    shard_func: Any = None,
) -> Any:
    """``tf.data.experimental.snapshot``: the transformation ``ds.apply`` takes for ``ds.snapshot``.

    Args:
      path: The snapshot's folder (local or a URL), as `Dataset.snapshot`.
      compression: ``"AUTO"``, ``"GZIP"``, ``"SNAPPY"`` or ``None``, as `Dataset.snapshot`.
      reader_func: Reads the shards back, as `Dataset.snapshot`.
      shard_func: Picks each element's shard, as `Dataset.snapshot`.

    Returns:
      A function ``Dataset -> Dataset``.
    """
    return _transformation(
        "snapshot", lambda ds: ds.snapshot(path, compression, reader_func, shard_func)
    )


def save(
    dataset: Any,
    path: Any,
    compression: str | None = None,
    shard_func: Any = None,
    checkpoint_args: Any = None,
) -> None:
    """``tf.data.experimental.save(dataset, path, ...)``: `Dataset.save`.

    Args:
      dataset: The `Dataset` to write.
      path: The folder to write (local or a URL).
      compression: ``None`` or ``"GZIP"``, as `Dataset.save`.
      shard_func: Picks each element's shard, as `Dataset.save`.
      checkpoint_args: As `Dataset.save`.

    Raises:
      DatasetTypeError: ``dataset`` is not a ``phalanx.data.Dataset``.
    """
    if not isinstance(dataset, Dataset):
        raise DatasetTypeError(
            f"save expects a phalanx.data.Dataset, got {type(dataset).__name__}."
        )
    dataset.save(path, compression, shard_func, checkpoint_args)


def load(
    path: Any, element_spec: Any = None, compression: str | None = None, reader_func: Any = None
) -> Dataset:
    """``tf.data.experimental.load(path, ...)``: `Dataset.load`.

    Args:
      path: A folder written by `save`.
      element_spec: The elements' spec, or None to read it from the folder.
      compression: As when saved.
      reader_func: Reads the shards back, as `Dataset.load`.

    Returns:
      The saved dataset.
    """
    return Dataset.load(path, element_spec, compression, reader_func)


def Counter(start: int = 0, step: int = 1, dtype: Any = "int64") -> Dataset:
    """``tf.data.experimental.Counter``: `Dataset.counter` (``start``, ``start + step``, ...).

    Args:
      start: The first value.
      step: The increment.
      dtype: The elements' dtype.

    Returns:
      An infinite `Dataset`.

    Examples:
      >>> [int(x) for x in Counter(2, 3).take(3)]
      [2, 5, 8]
    """
    return Dataset.counter(start, step, dtype)


def RandomDataset(seed: int | None = None) -> Dataset:
    """``tf.data.experimental.RandomDataset(seed)``: `Dataset.random`.

    Args:
      seed: The seed, or None for a fresh one.

    Returns:
      An infinite `Dataset` of random int64 scalars.
    """
    return Dataset.random(seed)


def at(dataset: Any, index: int) -> Any:
    """``tf.data.experimental.at(dataset, index)``: the element at ``index``.

    Args:
      dataset: A finite `Dataset`.
      index: An int in ``[0, cardinality)``.

    Returns:
      The element, as iterating the dataset yields it.

    Raises:
      DatasetTypeError: ``dataset`` is not a ``phalanx.data.Dataset``.
      DatasetArgumentError: ``index`` is not an int, is negative or is past the end
        (TensorFlow: ``OutOfRangeError``).

    Examples:
      >>> import phalanx
      >>> int(at(phalanx.data.Dataset.range(10, 20), 3))
      13
    """
    if not isinstance(dataset, Dataset):
        raise DatasetTypeError(f"at expects a phalanx.data.Dataset, got {type(dataset).__name__}.")
    if isinstance(index, bool) or not isinstance(index, int | np.integer) or index < 0:
        raise DatasetArgumentError(f"at: index must be an int >= 0, got {index!r:.60}.")
    for element in dataset.skip(int(index)).take(1):
        return element
    raise DatasetArgumentError(
        f"at: index {index} is out of range: the dataset has fewer than {int(index) + 1} "
        f"elements (cardinality {dataset.cardinality()})."
    )


__all__ = [
    "AUTOTUNE",
    "Counter",
    "CsvDataset",
    "RandomDataset",
    "TFRecordWriter",
    "INFINITE_CARDINALITY",
    "SHARD_HINT",
    "UNKNOWN_CARDINALITY",
    "AutoShardPolicy",
    "AutotuneOptions",
    "DistributeOptions",
    "OptimizationOptions",
    "ThreadingOptions",
    "assert_cardinality",
    "at",
    "bucket_by_sequence_length",
    "cardinality",
    "choose_from_datasets",
    "copy_to_device",
    "dense_to_ragged_batch",
    "dense_to_sparse_batch",
    "enumerate_dataset",
    "get_single_element",
    "group_by_window",
    "ignore_errors",
    "load",
    "make_csv_dataset",
    "make_tf_record_dataset",
    "map_and_batch",
    "parallel_interleave",
    "parse_example_dataset",
    "prefetch_to_device",
    "rejection_resample",
    "sample_from_datasets",
    "save",
    "scan",
    "shuffle_and_repeat",
    "snapshot",
    "take_while",
    "unbatch",
    "unique",
]
