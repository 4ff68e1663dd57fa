"""Distributed input: datasets whose batches arrive as global arrays split over replicas.

``strategy.experimental_distribute_dataset(dataset)`` takes a dataset of
*global* batches; ``strategy.distribute_datasets_from_function(fn)`` calls
``fn(InputContext)`` once per input pipeline (one per process) for a dataset
of *per-replica* batches, as TensorFlow: each step, each of the process's
replicas takes the next one (replica ``i`` of ``k`` local replicas takes element
``step * k + i``), so the global batch is the per-replica batch times the
replicas (``_ReplicaBatches`` joins ``k`` consecutive elements into the
process's share). Either way, iterating yields
global ``jax.Array`` s sharded on the batch axis over the replicas
(``strategy.batch_sharding``), built from each process's part with
``jax.make_array_from_process_local_data``: usable directly as ``strategy.run``
arguments.

With more than one process, ``experimental_distribute_dataset`` gives each
process only its share with the dataset's auto-shard policy
(``phalanx.data.auto_shard``: FILE, DATA, OFF, or AUTO choosing between FILE
and DATA), and says once in the log which policy it used and why.

Host-to-device copies run ahead in a bounded background thread
(``InputOptions.experimental_per_replica_buffer_size`` batches), so the next
batch is on the devices while the current step runs. The iterator's
``get_state()`` is the position of the batches *consumed*, not of those read
ahead, so a checkpoint resumes exactly.

The last, partial global batch follows ``InputOptions.partial_batch``:

- ``"error"`` (default): a partial batch whose rows divide by the replicas
  (one process) is yielded as it is, as TensorFlow runs its short last step
  (``strategy.run`` compiles that shape once more; each replica gets
  ``rows / N`` where TF fills the replicas in order, so sums over replicas are
  TF's); any other is refused, with the numbers and the fixes, before any
  compiled step sees it;
- ``"drop"``: skip it;
- ``"pad"``: pad every batch to the full global batch and yield
  ``(batch, mask)`` pairs, ``mask`` a float32 ``[global_batch]`` array that is
  0 on padding, so every example counts exactly once downstream (multiply
  per-example losses and metric weights by it).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from ..data import Dataset, DatasetIterator, TensorSpec, auto_shard, background, with_input_shard
from ..errors import (
    BatchNotDivisibleError,
    DistributedInputError,
    DistributedValueError,
    NotCheckpointableError,
)
from ._values import PerReplica

if TYPE_CHECKING:
    from ._strategy import Strategy

log = logging.getLogger("phalanx")

_PARTIAL = ("error", "drop", "pad")


class InputReplicationMode(enum.Enum):
    """How input pipelines map to replicas; ``PER_WORKER``: one pipeline per process."""

    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


@dataclasses.dataclass(frozen=True)
class InputOptions:
    """Options of distributed input (``tf.distribute.InputOptions``).

    Attributes:
      experimental_fetch_to_device: copy batches to the devices ahead of use
        (True), or keep them on the host (False, one process): each leaf is then a
        ``PerReplica`` of numpy arrays, replica ``i`` holding its block of rows
        (``experimental_local_results`` gives them; ``strategy.run`` takes them),
        as tf.distribute yields one host tensor per replica; with one replica,
        the numpy batch itself.
      experimental_replication_mode: ``PER_WORKER`` (one pipeline per process).
        ``PER_REPLICA`` is not supported: one pipeline feeds all of a process's
        devices.
      experimental_place_dataset_on_device: not supported (must be False).
      experimental_per_replica_buffer_size: the number of batches the
        background thread copies ahead (>= 1).
      partial_batch: what to do with a last batch smaller than the global
        batch: ``"error"`` (run it when its rows divide by the replicas, else
        raise), ``"drop"`` or ``"pad"`` (see the module docstring).
    """

    experimental_fetch_to_device: bool = True
    experimental_replication_mode: InputReplicationMode = InputReplicationMode.PER_WORKER
    experimental_place_dataset_on_device: bool = False
    experimental_per_replica_buffer_size: int = 1
    partial_batch: str = "error"

    def __post_init__(self):
        if self.experimental_replication_mode is not InputReplicationMode.PER_WORKER:
            raise DistributedValueError(
                "InputOptions(experimental_replication_mode=PER_REPLICA) is not supported: "
                "phalanx runs one input pipeline per process. Use PER_WORKER."
            )
        if self.experimental_place_dataset_on_device:
            raise DistributedValueError(
                "experimental_place_dataset_on_device=True is not supported; batches are "
                "copied ahead by a background thread (experimental_fetch_to_device=True)."
            )
        size = self.experimental_per_replica_buffer_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DistributedValueError(
                f"experimental_per_replica_buffer_size must be >= 1, got {size!r}."
            )
        if self.partial_batch not in _PARTIAL:
            raise DistributedValueError(
                f"partial_batch must be one of {_PARTIAL}, got {self.partial_batch!r}."
            )


@dataclasses.dataclass(frozen=True)
class InputContext:
    """What ``dataset_fn`` of ``distribute_datasets_from_function`` is told.

    Attributes:
      num_input_pipelines: the number of input pipelines (processes).
      input_pipeline_id: this pipeline's index, ``0 .. num_input_pipelines - 1``.
      num_replicas_in_sync: the number of replicas over all pipelines.

    Examples:
      >>> InputContext(2, 0, 8).get_per_replica_batch_size(64)
      8
    """

    num_input_pipelines: int = 1
    input_pipeline_id: int = 0
    num_replicas_in_sync: int = 1

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """The batch each replica takes from a global batch.

        Raises:
          BatchNotDivisibleError: ``global_batch_size`` does not split evenly.
        """
        n = self.num_replicas_in_sync
        if global_batch_size % n:
            raise BatchNotDivisibleError.of(global_batch_size, n, what="global batch size")
        return global_batch_size // n


class DistributedDataset:
    """A dataset whose iterators yield global batches sharded over the replicas.

    Iterate it (``for batch in dist_dataset``) or call ``iter`` for a
    ``DistributedIterator`` with ``get_next``, ``get_state``/``set_state``.
    """

    def __init__(
        self,
        strategy: Strategy,
        local_dataset: Any,
        options: InputOptions,
        *,
        per_process_batch: int | None,
    ):
        if not options.experimental_fetch_to_device and strategy._num_processes > 1:
            raise DistributedValueError(
                "InputOptions(experimental_fetch_to_device=False) is supported with one process "
                f"only, got {strategy._num_processes}: its batches are PerReplica values of host "
                "numpy arrays, one row block per replica, and a PerReplica holds every replica's "
                "value. Leave experimental_fetch_to_device=True (the default) with several "
                "processes."
            )
        self._strategy = strategy
        self._dataset = local_dataset
        self._options = options
        self._per_process_batch = per_process_batch

    @property
    def element_spec(self) -> Any:
        """The element spec of this process's dataset (its batches, before sharding)."""
        return self._dataset.element_spec

    @property
    def _dataset_for_fit(self) -> Any:
        # fit pads and masks partial batches itself, so it reads the local dataset.
        return self._dataset

    def cardinality(self) -> int:
        """The number of batches per pass (the dataset's cardinality)."""
        return self._dataset.cardinality()

    def __iter__(self) -> DistributedIterator:
        it = DistributedIterator(
            self._strategy,
            iter(self._dataset),
            self._options,
            self._per_process_batch,
            stack=self._stack,
            share_rows=(
                self._dataset._share_rows
                if isinstance(self._dataset, _ReplicaBatches | _ReplicaBatchesIterable)
                else None
            ),
        )
        it._dataset = self
        return it

    _stack: int | None = None

    def stacked(self, num_steps: int) -> DistributedDataset:
        """The same batches, ``num_steps`` at a time: arrays ``[num_steps, batch, ...]``.

        For several steps inside one compiled function (``lax.scan`` over the
        leading axis inside ``strategy.run``): the arrays are split over the
        replicas on axis 1, so each replica gets ``[num_steps, batch/N, ...]``.
        The last group holds the steps that are left (fewer than ``num_steps``).

        Raises:
          ValueError: ``num_steps`` is not a positive int.
        """
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            raise DistributedValueError(
                f"stacked(num_steps) needs a positive int, got {num_steps!r}."
            )
        out = DistributedDataset(
            self._strategy, self._dataset, self._options, per_process_batch=self._per_process_batch
        )
        out._stack = num_steps
        return out


