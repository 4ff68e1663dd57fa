"""``Dataset.shard`` and ``auto_shard``: splitting a pipeline over input pipelines (processes).

``auto_shard(dataset, num_input_pipelines, input_pipeline_id)`` rewrites a
pipeline so that each of ``num_input_pipelines`` processes reads a disjoint
share, and the shares together hold every element exactly once per epoch:

* ``OFF``: not sharded; every pipeline reads every element. As tf.data, a
  final ``batch(B)`` (followed only by element-wise steps) is still the
  *global* batch: each pipeline rebatches it into batches of ``B/n`` (the
  same rows on every pipeline), so the pipelines' batches of step ``k``
  together make one global batch of ``B`` and an epoch takes ``n`` times the
  steps (TF: 32 per replica for ``batch(64)`` on 2 workers). ``B`` must divide
  by ``n``. Without a final batch the pipeline is unchanged.
* ``FILE``: the pipeline's file source (a ``FileSourceDataset``, e.g. the
  one under ``list_files``) keeps files ``id, id + n, id + 2n ...`` of its
  sorted list, before any file shuffle, so shares are disjoint whatever the
  seeds. Needs exactly one file source and at least ``n`` files. If the
  pipeline ends with ``batch(B)`` (as DATA below), it becomes ``batch(B/n)``,
  as tf.data rebatches: the pipelines' batches of one step make one global
  batch of ``B`` (when ``B`` does not divide by ``n``, each pipeline keeps
  ``batch(B)`` and the reason says so).
* ``DATA``: every pipeline reads everything and keeps its share. tf.data
  shards the rebatched per-worker batches at the end of the pipeline; phalanx
  makes the same promise explicit. If the pipeline ends with ``batch(B)``
  (followed only by element-wise steps: ``map``, ``prefetch``, ``take``,
  ``skip``, ``repeat``, ``with_options``), each global batch is split by rows:
  pipeline ``i`` gets rows ``[i*B/n, (i+1)*B/n)``, so the global batch of step
  ``k`` is exactly the concatenation of the pipelines' batches of step ``k``
  and every pipeline takes the same number of steps (a short last batch
  gives some pipelines 0 rows; use ``drop_remainder=True`` for static
  shapes). ``B`` must divide by ``n``. On the in-memory fast path each
  pipeline gathers only its own rows. Without such a final batch the
  elements are sharded round-robin with ``shard(n, i)`` at the end.
* ``AUTO``: ``FILE`` when the pipeline has one file source with at least
  ``n`` files, else ``DATA``; the returned reason says which and why.
"""

from __future__ import annotations

import numpy as np

from ..errors import AutoShardError, BatchNotDivisibleError, DatasetArgumentError
from ._batch import BatchDataset, RebatchDataset
from ._dataset import Dataset, check_positive
from ._iterator import state_int
from ._options import AutoShardPolicy
from ._repeat import RepeatDataset
from ._sources import FileSourceDataset
from ._take_skip import SkipDataset, TakeDataset, _PassIndex
from ._with_options import OptionsDataset


