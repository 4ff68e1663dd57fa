"""``Dataset.shard`` and ``auto_shard``: splitting a pipeline over input pipelines (processes).

``auto_shard(dataset, num_input_pipelines, input_pipeline_id)`` rewrites a
pipeline as tf.data's auto-shard rewrite (``_AutoShardDataset``, grappler's
``auto_shard.cc``) does, so that each of ``n`` processes reads a disjoint share:

* ``OFF``: unchanged; every pipeline sees every element (but see
  ``global_batches`` below).
* ``FILE``: walking from the end of the pipeline towards its sources, through
  the steps that pass elements on (``batch``, ``map``, ``filter``, ``shuffle``,
  ``repeat``, ``take``, ``skip``, ``prefetch``, ``cache``, ``unbatch``,
  ``rebatch``, ``padded_batch``, ``window``, ``shard``, ``with_options``; an
  ``assert_cardinality`` is dropped, as TF drops it), into every input of
  ``zip`` and ``concatenate``, and through ``interleave``/``flat_map``, the
  rewrite looks for the file readers. An ``interleave``/``flat_map`` whose
  function returns a reader (``TFRecordDataset``, ``TextLineDataset``, any
  ``FileSourceDataset``; the function is called on the first input element)
  gets its input (the file names) sharded with ``shard(n, i)``, a shuffle of
  those names moved after the shard (so the shares are disjoint whatever the
  seed); a reader reached directly keeps files ``i, i + n ...`` of its list.
  Everything after the reader is unchanged: ``list_files().flat_map(
  TFRecordDataset).batch(5)`` over 5 pipelines gives pipeline 3 the batches
  of 5 of files 3 and 8. The walk fails on any other step (``unique``,
  ``scan``, ``enumerate`` ...) and on sources that are not readers
  (``range``, ``from_tensor_slices``, ``from_generator``, ``list_files``
  alone).
* ``DATA``: ``shard(n, i)`` of the pipeline's elements, before a final
  ``prefetch``/``with_options``: every pipeline reads everything.
* ``HINT``: every ``shard(SHARD_HINT, ...)`` placeholder becomes
  ``shard(n, i)``; other shards are left alone.
* ``AUTO``: ``FILE`` where the walk finds readers, else ``DATA``; the returned
  reason says which and why.

A shard that auto-sharding inserts needs at least ``n`` elements at that
point (files under FILE): the pipelines that would get an element raise
``AutoShardError``, as TF's ``require_non_empty`` shard raises. phalanx knows
a reader's file list when the pipeline is built, so there FILE raises and
AUTO falls back to DATA at once when there are fewer files than pipelines.

With ``global_batches=True`` (``strategy.experimental_distribute_dataset``
uses it) the pipeline yields *global* batches that the pipelines together make
up, as tf.distribute rebatches before its rewrite. Under OFF a final ``batch(B)``
(followed only by element-wise steps) is rebatched into batches of ``B/n``,
the same rows on every pipeline, so the pipelines' batches of step ``k``
together make one global batch of ``B`` and an epoch takes ``n`` times the
steps (TF: 32 per replica for ``batch(64)`` on 2 workers); under FILE and HINT a final
``batch(B)`` becomes ``batch(B / n)`` (kept whole when ``B`` does not divide by
``n``; the reason says so), and under DATA a final ``batch(B)`` (followed only
by ``map``, ``prefetch``, ``take``, ``skip``, ``repeat``, ``with_options``) is
split by rows: pipeline ``i`` gets rows ``[i*B/n, (i+1)*B/n)`` of every global
batch, so the global batch of step ``k`` is the concatenation of the
pipelines' batches of step ``k`` and every pipeline takes the same number of
steps (a short last batch gives some pipelines 0 rows; use
``drop_remainder=True`` for static shapes). ``B`` must divide by ``n``. On the
in-memory fast path each pipeline gathers only its own rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import AutoShardError, BatchNotDivisibleError, DatasetArgumentError
from . import _structure as st
from ._assert_cardinality import AssertCardinalityDataset
from ._batch import BatchDataset, PaddedBatchDataset, RebatchDataset, UnbatchDataset
from ._cache import CacheDataset
from ._dataset import Dataset, check_positive
from ._filter import FilterDataset
from ._interleave import InterleaveDataset
from ._iterator import state_int
from ._map import _EMPTY, MapDataset, first_element
from ._options import UNKNOWN_CARDINALITY, AutoShardPolicy
from ._prefetch import PrefetchDataset
from ._repeat import RepeatDataset
from ._shuffle import ShuffleDataset
from ._sources import (
    ConcatenateDataset,
    FileSourceDataset,
    GeneratorDataset,
    ListFilesDataset,
    RangeDataset,
    TensorsDataset,
    TensorSlicesDataset,
    ZipDataset,
)
from ._take_skip import SkipDataset, TakeDataset, _PassIndex
from ._window import WindowDataset
from ._with_options import OptionsDataset

SHARD_HINT = -1
"""``shard(SHARD_HINT, ...)``: a placeholder that ``AutoShardPolicy.HINT`` replaces with
``shard(num_input_pipelines, input_pipeline_id)`` (``tf.data.experimental.SHARD_HINT``)."""


class ShardDataset(Dataset):
    """``Dataset.shard``: the elements whose position ``p`` has ``p % num_shards == index``."""

    _input_attrs = ("_input",)

    def __init__(
        self, input_dataset: Dataset, num_shards: int, index: int, require_non_empty: bool = False
    ):
        self._input = input_dataset
        self._require = bool(require_non_empty)
        if isinstance(num_shards, int | np.integer) and num_shards == SHARD_HINT:
            self._n, self._index = SHARD_HINT, int(index)  # replaced by HINT auto-sharding
            return
        self._n = check_positive("num_shards", num_shards, "shard")
        if not 0 <= int(index) < self._n:
            raise DatasetArgumentError(
                f"shard: index must be in [0, num_shards={self._n}), got {index}. Pass this "
                "pipeline's id, e.g. shard(num_workers, worker_index)."
            )
        self._index = int(index)

    def _iterator(self, ctx):
        if self._n == SHARD_HINT:
            raise AutoShardError(
                "shard(SHARD_HINT, ...) is a placeholder that only auto-sharding with "
                "AutoShardPolicy.HINT replaces (with shard(num_input_pipelines, "
                "input_pipeline_id)); iterated as it is, it has no number of shards. Set "
                "options.experimental_distribute.auto_shard_policy = AutoShardPolicy.HINT, or "
                "pass the number of shards."
            )
        return _ShardIterator(self._input._iterator(ctx), self._n, self._index, self._require)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0 or self._n == SHARD_HINT:
            return n if n < 0 else UNKNOWN_CARDINALITY
        return n // self._n + (1 if self._index < n % self._n else 0)

    def _compute_spec(self):
        return self._input.element_spec


def _too_few(seen: int, n: int) -> AutoShardError:
    return AutoShardError(
        f"auto-sharding needs at least one element for each of the {n} input pipelines where "
        f"it shards, but the pipeline has only {seen} there (files under FILE sharding). Use "
        f"fewer input pipelines, write more (smaller) files, or set "
        "options.experimental_distribute.auto_shard_policy to AutoShardPolicy.DATA or OFF."
    )


class _ShardIterator(_PassIndex):
    def __init__(self, child, num_shards, index, require_non_empty=False):
        self.child, self.k, self.i = child, num_shards, index
        self.require = require_non_empty
        self.pos = 0  # input elements consumed

    def __next__(self):
        while True:
            x = next(self.child)
            self.pos += 1
            if (self.pos - 1) % self.k == self.i:
                if self.require and self.pos < self.k:
                    self._first_k_exist(indices=False)
                return x

    def _first_k_exist(self, indices: bool) -> None:
        """tf.data's ``require_non_empty``: having taken its first element, a shard checks that
        the input has ``k`` elements (those before the k-th are skipped anyway)."""
        while self.pos < self.k:
            if indices:
                extra = self.child.next_indices(self.k - self.pos)
                if extra is None:
                    indices = False
                    continue
                if extra.size == 0:
                    raise _too_few(self.pos, self.k)
                self.pos += extra.size
            else:
                try:
                    next(self.child)
                except StopIteration:
                    raise _too_few(self.pos, self.k) from None
                self.pos += 1

    def next_indices(self, want):
        parts, got = [], 0
        while got < want:
            first = self.pos + (self.i - self.pos) % self.k
            end = first + (want - got - 1) * self.k + 1
            raw = self.child.next_indices(end - self.pos)
            if raw is None:  # the input stopped being indexable: hand over what we have
                return np.concatenate(parts) if parts else None
            if raw.size == 0:
                break
            mine = raw[first - self.pos :: self.k]
            self.pos += raw.size
            if self.require and mine.size and self.pos < self.k:
                self._first_k_exist(indices=True)
            parts.append(mine)
            got += mine.size
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def get_state(self):
        return {"pos": self.pos, "child": self.child.get_state()}

    def set_state(self, state):
        self.pos = state_int(state, "pos", what="position in the shard")
        self.child.set_state(state["child"])


# How the FILE walk treats each kind of node, as the lists in TF's auto_shard.cc.
_PASS_THROUGH = (
    BatchDataset,
    CacheDataset,
    FilterDataset,
    MapDataset,
    OptionsDataset,
    PaddedBatchDataset,
    PrefetchDataset,
    RebatchDataset,
    RepeatDataset,
    ShardDataset,
    ShuffleDataset,
    SkipDataset,
    TakeDataset,
    UnbatchDataset,
    WindowDataset,
)
_MULTIPLE_INPUTS = (ConcatenateDataset, ZipDataset)
_UNSHARDABLE_SOURCES = (
    GeneratorDataset,
    ListFilesDataset,
    RangeDataset,
    TensorSlicesDataset,
    TensorsDataset,
)
_ELEMENTWISE_AFTER_BATCH = (MapDataset, PrefetchDataset, OptionsDataset)


class _NotFound(Exception):
    """FILE sharding found no reader to shard (TF's NotFound: AUTO then shards by DATA)."""


def auto_shard(
    dataset: Dataset,
    num_input_pipelines: int,
    input_pipeline_id: int,
    policy: AutoShardPolicy | None = None,
    *,
    global_batches: bool = False,
) -> tuple[Dataset, AutoShardPolicy, str]:
    """This input pipeline's share of ``dataset``, as tf.data's auto-sharding (see module docstring).

    Args:
        dataset: The whole pipeline, as written for one process.
        num_input_pipelines: How many pipelines (processes) read it.
        input_pipeline_id: This pipeline's index in ``[0, num_input_pipelines)``.
        policy: The policy; by default ``dataset.options().experimental_distribute.auto_shard_policy``.
        global_batches: The pipeline's final ``batch(B)`` makes global batches that the
            pipelines together yield (as the input of
            ``strategy.experimental_distribute_dataset``): FILE and HINT make it
            ``batch(B / n)``, DATA gives each pipeline its rows of every global batch,
            OFF rebatches it into batches of ``B / n``.

    Returns:
        ``(sharded_dataset, policy_used, reason)``: ``policy_used`` is ``FILE``,
        ``DATA``, ``HINT`` or ``OFF`` (never ``AUTO``); ``reason`` says why, for logs.

    Raises:
        AutoShardError: ``FILE`` was asked for a pipeline where the walk finds no reader,
            or with fewer files than pipelines.
        BatchNotDivisibleError: ``DATA`` or ``OFF`` with ``global_batches`` on a batched pipeline
            whose batch size does not divide by ``num_input_pipelines``.

    Examples:
        >>> ds = Dataset.range(8).batch(2)
        >>> mine, used, why = auto_shard(ds, 2, 1)
        >>> used, [b.tolist() for b in mine]
        (<AutoShardPolicy.DATA: 2>, [[2, 3], [6, 7]])
        >>> mine, used, why = auto_shard(ds.unbatch().batch(4), 2, 1, global_batches=True)
        >>> [b.tolist() for b in mine]
        [[2, 3], [6, 7]]
    """
    n = check_positive("num_input_pipelines", num_input_pipelines, "auto_shard")
    if isinstance(input_pipeline_id, bool) or not isinstance(input_pipeline_id, int | np.integer):
        raise DatasetArgumentError(
            f"auto_shard: input_pipeline_id must be an int, got "
            f"{type(input_pipeline_id).__name__} {input_pipeline_id!r:.40}."
        )
    i = int(input_pipeline_id)
    if not 0 <= i < n:
        raise DatasetArgumentError(f"auto_shard: input_pipeline_id must be in [0, {n}), got {i}.")
    if not isinstance(global_batches, bool):
        raise DatasetArgumentError(
            f"auto_shard: global_batches must be True or False, got {global_batches!r:.40}."
        )
    if policy is None:
        policy = dataset.options().experimental_distribute.auto_shard_policy
    policy = AutoShardPolicy(policy)
    if policy == AutoShardPolicy.OFF:
        if global_batches and n > 1:
            return _off_rebatch(dataset, n)
        return dataset, policy, "auto_shard_policy is OFF: every input pipeline reads every element"
    if policy == AutoShardPolicy.HINT:
        found = [0]
        sharded = _replace_hints(dataset, n, i, found)
        reason = (
            f"HINT: {found[0]} shard(SHARD_HINT) placeholder(s) became shard({n}, {i})"
            if found[0]
            else "HINT: the pipeline has no shard(SHARD_HINT) placeholder; it is unchanged"
        )
        if global_batches:
            sharded, rebatched = _file_rebatch(sharded, n)
            reason += rebatched
        return sharded, policy, reason
    if n == 1:
        return dataset, AutoShardPolicy.OFF, "one input pipeline: nothing to shard"
    if policy in (AutoShardPolicy.AUTO, AutoShardPolicy.FILE):
        notes: list[str] = []
        try:
            sharded = _shard_by_file(dataset, n, i, notes)
        except _NotFound as e:
            problem = str(e)
        else:
            reason = "FILE: " + "; ".join(notes)
            if global_batches:
                sharded, rebatched = _file_rebatch(sharded, n)
                reason += rebatched
            return sharded, AutoShardPolicy.FILE, reason
        if policy == AutoShardPolicy.FILE:
            raise AutoShardError(
                f"auto_shard_policy FILE cannot shard this pipeline: {problem}. Use "
                "AutoShardPolicy.DATA (every pipeline reads everything and keeps its share) or "
                "write more files."
            )
        prefix = f"AUTO chose DATA because {problem}: "
    else:
        prefix = ""
    if global_batches:
        sharded, how = _data_shard_rows(dataset, n, i)
    else:
        sharded, how = _shard_at_end(dataset, n, i), f"DATA: elements sharded with shard({n}, {i})"
    return sharded, AutoShardPolicy.DATA, prefix + how


def _shard_by_file(node: Dataset, n: int, i: int, notes: list[str]) -> Dataset:
    """TF's ``RecursivelyHandleOp``: ``node`` with its readers' inputs sharded, or ``_NotFound``."""
    kind = type(node)
    name = kind.__name__.removesuffix("Dataset").lstrip("_")
    if kind is AssertCardinalityDataset:  # TF removes it: the count no longer holds
        return _shard_by_file(node._input, n, i, notes)
    if kind in _UNSHARDABLE_SOURCES:
        raise _NotFound(
            f"the pipeline reads no files through the steps FILE sharding looks through (it "
            f"reached the source {name}, which is not a file reader)"
        )
    if kind in _MULTIPLE_INPUTS:
        return node._with_inputs([_shard_by_file(d, n, i, notes) for d in node._inputs()])
    if kind is InterleaveDataset and _reader_in_function(node):
        return node._with_inputs([_shard_names(node._input, n, i, notes)])
    if isinstance(node, FileSourceDataset):
        files = node.filenames
        if len(files) < n:
            raise _NotFound(
                f"the pipeline reads {len(files)} files, fewer than the {n} input pipelines"
            )
        notes.append(
            f"{len(files)} files over {n} input pipelines, this one reads {len(files[i::n])}"
        )
        return node._with_filenames(files[i::n])
    if kind is not InterleaveDataset and kind not in _PASS_THROUGH:
        raise _NotFound(
            f"walking from the end of the pipeline towards its files it reached {name}, a step "
            "that FILE sharding does not look through (as tf.data's auto-shard rewrite)"
        )
    (child,) = node._inputs()
    return node._with_inputs([_shard_by_file(child, n, i, notes)])


def _reader_in_function(node: InterleaveDataset) -> bool:
    """Whether ``interleave``'s function returns a dataset that reads files (TF: a reader op in
    its function), found by calling it on the first input element."""
    x = first_element(node._input)
    if x is _EMPTY:
        return False

    return _reads_files(st.call_unpacked(node._fn, x))


def _reads_files(ds: Any) -> bool:
    if not isinstance(ds, Dataset):
        return False
    if isinstance(ds, FileSourceDataset) and not isinstance(ds, ListFilesDataset):
        return True
    if isinstance(ds, InterleaveDataset) and _reader_in_function(ds):
        return True
    return any(_reads_files(d) for d in ds._inputs())


def _shard_names(names: Dataset, n: int, i: int, notes: list[str]) -> Dataset:
    """TF's ``ProcessDatasetSourceNode``: ``shard(n, i)`` of the file names, with the shuffles
    before it removed and the last one put back after it (so the shares are disjoint)."""
    shuffles: list[ShuffleDataset] = []
    plain = _without_shuffles(names, shuffles)
    count = plain._cardinality()
    if 0 <= count < n:
        raise _NotFound(f"the pipeline reads {count} files, fewer than the {n} input pipelines")
    if count >= 0:
        notes.append(
            f"{count} files over {n} input pipelines, this one reads {len(range(i, count, n))}"
        )
    else:
        notes.append(f"the files over {n} input pipelines, this one reads every {n}th from {i}")
    out: Dataset = ShardDataset(plain, n, i, require_non_empty=True)
    if shuffles:
        out = shuffles[-1]._with_inputs([out])
    return out


def _without_shuffles(node: Dataset, found: list[ShuffleDataset]) -> Dataset:
    if isinstance(node, ShuffleDataset):
        found.append(node)
        return _without_shuffles(node._input, found)
    inputs = node._inputs()
    if not inputs:
        return node
    return node._with_inputs([_without_shuffles(d, found) for d in inputs])


def _replace_hints(node: Dataset, n: int, i: int, found: list[int]) -> Dataset:
    inputs = [_replace_hints(d, n, i, found) for d in node._inputs()]
    if type(node) is ShardDataset and node._n == SHARD_HINT:
        found[0] += 1
        return ShardDataset(inputs[0], n, i, require_non_empty=True)
    return node._with_inputs(inputs) if inputs else node


def _shard_at_end(node: Dataset, n: int, i: int) -> Dataset:
    """TF's ``ShardByData``: ``shard(n, i)`` before the final ``prefetch``/``with_options``."""
    if isinstance(node, PrefetchDataset | OptionsDataset):
        return node._with_inputs([_shard_at_end(node._input, n, i)])
    return ShardDataset(node, n, i, require_non_empty=True)


def _final_batch(dataset: Dataset) -> tuple[BatchDataset | None, list[Dataset]]:
    """The pipeline's final ``batch`` (followed only by element-wise steps) and those steps."""
    node, path = dataset, []
    while not isinstance(node, BatchDataset) and _passes_batches(node):
        path.append(node)
        node = node._inputs()[0]
    if isinstance(node, BatchDataset) and node._split is None:
        return node, path
    return None, path


def _with_final(path: list[Dataset], node: Dataset) -> Dataset:
    out = node
    for parent in reversed(path):
        out = parent._with_inputs([out])
    return out


def _check_batch_divides(policy: str, batch: int, n: int) -> None:
    if batch % n:
        raise BatchNotDivisibleError(
            f"auto_shard {policy}: the pipeline's batch size {batch} does not divide by the "
            f"{n} input pipelines. Use a global batch size that is a multiple of {n} "
            f"(e.g. {batch - batch % n or n})."
        )


def _file_rebatch(dataset: Dataset, n: int) -> tuple[Dataset, str]:
    """With global batches, a final ``batch(B)`` becomes ``batch(B / n)`` per pipeline.

    As tf.distribute rebatches: the pipelines' batches of step ``k`` together
    make one global batch of ``B`` (from other files than one pipeline would read).
    """
    node, path = _final_batch(dataset)
    if node is None or type(node) is not BatchDataset:
        return dataset, ""
    if node._batch % n:
        return dataset, (
            f"; its batches of {node._batch} do not divide by {n}, so each pipeline keeps them "
            f"whole (a global batch of {node._batch * n})"
        )
    local = BatchDataset(node._input, node._batch // n, node._drop)
    return _with_final(
        path, local
    ), f"; each global batch of {node._batch} is {node._batch // n} per pipeline"


def _off_rebatch(dataset: Dataset, n: int) -> tuple[Dataset, AutoShardPolicy, str]:
    """With global batches under OFF, every pipeline reads everything, its final ``batch(B)``
    rebatched to ``B / n`` (tf.distribute rebatches before its rewrite)."""
    said = "OFF: every input pipeline reads every element"
    node, _ = _final_batch(dataset)
    if node is None or type(node) is not BatchDataset:
        return dataset, AutoShardPolicy.OFF, said + " (no final batch to rebatch)"
    _check_batch_divides("OFF", node._batch, n)
    local = node._batch // n
    reason = (
        f"{said}, in batches of {local}: each global batch of {node._batch} is {local} per "
        "pipeline, the same rows on each, as tf.data"
    )
    return RebatchDataset(dataset, local, node._drop), AutoShardPolicy.OFF, reason


def _data_shard_rows(dataset: Dataset, n: int, i: int) -> tuple[Dataset, str]:
    """With global batches: split the final batch by rows, or shard elements at the end."""
    node, path = _final_batch(dataset)
    if node is not None:
        _check_batch_divides("DATA", node._batch, n)
        split = node._with_inputs(node._inputs())
        split._split = (n, i)
        local = node._batch // n
        return _with_final(path, split), (
            f"DATA: every input pipeline reads all elements and takes rows [{i * local}, {(i + 1) * local}) "
            f"of each global batch of {node._batch}"
        )
    return _shard_at_end(dataset, n, i), f"DATA: elements sharded with shard({n}, {i})"


def _passes_batches(node: Dataset) -> bool:
    return isinstance(node, OptionsDataset | RepeatDataset | TakeDataset | SkipDataset) or (
        type(node) in _ELEMENTWISE_AFTER_BATCH
    )


def with_input_shard(local: Any, given: Any, policy: str, pipelines: int, pipeline: int) -> Any:
    """``local`` marked with how it shares the input (``Iterator.get_state`` saves it as
    ``"shard"``, ``set_state`` checks it).

    The mark: pipeline ``pipeline`` of ``pipelines``, by ``policy`` (``FILE``,
    ``DATA``, ``OFF``, ``FUNCTION``), and whether its position is the whole
    pipeline's (``"global"``: DATA sharding that splits each global batch by rows,
    where every pipeline is at the same position; a checkpoint's position then moves
    to another process count). A copy of ``local`` when it is ``given`` (the
    dataset as the user wrote it); an iterable that is not a ``Dataset`` is
    returned as it is.

    Args:
        local: this pipeline's dataset (``auto_shard``'s result, or the function's).
        given: the dataset before sharding.
        policy: the auto-shard policy used, by name.
        pipelines: the number of input pipelines (processes).
        pipeline: this pipeline's index.
    """
    if not isinstance(local, Dataset):
        return local
    if local is given:
        local = local._with_inputs(local._inputs())
    rows = policy == "DATA" and _splits_rows(local)
    local._input_shard = {
        "policy": "DATA_ROWS" if rows else policy,
        "pipelines": pipelines,
        "pipeline": pipeline,
        "global": bool(rows),
    }
    return local


def _splits_rows(dataset: Dataset) -> bool:
    """Whether DATA sharding split the pipeline's final batch by rows (a ``_split`` batch)."""
    if isinstance(dataset, BatchDataset) and dataset._split is not None:
        return True
    return any(_splits_rows(d) for d in dataset._inputs())