class _DeviceBatches:
    """Turns this process's batches into global device arrays (the producer's half)."""

    def __init__(
        self,
        strategy: Strategy,
        local_iterator: Any,
        options: InputOptions,
        per_process_batch: int | None,
        stack: int | None,
        share_rows: _ShareRows | None = None,
    ):
        self._strategy = strategy
        self._it = local_iterator
        self._options = options
        self._batch = per_process_batch
        self._stack = stack
        self._share_rows = share_rows

    def __iter__(self) -> _DeviceBatches:
        return self

    def __next__(self) -> Any:
        group = []
        try:
            while len(group) < (self._stack or 1):
                batch = self._host_batch(next(self._it))
                if batch is not None:
                    group.append(batch)
        except StopIteration:
            if not group:
                raise
        return self._to_devices(group)

    def get_state(self) -> Any:
        return _get_state(self._it)

    def set_state(self, state: Any) -> None:
        self._it.set_state(state)

    def close(self) -> None:
        closer = getattr(self._it, "close", None)
        if closer is not None:
            closer()

    def _to_devices(self, group: list) -> Any:
        if self._stack is None:
            host = group[0]
        else:
            host = jax.tree.map(lambda *parts: np.stack(parts), *group)
        if not self._options.experimental_fetch_to_device:
            return host_per_replica(self._strategy, host, stacked=self._stack is not None)
        return self._strategy._global_batch(host, stacked=self._stack is not None)

    def _host_batch(self, element: Any) -> Any:
        _refuse_sparse_and_ragged(element)
        host = jax.tree.map(np.asarray, element)
        leaves = jax.tree.leaves(host)
        if not leaves or any(a.ndim == 0 for a in leaves):
            raise DistributedValueError(
                "A distributed dataset's elements must be batches (arrays with a leading batch "
                f"axis); got an element with a scalar: {_shapes(host)}. Batch the dataset "
                "with .batch(global_batch_size)."
            )
        size = batch_rows(host, what="A distributed dataset's batch")
        if self._batch is None:
            known = self._share_rows.value if self._share_rows is not None else None
            self._batch = known or size
        policy = self._options.partial_batch
        if size != self._batch:
            if policy == "drop":
                return None
            if policy == "error":
                if self._runs_as_is(size):
                    return host  # TF's short last step; run compiles it once more
                raise BatchNotDivisibleError(_partial_message(self._strategy, size, self._batch))
        _check_divisible(self._strategy, self._batch)
        if policy == "pad":
            mask = np.zeros(self._batch, np.float32)
            mask[:size] = 1.0
            host = (jax.tree.map(lambda a: _pad(a, self._batch), host), mask)
        return host

    def _runs_as_is(self, size: int) -> bool:
        """Whether a partial batch of ``size`` rows is yielded as it is under ``"error"``: one
        process, not stacked, ``size`` a multiple of the replicas (each gets ``size / N``),
        from ``experimental_distribute_dataset`` (``distribute_datasets_from_function``'s
        batches are each replica's own: they are not split again)."""
        strategy = self._strategy
        return (
            self._stack is None
            and self._share_rows is None
            and strategy._num_processes == 1
            and 0 < size < self._batch
            and size % strategy._local_replicas == 0
        )


