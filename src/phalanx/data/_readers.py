"""``make_tf_record_dataset`` and ``parse_example_dataset`` (``tf.data.experimental``'s readers).

Both are compositions of phalanx's own transformations, in TensorFlow's order
and with its defaults (``tensorflow/python/data/experimental/ops/readers.py``
and ``parsing_ops.py``, TF 2.21); ``parse_example_dataset`` also states the
element spec as TF does (the batch dimension of its input, ``None`` where a
feature's length varies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import DatasetTypeError
from ..io import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    RaggedTensorSpec,
    SparseFeature,
    SparseTensorSpec,
    UniformRowLength,
    VarLenFeature,
    parse_example,
)
from . import _structure as st
from ._map import MapDataset
from ._options import AUTOTUNE

__all__ = ["make_tf_record_dataset", "parse_example_dataset"]

_FEATURES = (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, SparseFeature, RaggedFeature)


def make_tf_record_dataset(
    file_pattern: Any,
    batch_size: int,
    parser_fn: Callable[[Any], Any] | None = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    shuffle_buffer_size: int | None = None,
    shuffle_seed: int | None = None,
    prefetch_buffer_size: int | None = None,
    num_parallel_reads: int | None = None,
    num_parallel_parser_calls: int | None = None,
    drop_final_batch: bool = False,
) -> Any:
    """Reads (and optionally parses) TFRecord files into batches, as TensorFlow's
    ``make_tf_record_dataset``.

    The pipeline is TF 2.21's: ``list_files(file_pattern, shuffle, shuffle_seed)`` ->
    ``TFRecordDataset(files, num_parallel_reads=24)`` -> ``shuffle(10000, shuffle_seed)``
    (when ``shuffle``) -> ``repeat(num_epochs)`` (unless 1) -> ``map(parser_fn)`` (when
    given) -> ``batch(batch_size, drop_remainder)`` -> ``prefetch(AUTOTUNE)`` (unless 0).
    With ``num_epochs=None`` (forever) the final batch is always dropped, as TF, so the
    batch dimension is ``batch_size``.

    Args:
        file_pattern: a glob, or a list of globs or file names.
        batch_size: records per batch.
        parser_fn: a function of one record (a 0-d bytes array); the records as they are
            when None.
        num_epochs: passes over the files; None repeats forever.
        shuffle: shuffle the files and the records.
        shuffle_buffer_size: the record shuffle's buffer (10000 when None).
        shuffle_seed: the seed of both shuffles.
        prefetch_buffer_size: batches to prefetch (``AUTOTUNE`` when None; 0: none).
        num_parallel_reads: files read at a time, one record from each in turn (24 when None).
        num_parallel_parser_calls: threads for ``parser_fn`` (``AUTOTUNE`` when None; TF:
            ``batch_size``).
        drop_final_batch: drop a last batch smaller than ``batch_size``.

    Returns:
        A ``Dataset`` of batches: ``(batch_size,)`` object arrays of records, or
        ``parser_fn``'s outputs with a leading batch dimension.

    Raises:
        DatasetArgumentError: no file matches, or an argument is out of range (naming it).

    Examples:
        >>> import os, tempfile
        >>> from phalanx.data import TFRecordWriter
        >>> folder = tempfile.mkdtemp()
        >>> for name in "ab":
        ...     with TFRecordWriter(os.path.join(folder, name + ".tfrecord")) as w:
        ...         for i in range(3):
        ...             w.write(f"{name}{i}".encode())
        >>> ds = make_tf_record_dataset(os.path.join(folder, "*.tfrecord"), 4, num_epochs=1,
        ...                             shuffle=False)
        >>> [b.tolist() for b in ds]
        [[b'a0', b'b0', b'a1', b'b1'], [b'a2', b'b2']]
    """
    from ._dataset import Dataset
    from ._record_datasets import TFRecordDataset

    _check_bool("shuffle", shuffle)
    _check_bool("drop_final_batch", drop_final_batch)
    if parser_fn is not None and not callable(parser_fn):
        raise DatasetTypeError(
            f"make_tf_record_dataset: parser_fn must be a function of one record or None, got "
            f"{type(parser_fn).__name__} {parser_fn!r:.60}."
        )
    files = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    reads = 24 if num_parallel_reads is None else num_parallel_reads
    dataset = TFRecordDataset(files, num_parallel_reads=reads)
    if shuffle:
        buffer = 10000 if shuffle_buffer_size is None else shuffle_buffer_size
        dataset = dataset.shuffle(buffer, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    drop = drop_final_batch or num_epochs is None
    if parser_fn is not None:
        calls = AUTOTUNE if num_parallel_parser_calls is None else num_parallel_parser_calls
        dataset = dataset.map(parser_fn, num_parallel_calls=calls)
    dataset = dataset.batch(batch_size, drop_remainder=drop)
    if prefetch_buffer_size == 0:
        return dataset
    return dataset.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise DatasetTypeError(
            f"make_tf_record_dataset: {name} must be a bool, got {type(value).__name__} {value!r}."
        )


def parse_example_dataset(
    features: Mapping[str, Any], num_parallel_calls: int = 1, deterministic: bool | None = None
) -> Callable[[Any], Any]:
    """``ds.apply(parse_example_dataset(features))``: parses batches of serialized Examples
    (``tf.data.experimental.parse_example_dataset``), ``ds.map(lambda r: parse_example(r,
    features))`` with TF's element spec.

    Args:
        features: ``{name: FixedLenFeature | VarLenFeature | FixedLenSequenceFeature |
            SparseFeature | RaggedFeature}``.
        num_parallel_calls: batches parsed at a time (threads).
        deterministic: False lets batches come out of order (None: the dataset's option).

    Returns:
        A function ``Dataset -> Dataset`` for ``Dataset.apply``.

    Raises:
        ValueError: ``features`` is None (TF's message).
        ValueError: a feature is not one of the five specs (as TF).
        TypeError: (when applied) the input is not a dataset of vectors of strings (TF's
            message).

    Examples:
        >>> import numpy as np
        >>> from phalanx.data import Dataset, FixedLenFeature, serialize_example
        >>> recs = [serialize_example({"x": np.float32([i])}) for i in range(3)]
        >>> ds = Dataset.from_tensor_slices(np.array(recs, object)).batch(2)
        >>> ds = ds.apply(parse_example_dataset({"x": FixedLenFeature([1], "float32")}))
        >>> ds.element_spec
        {'x': TensorSpec(shape=(None, 1), dtype=float32, name=None)}
        >>> [b["x"].tolist() for b in ds]
        [[[0.0], [1.0]], [[2.0]]]
    """
    if features is None:
        raise ValueError("Argument `features` is required, but not specified.")
    if not isinstance(features, Mapping) or not features:
        raise TypeError(
            "parse_example_dataset: features must be a non-empty dict of name -> feature spec; "
            f"got {type(features).__name__} {features!r:.80}."
        )
    for key, feature in features.items():
        if not isinstance(feature, _FEATURES):
            raise ValueError(
                f"parse_example_dataset: Unsupported {type(feature).__name__} {feature!r:.60} "
                f"for key {key!r}; use FixedLenFeature, VarLenFeature, FixedLenSequenceFeature, "
                "SparseFeature or RaggedFeature."
            )

    def _apply(dataset: Any) -> Any:
        from ._dataset import Dataset

        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"parse_example_dataset(...) transforms a phalanx.data.Dataset, got "
                f"{type(dataset).__name__}; use it as ds.apply(parse_example_dataset(...))."
            )
        return ParseExampleDataset(dataset, features, num_parallel_calls, deterministic)

    return _apply


class ParseExampleDataset(MapDataset):
    """``parse_example_dataset``: ``parse_example`` of each batch, with TF's element spec."""

    def __init__(self, input_dataset: Any, features: Mapping[str, Any], calls: Any, det: Any):
        spec = input_dataset.element_spec
        if not (
            isinstance(spec, st.TensorSpec)
            and spec.shape is not None
            and len(spec.shape) == 1
            and spec.dtype == object
        ):
            raise TypeError(
                "Input dataset should be a dataset of vectors of strings. Instead it is "
                f"`{spec}`. Batch the records first: ds.batch(n).apply(parse_example_dataset(...))."
            )
        self._features = dict(features)
        feats = self._features
        super().__init__(input_dataset, lambda records: parse_example(records, feats), calls, det)

    def _compute_spec(self) -> Any:
        batch = self._input.element_spec.shape[0]
        return {key: _feature_spec(f, batch) for key, f in sorted(self._features.items())}


def _feature_spec(feature: Any, batch: int | None) -> Any:
    dtype = np.dtype(object) if feature.dtype == "string" else np.dtype(feature.dtype)
    if isinstance(feature, FixedLenFeature):
        return st.TensorSpec((batch, *feature.shape), dtype)
    if isinstance(feature, FixedLenSequenceFeature):
        return st.TensorSpec((batch, None, *feature.shape), dtype)
    if isinstance(feature, VarLenFeature):
        return SparseTensorSpec((batch, None), dtype)
    if isinstance(feature, SparseFeature):
        size = [feature.size] if isinstance(feature.index_key, str) else list(feature.size)
        return SparseTensorSpec((batch, *size), dtype)
    parts = list(feature.partitions)
    dims = [batch, None] + [p.length if isinstance(p, UniformRowLength) else None for p in parts]
    dense_tail = 0
    while parts and isinstance(parts[-1], UniformRowLength):
        parts.pop()
        dense_tail += 1
    ragged_rank = len(dims) - 1 - dense_tail
    return RaggedTensorSpec(dims, dtype, ragged_rank, feature.row_splits_dtype)
