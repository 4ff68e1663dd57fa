"""``Dataset``: the tf.data-style pipeline handle and its methods.

A ``Dataset`` is an immutable node of a pipeline graph: a source, or a
transformation of one or more input datasets. Its methods build new nodes;
iterating makes a tree of node iterators (``_iterator.py``). The node classes
live one idea per module (``_sources``, ``_map``, ``_shuffle``, ``_batch`` ...);
this module only holds the public surface and the graph plumbing.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError
from . import _structure as st
from ._iterator import Iterator, IterCtx, RandomAccess, new_root_seed
from ._options import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Options


def _takes_name(method: Callable[..., Any]) -> Callable[..., Any]:
    """Adds tf.data's ``name=`` argument to a source or transformation.

    TensorFlow names the op in its graph with it (for debugging and tracing); phalanx has
    no graph, so the name is checked (a ``str`` or ``None``), kept on the returned dataset
    (``repr`` shows it) and otherwise changes nothing.
    """

    @functools.wraps(method)
    def with_name(*args: Any, name: str | None = None, **kwargs: Any) -> Any:
        if name is not None and not isinstance(name, str):
            raise DatasetTypeError(
                f"{method.__name__}: name must be a str or None, got {type(name).__name__} "
                f"{name!r:.40}; it names the transformation, e.g. name='parse'."
            )
        out = method(*args, **kwargs)
        if name is not None and isinstance(out, Dataset):
            out._name = name
        return out

    sig = inspect.signature(method)
    params = list(sig.parameters.values())
    params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
    with_name.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return with_name


class Dataset:
    """A sequence of elements, each a numpy array or a nest of tuples/dicts of arrays.

    The names and semantics are ``tf.data.Dataset``'s: build with a source
    (``from_tensor_slices``, ``range``, ``from_generator``, ``list_files`` ...),
    chain transformations (``map``, ``shuffle``, ``repeat``, ``batch`` ...),
    then iterate. Deterministic transformations give the same elements in the
    same order as tf.data. A pipeline over in-memory arrays
    (``from_tensor_slices`` -> ``cache``/``shuffle``/``repeat``/``take``/``skip``/
    ``shard`` -> ``batch``) gathers whole batches with numpy fancy indexing.

    Examples:
        >>> import numpy as np
        >>> ds = Dataset.from_tensor_slices(np.arange(8)).batch(3)
        >>> [b.tolist() for b in ds]
        [[0, 1, 2], [3, 4, 5], [6, 7]]
    """

    _input_attrs: tuple[str, ...] = ()
    _name: str | None = None  # a transformation's name= (tf.data's), for repr
    #: One of several input pipelines (``with_input_shard``); its iterators save it.
    _input_shard: dict | None = None

    # -- graph plumbing (internal) ---------------------------------------------------------

    def _iterator(self, ctx: IterCtx) -> Any:
        raise NotImplementedError

    def _compute_spec(self) -> Any:
        raise NotImplementedError

    def _cardinality(self) -> int:
        raise NotImplementedError

    def _random_access(self) -> RandomAccess | None:
        """A random-access view of this dataset's elements, or None."""
        return None

    def _inputs(self) -> list[Dataset]:
        return [getattr(self, a) for a in self._input_attrs]

    def _with_inputs(self, inputs: list[Dataset]) -> Dataset:
        out = copy.copy(self)
        for a, d in zip(self._input_attrs, inputs, strict=True):
            setattr(out, a, d)
        out.__dict__.pop("_spec", None)
        out.__dict__.pop("_root_seed_value", None)
        out.__dict__.pop("_iterations", None)
        return out

    def _signature(self) -> str:
        inner = ",".join(d._signature() for d in self._inputs())
        return type(self).__name__.removesuffix("Dataset") + (f"({inner})" if inner else "")

    @property
    def _depth(self) -> int:
        return 1 + max((d._depth for d in self._inputs()), default=0)

    def _options_here(self) -> Options | None:
        return None

    # -- inspection ------------------------------------------------------------------------

    @property
    def element_spec(self) -> Any:
        """The nest of ``TensorSpec`` that every element matches (``None`` dims vary)."""
        if "_spec" not in self.__dict__:
            self._spec = st.public_spec(self._compute_spec())
        return self._spec

    def cardinality(self) -> int:
        """The number of elements, ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2)."""
        return self._cardinality()

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError(
                "The dataset length is unknown (filter, from_generator, interleave ...); "
                "iterate it to count, or use cardinality()."
            )
        return n

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator:
        n = self.__dict__.get("_iterations", 0)
        self._iterations = n + 1
        return self._iter_epoch(n)

    def _iter_epoch(self, iteration: int) -> Iterator:
        """An iterator for pass ``iteration`` (its reshuffles are that pass's), whatever ran before.

        ``fit`` uses it so that epoch ``k`` sees the same order in a resumed run as
        in an uninterrupted one.
        """
        if "_root_seed_value" not in self.__dict__:
            self._root_seed_value = new_root_seed()
        return Iterator(self, iteration=iteration, root_seed=self._root_seed_value)

    def _set_root_seed(self, seed: int) -> None:
        """Fixes the seed of this pipeline's unseeded random operations (``shuffle`` ...).

        The distribute layer gives every process the same one, so that processes
        that each take rows of the same global order (DATA sharding) agree on it.
        """
        self._root_seed_value = int(seed)

    def as_numpy_iterator(self) -> Iterator:
        """An iterator of numpy elements, as ``iter``, except that scalar strings (records of
        ``TFRecordDataset``, lines of ``TextLineDataset``) are Python ``bytes``, as tf.data's.

        Examples:
            >>> import numpy as np
            >>> next(Dataset.from_tensor_slices(np.array([b"a", b"b"], object)).as_numpy_iterator())
            b'a'
        """
        it = iter(self)
        it._python_strings = True
        return it

    def options(self) -> Options:
        """The ``Options`` of this pipeline (merged from every ``with_options`` in it)."""
        merged = Options()
        for d in self._inputs():
            merged = merged.merge(d.options())
        own = self._options_here()
        return merged.merge(own) if own is not None else merged

    @_takes_name
    def with_options(self, options: Options) -> Dataset:
        """A dataset with ``options`` set (later options win over earlier ones)."""
        from ._with_options import OptionsDataset

        if not isinstance(options, Options):
            raise DatasetTypeError(
                f"with_options expects a phalanx.data.Options, got {type(options).__name__} "
                f"{options!r}. Build one: options = phalanx.data.Options(); "
                "options.deterministic = False; ds.with_options(options)."
            )
        return OptionsDataset(self, options)

    def __repr__(self) -> str:
        named = f" name={self._name!r}" if self._name else ""
        return f"<{type(self).__name__}{named} element_spec={self.element_spec!r}>"

    # -- sources ---------------------------------------------------------------------------

    @staticmethod
    @_takes_name
    def from_tensor_slices(tensors: Any) -> Dataset:
        """A dataset of the slices of ``tensors`` along their first dimension.

        Raises:
            ComponentLengthError: The components' first dimensions differ.
        """
        from ._sources import TensorSlicesDataset

        return TensorSlicesDataset(tensors)

    @staticmethod
    @_takes_name
    def from_tensors(tensors: Any) -> Dataset:
        """A dataset of exactly one element, ``tensors``."""
        from ._sources import TensorsDataset

        return TensorsDataset(tensors)

    @staticmethod
    @_takes_name
    def range(*args: int, output_type: Any = "int64") -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as a dataset of int64 scalars."""
        from ._sources import RangeDataset

        for value in args:
            check_int("each argument (start, stop, step)", value, "range")
        return RangeDataset(*args, output_type=output_type)

    @staticmethod
    @_takes_name
    def from_generator(
        generator: Callable[..., Iterable[Any]],
        output_types: Any = None,
        output_shapes: Any = None,
        args: tuple | None = None,
        output_signature: Any = None,
    ) -> Dataset:
        """A dataset of the elements yielded by ``generator(*args)``, checked against ``output_signature``.

        Raises:
            GeneratorSignatureError: (while iterating) an element does not match.
        """
        from ._sources import GeneratorDataset

        check_callable(
            "generator", generator, "from_generator", "the generator function, not its result"
        )
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    @_takes_name
    def zip(*datasets: Any) -> Dataset:
        """Zip datasets (a nest of datasets, or several as arguments); stops at the shortest."""
        from ._sources import ZipDataset

        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            datasets = datasets[0]
        for leaf in st.flatten(datasets):
            if not isinstance(leaf, Dataset):
                raise DatasetTypeError(
                    f"zip expects datasets (several, or a tuple or dict of them), got "
                    f"{type(leaf).__name__} {leaf!r}. Make arrays a dataset first: "
                    "Dataset.zip((Dataset.from_tensor_slices(x), ds))."
                )
        return ZipDataset(datasets)

    @staticmethod
    @_takes_name
    def counter(start: int = 0, step: int = 1, dtype: Any = "int64") -> Dataset:
        """``start``, ``start + step``, ... without end (tf.data's ``counter``)."""
        start = check_int("start", start, "counter")
        step = check_int("step", step, "counter")
        kind = np.dtype(dtype).type
        return Dataset.range(1).repeat().enumerate().map(lambda i, _: kind(start + i * step))

    @staticmethod
    def load(
        path: Any, element_spec: Any = None, compression: str | None = None, reader_func: Any = None
    ) -> Dataset:
        """The dataset that ``Dataset.save`` wrote to ``path`` (tf.data's ``load``).

        phalanx's own format (``phalanx/data/_save.py``); the shards are read in order, or
        as ``reader_func(shards)`` makes them (``shards``: a dataset of one dataset per shard).

        Examples:
          >>> import os, tempfile
          >>> path = os.path.join(tempfile.mkdtemp(), "saved_data")
          >>> Dataset.range(2).save(path)
          >>> [int(x) for x in Dataset.load(path)]
          [0, 1]
        """
        from ._save import load

        return load(path, element_spec, compression, reader_func)

    def save(
        self,
        path: Any,
        compression: str | None = None,
        shard_func: Callable[..., Any] | None = None,
        checkpoint_args: Any = None,
    ) -> None:
        """Write the elements to the folder ``path`` for ``Dataset.load`` (tf.data's ``save``).

        ``compression`` is None or ``"GZIP"``; ``shard_func(element)`` picks each
        element's shard (an int >= 0), all in one shard without it. phalanx's own
        format, not TensorFlow's; ``checkpoint_args`` is not supported.
        """
        from ._save import save

        save(self, path, compression, shard_func, checkpoint_args)

    @staticmethod
    @_takes_name
    def random(seed: int | None = None, rerandomize_each_iteration: bool | None = None) -> Dataset:
        """An endless dataset of uniformly distributed int64 values (tf.data's ``random``).

        The same sequence for a seed (and, without a seed, for one dataset object);
        with ``rerandomize_each_iteration=True`` each iteration draws a new one. The
        values are not TensorFlow's (another generator). Checkpointable.

        Examples:
          >>> ds = Dataset.random(seed=4).take(3)
          >>> [int(x) for x in ds] == [int(x) for x in ds]
          True
        """
        from ._random import RandomDataset

        return RandomDataset(seed, rerandomize_each_iteration)

    @staticmethod
    def choose_from_datasets(
        datasets: list[Dataset], choice_dataset: Dataset, stop_on_empty_dataset: bool = True
    ) -> Dataset:
        """For each int64 index of ``choice_dataset``, the next element of ``datasets[index]``.

        When the chosen dataset is used up, iteration ends (``stop_on_empty_dataset=True``)
        or the index is skipped (``False``; it ends when all are used up), as tf.data.

        Examples:
          >>> choice = Dataset.range(2).repeat(2)
          >>> [int(x) for x in Dataset.choose_from_datasets(
          ...     [Dataset.range(2), Dataset.range(10, 12)], choice)]
          [0, 10, 1, 11]
        """
        from ._choose import choose_from_datasets

        return choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def sample_from_datasets(
        datasets: list[Dataset],
        weights: Any = None,
        seed: int | None = None,
        stop_on_empty_dataset: bool = False,
        rerandomize_each_iteration: bool | None = None,
    ) -> Dataset:
        """Elements drawn at random from ``datasets``, dataset ``i`` with probability
        ``weights[i]`` (uniform by default), each dataset's elements in their order.

        A used-up dataset is not drawn again (``stop_on_empty_dataset=False``) or ends the
        iteration (``True``). The draws depend on ``seed`` only (or on the pipeline's seed,
        as unseeded shuffles); ``rerandomize_each_iteration=True`` draws anew each epoch.
        """
        from ._choose import sample_from_datasets

        return sample_from_datasets(
            datasets, weights, seed, stop_on_empty_dataset, rerandomize_each_iteration
        )

    @staticmethod
    @_takes_name
    def list_files(
        file_pattern: str | list[str], shuffle: bool | None = None, seed: int | None = None
    ) -> Dataset:
        """The file names matching ``file_pattern`` (glob), sorted, shuffled by default as in tf.data."""
        from ._sources import list_files

        return list_files(file_pattern, shuffle=shuffle, seed=seed)

    # -- transformations -------------------------------------------------------------------

    @_takes_name
    def concatenate(self, dataset: Dataset) -> Dataset:
        """The elements of this dataset followed by those of ``dataset`` (same structure)."""
        from ._sources import ConcatenateDataset

        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"concatenate expects a Dataset, got {type(dataset).__name__} {dataset!r}. "
                "Make arrays a dataset first: ds.concatenate(Dataset.from_tensor_slices(x))."
            )
        return ConcatenateDataset(self, dataset)

    @_takes_name
    def map(
        self,
        map_func: Callable[..., Any],
        num_parallel_calls: int | None = None,
        deterministic: bool | None = None,
    ) -> Dataset:
        """Apply ``map_func`` to each element (a tuple element is passed as positional arguments).

        With ``num_parallel_calls`` set, calls run on a thread pool; the order is kept unless
        ``deterministic=False``.
        """
        from ._map import MapDataset

        check_parallel_calls(num_parallel_calls, "map")
        return MapDataset(self, map_func, num_parallel_calls, deterministic)

    @_takes_name
    def filter(self, predicate: Callable[..., Any]) -> Dataset:
        """Keep the elements for which ``predicate`` returns true."""
        from ._filter import FilterDataset

        check_callable("predicate", predicate, "filter", "a function element -> bool")
        return FilterDataset(self, predicate)

    @_takes_name
    def scan(self, initial_state: Any, scan_func: Callable[[Any, Any], Any]) -> Dataset:
        """Carry a state over the elements: ``scan_func(state, element)`` returns
        ``(new_state, output)``; the outputs are the new dataset (tf.data's ``scan``).

        The element is passed whole, as ``reduce``; the new state keeps the initial state's
        structure and dtypes.

        Examples:
          >>> import numpy as np
          >>> [int(x) for x in Dataset.range(5).scan(np.int64(0), lambda s, x: (s + x, s + x))]
          [0, 1, 3, 6, 10]
        """
        from ._scan import ScanDataset

        check_callable("scan_func", scan_func, "scan", "a function (state, element)")
        return ScanDataset(self, initial_state, scan_func)

    @_takes_name
    def take_while(self, predicate: Callable[..., Any]) -> Dataset:
        """The elements up to (not including) the first for which ``predicate`` is false."""
        from ._filter import TakeWhileDataset

        check_callable("predicate", predicate, "take_while", "a function element -> bool")
        return TakeWhileDataset(self, predicate)

    @_takes_name
    def shuffle(
        self, buffer_size: int, seed: int | None = None, reshuffle_each_iteration: bool = True
    ) -> Dataset:
        """Shuffle with a buffer of ``buffer_size`` elements, as tf.data (see ``_shuffle.py``)."""
        from ._shuffle import ShuffleDataset

        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    @_takes_name
    def repeat(self, count: int | None = None) -> Dataset:
        """Repeat the dataset ``count`` times (forever when ``None`` or -1)."""
        from ._repeat import RepeatDataset

        if count is not None:
            check_int("count", count, "repeat")
        return RepeatDataset(self, count)

    @_takes_name
    def batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        num_parallel_calls: int | None = None,
        deterministic: bool | None = None,
    ) -> Dataset:
        """Stack ``batch_size`` consecutive elements; the last batch may be smaller unless dropped.

        Raises:
            BatchShapeError: (while iterating) elements of one batch have different shapes.
        """
        from ._batch import BatchDataset

        check_parallel_calls(num_parallel_calls, "batch")
        return BatchDataset(self, batch_size, drop_remainder)

    @_takes_name
    def padded_batch(
        self,
        batch_size: int,
        padded_shapes: Any = None,
        padding_values: Any = None,
        drop_remainder: bool = False,
    ) -> Dataset:
        """Batch elements of different shapes, padding each component to ``padded_shapes``.

        ``None`` dimensions (or ``padded_shapes=None``) pad to the longest in each batch.
        """
        from ._batch import PaddedBatchDataset

        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values, drop_remainder)

    @_takes_name
    def ragged_batch(
        self, batch_size: int, drop_remainder: bool = False, row_splits_dtype: Any = "int64"
    ) -> Dataset:
        """Batch elements of different shapes into ``RaggedTensor`` components, unpadded
        (``tf.data.Dataset.ragged_batch``; see ``_ragged_batch.py`` for which components).

        Examples:
          >>> import numpy as np
          >>> ds = Dataset.range(1, 4).map(lambda x: np.arange(x)).ragged_batch(2)
          >>> [b.to_list() for b in ds]
          [[[0], [0, 1]], [[0, 1, 2]]]
        """
        from ._ragged_batch import RaggedBatchDataset

        return RaggedBatchDataset(self, batch_size, drop_remainder, row_splits_dtype)

    @_takes_name
    def sparse_batch(self, batch_size: int, row_shape: Any) -> Dataset:
        """Batch single-component elements into one ``SparseTensor`` each, of ``dense_shape``
        ``[n, *row_shape]`` (``None``: the batch's largest); ``tf.data.Dataset.sparse_batch``.

        Examples:
          >>> import numpy as np
          >>> st = next(iter(Dataset.range(1, 3).map(lambda x: np.arange(x)).sparse_batch(2, [3])))
          >>> st.indices.tolist(), st.values.tolist(), st.dense_shape.tolist()
          ([[0, 0], [1, 0], [1, 1]], [0, 0, 1], [2, 3])
        """
        from ._ragged_batch import SparseBatchDataset

        return SparseBatchDataset(self, batch_size, row_shape)

    @_takes_name
    def unbatch(self) -> Dataset:
        """Split each element along its first dimension into separate elements."""
        from ._batch import UnbatchDataset

        return UnbatchDataset(self)

    @_takes_name
    def rebatch(self, batch_size: int | list[int], drop_remainder: bool = False) -> Dataset:
        """Re-split batches into batches of ``batch_size`` (cycled if a list), as ``unbatch().batch()``."""
        from ._batch import RebatchDataset

        return RebatchDataset(self, batch_size, drop_remainder)

    @_takes_name
    def take(self, count: int) -> Dataset:
        """The first ``count`` elements (all when ``count`` is -1)."""
        from ._take_skip import TakeDataset

        return TakeDataset(self, check_int("count", count, "take"))

    @_takes_name
    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements (none when ``count`` is -1)."""
        from ._take_skip import SkipDataset

        return SkipDataset(self, check_int("count", count, "skip"))

    @_takes_name
    def shard(self, num_shards: int, index: int) -> Dataset:
        """Every ``num_shards``-th element, starting at ``index``.

        ``shard(phalanx.data.experimental.SHARD_HINT, 0)`` is a placeholder that
        auto-sharding with ``AutoShardPolicy.HINT`` replaces with
        ``shard(num_input_pipelines, input_pipeline_id)``.
        """
        from ._shard import ShardDataset

        return ShardDataset(self, num_shards, index)

    @_takes_name
    def cache(self, filename: str = "") -> Dataset:
        """Keep the elements after the first full pass, in memory or in ``filename`` (.npz)."""
        from ._cache import CacheDataset

        if not isinstance(filename, str | os.PathLike):
            raise DatasetTypeError(
                f"cache expects a file name (str or os.PathLike) or '' for memory, got "
                f"{type(filename).__name__} {filename!r}; e.g. cache('/tmp/train_cache')."
            )
        return CacheDataset(self, filename)

    @_takes_name
    def snapshot(
        self,
        path: Any,
        compression: str | None = "AUTO",
        reader_func: Callable[[Dataset], Dataset] | None = None,
        shard_func: Callable[..., Any] | None = None,
    ) -> Dataset:
        """Save the first complete pass to the folder ``path``; later passes read it (tf.data's
        ``snapshot``).

        The folder holds ``Dataset.save``'s format under a fingerprint of the pipeline
        (``phalanx/data/_snapshot.py``). ``compression`` is ``"AUTO"`` (uncompressed),
        ``"GZIP"`` or None; ``shard_func(element)`` picks each element's shard (an int >= 0);
        ``reader_func(shards)`` reads them back (default: ``shards.interleave(lambda x: x,
        cycle_length=os.cpu_count())``, as TF).

        Examples:
          >>> import os, tempfile
          >>> path = os.path.join(tempfile.mkdtemp(), "snap")
          >>> ds = Dataset.range(3).map(lambda x: x * 2).snapshot(path)
          >>> [int(x) for x in ds], [int(x) for x in ds]  # written, then read back
          ([0, 2, 4], [0, 2, 4])
        """
        from ._snapshot import SnapshotDataset

        return SnapshotDataset(self, path, compression, reader_func, shard_func)

    @_takes_name
    def prefetch(self, buffer_size: int) -> Dataset:
        """Produce up to ``buffer_size`` elements ahead on a background thread."""
        from ._prefetch import PrefetchDataset

        return PrefetchDataset(self, buffer_size)

    @_takes_name
    def interleave(
        self,
        map_func: Callable[..., Dataset],
        cycle_length: int | None = None,
        block_length: int = 1,
        num_parallel_calls: int | None = None,
        deterministic: bool | None = None,
    ) -> Dataset:
        """Map each element to a dataset and interleave ``block_length`` elements of
        ``cycle_length`` of them at a time, as tf.data.

        With ``num_parallel_calls`` (an int >= 1 or ``AUTOTUNE``), each open inner
        dataset is read ahead by its own thread (at most ``cycle_length``); the order
        is the same as without it, also with ``deterministic=False``.
        """
        from ._interleave import InterleaveDataset

        check_callable("map_func", map_func, "interleave", "a function element -> Dataset")
        return InterleaveDataset(
            self, map_func, cycle_length, block_length, num_parallel_calls, deterministic
        )

    @_takes_name
    def flat_map(self, map_func: Callable[..., Dataset]) -> Dataset:
        """Map each element to a dataset and read those datasets one after the other
        (tf.data's ``flat_map``: ``interleave`` with ``cycle_length=1``)."""
        check_callable("map_func", map_func, "flat_map", "a function element -> Dataset")
        return self.interleave(map_func, cycle_length=1, block_length=1)

    @_takes_name
    def window(
        self, size: int, shift: int | None = None, stride: int = 1, drop_remainder: bool = False
    ) -> Dataset:
        """A dataset of windows of ``size`` elements, each a dataset (a tuple or dict of
        datasets for tuple or dict elements), as tf.data's ``window``.

        Window ``k`` holds the elements ``k * shift + j * stride`` (``j < size``);
        ``shift`` defaults to ``size``. The last windows are shorter unless
        ``drop_remainder=True``. Follow with ``flat_map(lambda w: w.batch(size))``
        for a dataset of arrays.

        Raises:
          DatasetArgumentError: ``size``, ``shift`` or ``stride`` is not a positive
            int, or ``drop_remainder`` is not a bool.

        Examples:
          >>> ds = Dataset.range(5).window(3, shift=1, drop_remainder=True)
          >>> [w.tolist() for w in ds.flat_map(lambda w: w.batch(3))]
          [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
        """
        from ._window import WindowDataset

        size = check_positive("size", size, "window")
        shift = size if shift is None else check_positive("shift", shift, "window")
        stride = check_positive("stride", stride, "window")
        drop = check_bool("drop_remainder", drop_remainder, "window")
        return WindowDataset(self, size, shift, stride, drop)

    @_takes_name
    def ignore_errors(self, log_warning: bool = False) -> Dataset:
        """Drops the elements whose computation raised an error (``tf.data``'s ``ignore_errors``).

        An error in an upstream function (``map``, ``filter`` ...) or source is
        swallowed and the next element is read; ``StopIteration`` still ends the
        dataset. With ``log_warning`` each dropped element's error is logged.

        Examples:
          >>> import numpy as np
          >>> def inv(x):
          ...     if x == 0:
          ...         raise ZeroDivisionError("x is 0")
          ...     return np.float32(1) / x
          >>> ds = Dataset.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(inv)
          >>> [float(x) for x in ds.ignore_errors()]
          [1.0, 0.5, 0.25]
        """
        from ._ignore_errors import IgnoreErrorsDataset

        if not isinstance(log_warning, bool | np.bool_):
            raise DatasetTypeError(
                f"ignore_errors: log_warning must be True or False, got "
                f"{type(log_warning).__name__} {log_warning!r:.40}. Pass log_warning=True to log "
                "each dropped element's error."
            )
        return IgnoreErrorsDataset(self, bool(log_warning))

    @_takes_name
    def unique(self) -> Dataset:
        """Each distinct element once, at its first occurrence (tf.data's ``unique``).

        Raises:
          DatasetTypeError: the elements are not one int32, int64 or string array.

        Examples:
          >>> import numpy as np
          >>> [int(x) for x in Dataset.from_tensor_slices(np.array([1, 37, 2, 37, 2, 1])).unique()]
          [1, 37, 2]
        """
        from ._unique import UniqueDataset, check_unique_input

        check_unique_input(self)
        return UniqueDataset(self)

    @_takes_name
    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Fold the elements into one value: ``reduce_func(state, element)`` for each
        element in order, from ``initial_state`` (the element whole, as tf.data)."""
        check_callable("reduce_func", reduce_func, "reduce", "a function (state, element)")
        if self.cardinality() == INFINITE_CARDINALITY:
            raise DatasetArgumentError(
                "reduce over an infinite dataset never ends: take(n) first, e.g. "
                "ds.take(100).reduce(0, fn)."
            )
        state = st.normalize(initial_state)
        want = _state_signature(state)
        for element in self:
            state = st.normalize(st.call_function(reduce_func, state, element))
            got = _state_signature(state)
            if got != want:
                raise DatasetTypeError(
                    f"reduce: reduce_func returned a state of {got}, but the state started as "
                    f"{want} (initial_state converted as TensorFlow converts it: a Python int is "
                    "int32). The state must keep its structure and dtypes, as in tf.data: give "
                    "initial_state the dtype the function returns, e.g. np.int64(0)."
                )
        return state

    @_takes_name
    def get_single_element(self) -> Any:
        """The dataset's only element (tf.data's ``get_single_element``).

        Raises:
          DatasetArgumentError: the dataset is empty or has more than one element.
        """
        iterator = iter(self)
        first = next(iterator, _NOTHING)
        if first is _NOTHING:
            raise DatasetArgumentError("get_single_element: the dataset was empty.")
        if next(iterator, _NOTHING) is not _NOTHING:
            raise DatasetArgumentError(
                "get_single_element: the dataset had more than one element; take(1) first "
                "for the first one, or batch(n) to gather n into one."
            )
        return first

    @_takes_name
    def enumerate(self, start: int = 0) -> Dataset:
        """Pair each element with its int64 index: ``(i, element)``."""
        from ._enumerate import EnumerateDataset

        return EnumerateDataset(self, check_int("start", start, "enumerate"))

    @_takes_name
    def group_by_window(
        self,
        key_func: Callable[..., Any],
        reduce_func: Callable[[Any, Dataset], Dataset],
        window_size: int | None = None,
        window_size_func: Callable[[Any], Any] | None = None,
    ) -> Dataset:
        """Group elements by ``key_func`` into windows of ``window_size`` (or
        ``window_size_func(key)``); each full window, and at the end each window left in
        ascending key order, becomes ``reduce_func(key, window_dataset)``'s elements.

        Examples:
          >>> ds = Dataset.range(10).group_by_window(
          ...     lambda x: x % 2, lambda key, window: window.batch(2), window_size=2)
          >>> [b.tolist() for b in ds]
          [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
        """
        from ._group import group_by_window

        return group_by_window(self, key_func, reduce_func, window_size, window_size_func)

    @_takes_name
    def bucket_by_sequence_length(
        self,
        element_length_func: Callable[..., Any],
        bucket_boundaries: list[int],
        bucket_batch_sizes: list[int],
        padded_shapes: Any = None,
        padding_values: Any = None,
        pad_to_bucket_boundary: bool = False,
        no_padding: bool = False,
        drop_remainder: bool = False,
    ) -> Dataset:
        """Batch elements of similar length together (tf.data's recipe): bucket ``i`` holds
        lengths in ``[bucket_boundaries[i-1], bucket_boundaries[i])`` and is padded-batched by
        ``bucket_batch_sizes[i]``."""
        from ._group import bucket_by_sequence_length

        return bucket_by_sequence_length(
            self,
            element_length_func,
            bucket_boundaries,
            bucket_batch_sizes,
            padded_shapes,
            padding_values,
            pad_to_bucket_boundary,
            no_padding,
            drop_remainder,
        )

    def assert_cardinality(self, expected_cardinality: int) -> Dataset:
        """This dataset, with ``cardinality()`` = ``expected_cardinality`` (e.g. for a generator
        whose length Keras's progress bar should show); iterating checks the count.

        Raises (while iterating):
          DatasetArgumentError: the dataset has fewer or more elements.
        """
        from ._assert_cardinality import AssertCardinalityDataset

        n = check_int("expected_cardinality", expected_cardinality, "assert_cardinality")
        if n < 0 and n != INFINITE_CARDINALITY:
            raise DatasetArgumentError(
                f"assert_cardinality: expected_cardinality must be >= 0 or INFINITE_CARDINALITY "
                f"(-1), got {n}."
            )
        return AssertCardinalityDataset(self, n)

    @_takes_name
    def rejection_resample(
        self,
        class_func: Callable[..., Any],
        target_dist: Any,
        initial_dist: Any = None,
        seed: int | None = None,
    ) -> Dataset:
        """``(class, element)`` pairs of the elements kept at random so that their classes
        follow ``target_dist`` (tf.data's ``rejection_resample``).

        ``class_func(element)`` is the class in ``[0, len(target_dist))``; without
        ``initial_dist`` the input's distribution is estimated as TF does. One pass:
        TF also mixes in unfiltered elements (see ``phalanx/data/_resample.py``).
        """
        from ._resample import rejection_resample

        check_callable(
            "class_func", class_func, "rejection_resample", "a function element -> class"
        )
        return rejection_resample(self, class_func, target_dist, initial_dist, seed)

    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """``transformation_func(self)``: chain a custom transformation."""
        check_callable(
            "transformation_func", transformation_func, "apply", "a function Dataset -> Dataset"
        )
        return transformation_func(self)


_NOTHING = object()  # get_single_element's end of the iterator


def check_positive(name: str, value: Any, method: str) -> int:
    """``value`` as an int > 0, or a ``DatasetArgumentError`` saying so."""
    if isinstance(value, bool) or not isinstance(value, int | st.np.integer) or value <= 0:
        raise DatasetArgumentError(
            f"{method}: {name} must be a positive int, got {value!r}. "
            f"Pass the number of elements, e.g. {method}({name}=32)."
        )
    return int(value)


def check_int(name: str, value: Any, method: str) -> int:
    """``value`` as an int (numpy ints too; not a bool, float or str), or a ``DatasetTypeError``."""
    if (
        isinstance(value, st.np.ndarray)
        and value.shape == ()
        and value.dtype.kind in "iu"  # a 0-d integer array, which tf.data takes too
    ):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | st.np.integer):
        raise DatasetTypeError(
            f"{method}: {name} must be an int (or a 0-d integer array), got {value!r:.60} of "
            f"type {type(value).__name__}. Convert it on purpose, e.g. {method}(int(...))."
        )
    return int(value)


def check_callable(name: str, value: Any, method: str, what: str) -> None:
    """Raises ``DatasetTypeError`` unless ``value`` is callable (``what`` says what it maps)."""
    if not callable(value):
        raise DatasetTypeError(
            f"{method} expects a callable {name} ({what}), got {type(value).__name__} {value!r}."
        )


def check_parallel_calls(value: Any, method: str) -> None:
    """``num_parallel_calls``: None, ``AUTOTUNE`` or an int >= 1, as tf.data."""
    if value is None:
        return
    integer = not isinstance(value, bool) and isinstance(value, int | st.np.integer)
    if not integer or (value < 1 and value != AUTOTUNE):
        raise DatasetArgumentError(
            f"{method}: num_parallel_calls must be a positive int or AUTOTUNE (or None for "
            f"no threads), got {value!r}; e.g. {method}(..., num_parallel_calls=AUTOTUNE)."
        )


def check_bool(name: str, value: Any, method: str) -> bool:
    """``value`` as a bool (``True``/``False``, numpy bools), or a ``DatasetArgumentError``."""
    if not isinstance(value, bool | st.np.bool_):
        raise DatasetArgumentError(
            f"{method}: {name} must be True or False, got {value!r} of type "
            f"{type(value).__name__}. Pass {method}(..., {name}=True) to drop a last partial "
            "batch, False to keep it."
        )
    return bool(value)


__all__ = ["AUTOTUNE", "Dataset"]


def _state_signature(state: Any) -> str:
    """The structure and leaf dtypes of a ``reduce`` state, as a readable string."""
    leaves = ", ".join(np.asarray(v).dtype.name for v in st.flatten(state))
    return f"{st.describe(st.treedef(state))} of dtypes ({leaves})"