class DistributedIterator:
    """Yields global sharded batches; copies run ahead in a bounded background thread."""

    def __init__(
        self,
        strategy: Strategy,
        local_iterator: Any,
        options: InputOptions,
        per_process_batch: int | None,
        *,
        stack: int | None = None,
        share_rows: _ShareRows | None = None,
    ):
        self._source = _DeviceBatches(
            strategy, local_iterator, options, per_process_batch, stack, share_rows
        )
        self._options = options
        self._it = self._start()

    def _start(self) -> Any:
        if not self._options.experimental_fetch_to_device:
            return self._source
        return background(self._source, self._options.experimental_per_replica_buffer_size)

    def __iter__(self) -> DistributedIterator:
        return self

    _dataset: DistributedDataset | None = None

    @property
    def element_spec(self) -> Any:
        """The element spec of the dataset iterated (``DistributedDataset.element_spec``)."""
        if self._dataset is None:
            raise AttributeError("This iterator was not made by iter(dist_dataset).")
        return self._dataset.element_spec

    def get_next(self) -> Any:
        """Returns the next global batch; raises ``StopIteration`` at the end."""
        return next(self)

    def get_next_as_optional(self) -> Optional:
        """The next global batch as an ``Optional``: empty at the end instead of
        ``StopIteration`` (``tf.distribute.DistributedIterator.get_next_as_optional``).

        Example loop, as TensorFlow's guide writes it:

            while True:
                optional = iterator.get_next_as_optional()
                if not optional.has_value():
                    break
                strategy.run(step_fn, args=(optional.get_value(),))
        """
        try:
            return Optional(next(self))
        except StopIteration:
            return Optional()

    def __next__(self) -> Any:
        return next(self._it)

    def get_state(self) -> dict:
        """The position after the last batch returned (JSON-serializable)."""
        if self._it is self._source:
            state = self._source.get_state()
        else:
            state = self._it.get_state()["child"]
        if state is None:
            raise NotCheckpointableError(
                "This dataset's iterator is not checkpointable: it has no get_state (a plain "
                "Python iterable). Use a phalanx.data.Dataset."
            )
        return state

    def set_state(self, state: dict) -> None:
        """Resumes after the batch at which ``state`` was taken.

        Call it on a fresh iterator (``it = iter(dist_dataset); it.set_state(s)``),
        before its first batch: the background thread may have read ahead.

        Raises:
          RuntimeError: batches were already taken from this iterator.
        """
        if getattr(self._it, "thread", None) is not None:
            raise NotCheckpointableError(
                "set_state must be called on a fresh iterator, before its first batch: "
                "it = iter(dist_dataset); it.set_state(state)."
            )
        self._source.set_state(state)

    def close(self) -> None:
        """Stops the background thread (it also stops when the iterator is dropped)."""
        if self._it is not self._source:
            self._it.close()