class ShardDataset(Dataset):
    """``Dataset.shard``: the elements whose position ``p`` has ``p % num_shards == index``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, num_shards: int, index: int):
        self._input = input_dataset
        self._n = check_positive("num_shards", num_shards, "shard")
        if not 0 <= int(index) < self._n:
            raise DatasetArgumentError(
                f"shard: index must be in [0, num_shards={self._n}), got {index}. Pass this "
                "pipeline's id, e.g. shard(num_workers, worker_index)."
            )
        self._index = int(index)

    def _iterator(self, ctx):
        return _ShardIterator(self._input._iterator(ctx), self._n, self._index)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._n + (1 if self._index < n % self._n else 0)

    def _compute_spec(self):
        return self._input.element_spec


class _ShardIterator(_PassIndex):
    def __init__(self, child, num_shards, index):
        self.child, self.k, self.i = child, num_shards, index
        self.pos = 0  # input elements consumed

    def __next__(self):
        while True:
            x = next(self.child)
            self.pos += 1
            if (self.pos - 1) % self.k == self.i:
                return x

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
            parts.append(mine)
            got += mine.size
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def get_state(self):
        return {"pos": self.pos, "child": self.child.get_state()}

    def set_state(self, state):
        self.pos = state_int(state, "pos", what="position in the shard")
        self.child.set_state(state["child"])


_ELEMENTWISE_AFTER_BATCH = ("MapDataset", "PrefetchDataset", "OptionsDataset")


def auto_shard(
    dataset: Dataset,
    num_input_pipelines: int,
    input_pipeline_id: int,
    policy: AutoShardPolicy | None = None,
) -> tuple[Dataset, AutoShardPolicy, str]:
    """This input pipeline's share of ``dataset``, as tf.data's auto-sharding (see module docstring).

    Args:
        dataset: The whole pipeline, as written for one process.
        num_input_pipelines: How many pipelines (processes) read it.
        input_pipeline_id: This pipeline's index in ``[0, num_input_pipelines)``.
        policy: The policy; by default ``dataset.options().experimental_distribute.auto_shard_policy``.

    Returns:
        ``(sharded_dataset, policy_used, reason)``: ``policy_used`` is ``FILE``,
        ``DATA`` or ``OFF`` (never ``AUTO``); ``reason`` says why, for logs.

    Raises:
        AutoShardError: ``FILE`` was asked for a pipeline without exactly one file source,
            or with fewer files than pipelines.
        BatchNotDivisibleError: ``DATA`` on a batched pipeline whose batch size does not
            divide by ``num_input_pipelines``.

    Example:
        >>> ds = Dataset.range(8).batch(4)
        >>> mine, used, why = auto_shard(ds, 2, 1)
        >>> used, [b.tolist() for b in mine]
        (<AutoShardPolicy.DATA: 2>, [[2, 3], [6, 7]])
    """
    n = check_positive("num_input_pipelines", num_input_pipelines, "auto_shard")
    if not 0 <= input_pipeline_id < n:
        raise DatasetArgumentError(
            f"auto_shard: input_pipeline_id must be in [0, {n}), got {input_pipeline_id}."
        )
    if policy is None:
        policy = dataset.options().experimental_distribute.auto_shard_policy
    policy = AutoShardPolicy(policy)
    if n == 1:
        return dataset, AutoShardPolicy.OFF, "one input pipeline: nothing to shard"
    if policy == AutoShardPolicy.OFF:
        return _off_rebatch(dataset, n)
    sources = _file_sources(dataset)
    if policy in (AutoShardPolicy.AUTO, AutoShardPolicy.FILE):
        problem = _file_problem(sources, n)
        if problem is None:
            (source,) = sources
            files = source.filenames
            reason = f"FILE: {len(files)} files over {n} input pipelines, this one reads {len(files[input_pipeline_id::n])}"
            sharded = _replace(dataset, source, source._with_filenames(files[input_pipeline_id::n]))
            sharded, rebatched = _file_rebatch(sharded, n)
            return sharded, AutoShardPolicy.FILE, reason + rebatched
        if policy == AutoShardPolicy.FILE:
            raise AutoShardError(
                f"auto_shard_policy FILE cannot shard this pipeline: {problem}. Use "
                "AutoShardPolicy.DATA (every pipeline reads everything and keeps its share) or "
                "write more files."
            )
        prefix = f"AUTO chose DATA because {problem}: "
    else:
        prefix = ""
    sharded, how = _data_shard(dataset, n, input_pipeline_id)
    return sharded, AutoShardPolicy.DATA, prefix + how


def _file_sources(dataset: Dataset) -> list[FileSourceDataset]:
    if isinstance(dataset, FileSourceDataset):
        return [dataset]
    return [s for d in dataset._inputs() for s in _file_sources(d)]


def _file_problem(sources: list[FileSourceDataset], n: int) -> str | None:
    if not sources:
        return "the pipeline reads no files (its source is not a file source)"
    if len(sources) > 1:
        return f"the pipeline has {len(sources)} file sources; FILE sharding needs exactly one"
    count = len(sources[0].filenames)
    if count < n:
        return f"the pipeline reads {count} files, fewer than the {n} input pipelines"
    return None


def _replace(dataset: Dataset, old: Dataset, new: Dataset) -> Dataset:
    if dataset is old:
        return new
    inputs = dataset._inputs()
    if not inputs:
        return dataset
    return dataset._with_inputs([_replace(d, old, new) for d in inputs])


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
    """Under FILE, a final ``batch(B)`` of global batches becomes ``batch(B / n)`` per pipeline.

    As tf.data rebatches: the pipelines' batches of step ``k`` together make one
    global batch of ``B`` (from other files than one pipeline would read).
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
    """Under OFF, every pipeline reads everything, its final ``batch(B)`` rebatched to ``B / n``."""
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


def _data_shard(dataset: Dataset, n: int, i: int) -> tuple[Dataset, str]:
    """Split the final batch by rows, or shard elements at the end (see module docstring)."""
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
    return ShardDataset(dataset, n, i), f"DATA: elements sharded round-robin with shard({n}, {i})"


def _passes_batches(node: Dataset) -> bool:
    return isinstance(node, OptionsDataset | RepeatDataset | TakeDataset | SkipDataset) or (
        type(node).__name__ in _ELEMENTWISE_AFTER_BATCH
    )