_EMPTY = object()


class Optional:
    """A value or nothing (``tf.experimental.Optional``): what ``get_next_as_optional`` returns."""

    def __init__(self, value: Any = _EMPTY):
        self._value = value

    def has_value(self) -> bool:
        """Whether there is a value (False at the end of the data)."""
        return self._value is not _EMPTY

    def get_value(self) -> Any:
        """The value.

        Raises:
          DistributedValueError: there is none (check ``has_value()`` first).
        """
        if self._value is _EMPTY:
            raise DistributedValueError(
                "This Optional has no value (the iterator reached the end of the data); check "
                "optional.has_value() before optional.get_value()."
            )
        return self._value

    def __repr__(self) -> str:
        return "Optional(<value>)" if self.has_value() else "Optional(<empty>)"


class _ReplicaBatches(Dataset):
    """Joins ``k`` consecutive elements (per-replica batches) on axis 0: a process's share.

    The last element may join fewer (the pipeline ran out): a partial share,
    which the partial-batch policy then handles. Checkpointable: each element
    consumes whole input elements, so its state is the input's.
    """

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, k: int):
        self._input, self._k = input_dataset, k
        self._share_rows = _ShareRows()

    def _iterator(self, ctx):
        return _ReplicaBatchesIterator(self._input._iterator(ctx), self._k, self._share_rows)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n < 0 else -(-n // self._k)

    def _compute_spec(self):
        def joined(spec: TensorSpec) -> TensorSpec:
            if not spec.shape:
                return spec
            lead = None if spec.shape[0] is None else spec.shape[0] * self._k
            return TensorSpec((lead, *spec.shape[1:]), spec.dtype)

        return jax.tree.map(
            joined, self._input.element_spec, is_leaf=lambda s: isinstance(s, TensorSpec)
        )


class _ShareRows:
    """The rows of a full share (``k`` times the first per-replica batch's), once known.

    Read by ``_DeviceBatches`` as the full size, so that a first share of fewer
    than ``k`` per-replica batches (a pipeline with fewer batches than replicas)
    is a partial batch, not ``k`` smaller ones.
    """

    value: int | None = None


class _ReplicaBatchesIterator(DatasetIterator):
    def __init__(self, child: Any, k: int, rows: _ShareRows):
        self.child, self.k, self.rows = child, k, rows

    def __next__(self) -> Any:
        return _join(self.child, self.k, self.rows)

    def children(self):
        return [self.child]

    def get_state(self):
        return {"child": self.child.get_state()}

    def set_state(self, state):
        self.child.set_state(state["child"])


class _ReplicaBatchesIterable:
    """``_ReplicaBatches`` for a plain iterable of batches (not checkpointable)."""

    def __init__(self, iterable: Any, k: int):
        self._iterable, self._k = iterable, k
        self._share_rows = _ShareRows()

    def __iter__(self):
        it = iter(self._iterable)
        while True:
            try:
                yield _join(it, self._k, self._share_rows)
            except StopIteration:
                return


def _join(it: Any, k: int, rows: _ShareRows) -> Any:
    """The next ``k`` elements of ``it`` joined on axis 0 (fewer at its end); ``rows``
    learns the full share's rows from the first element."""
    parts = []
    for _ in range(k):
        try:
            parts.append(jax.tree.map(np.asarray, next(it)))
        except StopIteration:
            break
    if not parts:
        raise StopIteration
    for part in parts:
        if any(np.ndim(a) == 0 for a in jax.tree.leaves(part)):
            raise DistributedValueError(
                "distribute_datasets_from_function: dataset_fn must return a dataset of "
                "per-replica batches (arrays with a leading batch axis); got an element with "
                "a scalar. Batch it with .batch(ctx.get_per_replica_batch_size(global_batch))."
            )
    if rows.value is None:
        first = batch_rows(parts[0], what="A per-replica batch")
        rows.value = None if first is None else first * k
    if len(parts) == 1:
        return parts[0]
    return jax.tree.map(lambda *a: np.concatenate(a), *parts)


def host_per_replica(strategy: Strategy, host: Any, *, stacked: bool) -> Any:
    """``host`` (numpy, one process) as tf.distribute yields it under
    ``experimental_fetch_to_device=False``: each leaf a ``PerReplica`` of host arrays, replica
    ``i`` holding the ``i``-th block of rows (axis 1 when ``stacked``); with one replica the
    batch itself (TF yields the plain tensor there)."""
    n = strategy.num_replicas_in_sync
    if n == 1:
        return host
    axis = 1 if stacked else 0

    def split(a: np.ndarray) -> PerReplica:
        rows = a.shape[axis]
        blocks = a.reshape(*a.shape[:axis], n, rows // n, *a.shape[axis + 1 :])
        return PerReplica._of(np.moveaxis(blocks, axis, 0))

    return jax.tree.map(split, host)


def batch_rows(batch: Any, *, what: str) -> int | None:
    """The rows (leading dimension) that every array of ``batch`` shares; None without arrays.

    Scalars are skipped (callers say what they do with them).

    Raises:
      DistributedValueError: two arrays have different numbers of rows (named by path).
    """
    rows = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(batch)[0]:
        shape = np.shape(leaf)
        if shape:
            rows.setdefault(shape[0], (jax.tree_util.keystr(path) or "the batch", shape))
    if len(rows) > 1:
        seen = ", ".join(f"{p} of shape {s} ({n} rows)" for n, (p, s) in rows.items())
        raise DistributedValueError(
            f"{what} is split on the leading (batch) axis of every array, so all need the "
            f"same number of rows; got {seen}. Pass the arrays of one batch (x and y of the "
            "same examples), or batch each component alike."
        )
    return next(iter(rows), None)


def _shapes(tree: Any) -> str:
    return ", ".join(
        f"{jax.tree_util.keystr(p) or 'the element'}: shape {np.shape(x)}"
        for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]
    )


def _get_state(it: Any) -> Any:
    getter = getattr(it, "get_state", None)
    return getter() if callable(getter) else None


def _pad(a: np.ndarray, size: int) -> np.ndarray:
    if a.shape[0] == size:
        return a
    return np.concatenate([a, np.zeros((size - a.shape[0],) + a.shape[1:], a.dtype)])


def _check_divisible(strategy: Strategy, per_process: int) -> None:
    local = strategy._local_replicas
    if per_process % local:
        global_batch = per_process * strategy._num_processes
        raise BatchNotDivisibleError.of(
            global_batch, strategy.num_replicas_in_sync, hint="Batch the dataset with one of them."
        )


def _partial_message(strategy: Strategy, size: int, full: int) -> str:
    return (
        f"The dataset yielded a partial batch of {size} examples after batches of {full} "
        f"(this process's share of the global batch, over {strategy.num_replicas_in_sync} "
        "replicas; from distribute_datasets_from_function, one per-replica batch for each of "
        f"its {strategy._local_replicas} replicas); a compiled step takes one shape. Batch "
        "with drop_remainder=True (and a number of batches that divides by the replicas), or pass "
        "options=phalanx.distribute.InputOptions(partial_batch='drop') to skip it, or "
        "partial_batch='pad' to get (batch, mask) pairs that count every example once."
    )


def distribute_dataset(
    strategy: Strategy, dataset: Any, options: InputOptions | None
) -> DistributedDataset:
    """``strategy.experimental_distribute_dataset``: shards by process, then splits by replica."""
    options = options or InputOptions()
    processes = strategy._num_processes
    local = dataset
    per_process = None
    if processes > 1:
        if options.partial_batch != "error":
            raise DistributedValueError(
                f"InputOptions(partial_batch={options.partial_batch!r}) is not supported with "
                f"{processes} processes: a partial global batch can split unevenly over the "
                "processes, which would then take different numbers of steps. Batch the "
                "dataset with drop_remainder=True (or use distribute_datasets_from_function)."
            )
        local, used, reason = auto_shard(
            dataset, processes, strategy._process_id, global_batches=True
        )
        local = with_input_shard(local, dataset, used.name, processes, strategy._process_id)
        if isinstance(local, Dataset):
            # Processes taking rows of one global order must agree on its unseeded shuffles.
            local._set_root_seed(_shared_seed())
        log.info(
            "phalanx: process %d of %d reads its share of the input, auto-shard policy %s",
            strategy._process_id,
            processes,
            reason,  # starts with the policy used: FILE, DATA or OFF
        )
    return DistributedDataset(strategy, local, options, per_process_batch=per_process)


def _refuse_sparse_and_ragged(element: Any) -> None:
    """Raises ``DistributedValueError`` when a batch holds sparse or ragged values."""
    from ..data import _structure as st

    if any(isinstance(a, st.COMPOSITES) for a in st.flatten(element)):
        what = "A distributed dataset (experimental_distribute_dataset)"
        raise DistributedValueError(st.dense_only_message(st.spec_of(element), what))


def _shared_seed() -> int:
    """A random seed that every process agrees on (process 0's, broadcast)."""
    from jax.experimental import multihost_utils

    from ..data import new_root_seed

    mine = np.asarray(new_root_seed() % (2**31 - 1), np.int32)
    return int(multihost_utils.broadcast_one_to_all(mine))


def distribute_datasets_from_function(
    strategy: Strategy, dataset_fn: Callable[[InputContext], Any], options: InputOptions | None
) -> DistributedDataset:
    """``strategy.distribute_datasets_from_function``: one pipeline of per-replica batches per process."""
    options = options or InputOptions()
    if not callable(dataset_fn):
        raise DistributedInputError(
            f"distribute_datasets_from_function expects a function of an InputContext, got "
            f"{type(dataset_fn).__name__}."
        )
    ctx = InputContext(strategy._num_processes, strategy._process_id, strategy.num_replicas_in_sync)
    dataset = dataset_fn(ctx)
    if not hasattr(dataset, "__iter__"):
        raise DistributedInputError(
            f"dataset_fn must return a Dataset (or an iterable of batches), got "
            f"{type(dataset).__name__}."
        )
    given = dataset
    k = strategy._local_replicas
    if k > 1:  # each local replica takes one per-replica batch per step
        if isinstance(dataset, Dataset):
            dataset = _ReplicaBatches(dataset, k)
        else:
            dataset = _ReplicaBatchesIterable(dataset, k)
    if ctx.num_input_pipelines > 1:  # each process's own dataset: its position is its own
        pipelines, pipeline = ctx.num_input_pipelines, ctx.input_pipeline_id
        dataset = with_input_shard(dataset, given, "FUNCTION", pipelines, pipeline)
    return DistributedDataset(strategy, dataset, options, per_process_batch=None)
