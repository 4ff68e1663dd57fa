"""Data adapters: turn what ``fit``/``evaluate``/``predict`` are given into executions.

An *execution* is the input of one compiled program of N fused steps
(``steps_per_execution``): N global batches stacked ``[N, global_batch, ...]``,
with a mask that marks padding, so every program sees one shape (DESIGN.md,
decision 6). A short last batch is padded and masked; a short last group of
steps is filled with all-padding steps, which change nothing. A global batch
that does not split over the replicas (Keras's default 32 on 3) is padded at
its end to a multiple of them in every step (``padded_width``), masked alike.

Two adapters:

- ``ArrayAdapter`` for in-memory arrays (numpy or jax, pytrees of them). When
  the arrays fit (``RESIDENT_LIMIT_BYTES``), they are placed on the devices once
  and each execution carries only the batch indices ``[N, global_batch]``
  (``-1`` for padding); the program gathers the batches on the device. Else
  the host gathers batches with numpy fancy indexing (no Python per example).
- ``IterableAdapter`` for anything that yields batches: phalanx ``Dataset`` s,
  distributed datasets, Python generators. Batches are ``x``, ``(x,)``,
  ``(x, y)`` or ``(x, y, sample_weight)``. A ``Dataset`` whose batches index
  in-memory arrays (``from_tensor_slices`` -> ``shuffle``/``repeat``/``take``/
  ``cache`` ... -> ``batch`` [-> ``prefetch``], one process) takes the
  resident path of arrays: its arrays are placed once, and each execution
  carries the indices of the very batches the dataset yields (read by the
  dataset's own iterators, ``_index_batches.next_batch``), so element order,
  exactly-once reading and the iterator's saved position are the dataset's.
  Batches that do not index those arrays (a ``cache`` still filling, a
  ``map``) are stacked on the host as from any other iterable.

With several processes (``MultiWorkerMirroredStrategy``), every process runs
the same script, and what it passes to ``fit`` means:

- numpy arrays (and Python generators): the same full data on every process,
  as in a single-process script. Every process computes the same batch
  indices (the shuffle seed is shared) and places the rows its devices hold;
  resident data is replicated on every device of every process;
- a ``phalanx.data.Dataset``: auto-sharded first, as
  ``experimental_distribute_dataset`` does (Keras does that), so each process
  reads its share; a distributed dataset is already this process's share.
  Such batches are *process-local* shares, and each global batch is the
  processes' shares in process order (``Strategy._global_batch(...,
  stacked=True)``, ``jax.make_array_from_process_local_data``). Every process
  must yield the same number of batches per epoch (else the others wait in
  the step's all-reduce until the watchdog reports it).

Shuffling of arrays follows Keras: a new permutation every pass (from the seed
given to the adapter and the number of the epoch that starts the pass, so a
resumed run shuffles the same way; a pass is an epoch unless ``steps_per_epoch``
is given, ``ArrayAdapter._span``), and ``validation_split`` takes the last
examples before shuffling.
"""

from __future__ import annotations

import itertools
import math
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ...data import INFINITE_CARDINALITY, Dataset
from ...data import _index_batches as fp
from ...data import _structure as st
from ...data._prefetch import background
from ...distribute._placement import HostBuffer, host_array, put, put_resident
from ...errors import BatchNotDivisibleError, FitInputError, MissingTargetsError
from ._checks import check_batch_rows, check_batched
from ._read_ahead import NextEpoch

RESIDENT_LIMIT_BYTES = 2 << 30


class Execution(NamedTuple):
    """One program's worth of input.

    Attributes:
      xs: what the program scans over: stacked batches ``(x, y, sw, mask)`` or
        batch indices into ``data``, placed ``P(None, 'replica')``.
      first_step: the index, within the epoch, of the first step.
      steps: how many of the N steps hold real data.
      sizes: the number of real examples in each real step's batch.
      release: called by the loop once every device has finished the program
        that read ``xs`` (its outputs are ready): the host buffers ``xs`` was
        placed from may then be refilled. ``None`` when nothing is lent.
      input_state: the input iterator's ``get_state()`` right after this
        execution's batches (what a checkpoint saves, so that a resumed ``fit``
        reads on from there); ``None`` for arrays (their order follows from the
        seed and the epoch) and for inputs that cannot save a position.
      data: the device-resident ``(x, y, sample_weight)`` (``P()``) that ``xs``
        indexes, or None when ``xs`` holds the batches themselves; it chooses
        the compiled program (``_step.fused_program``'s ``resident``).
    """

    xs: Any
    first_step: int
    steps: int
    sizes: tuple[int, ...]
    release: Callable[[], None] | None = None
    input_state: Any = None
    data: Any = None


def padded_width(batch_size: int, num_replicas: int) -> int:
    """The rows a step holds for a global batch of ``batch_size``: the next multiple of the replicas.

    A global batch that does not split over the replicas (Keras's default 32 on
    3) is padded at its end with masked rows, as a short last batch is: every
    replica gets ``width / num_replicas`` rows, and the padding counts nowhere
    (not in losses, gradients or metrics; predictions drop it).
    """
    return -(-batch_size // num_replicas) * num_replicas


def check_global_batch(
    batch_size: int, num_replicas: int, what: str = "batch_size", hint: str = ""
) -> None:
    """Raises ``BatchNotDivisibleError`` unless ``batch_size`` splits over the replicas."""
    if batch_size % num_replicas:
        raise BatchNotDivisibleError.of(batch_size, num_replicas, what=f"global {what}", hint=hint)


def _leading(tree) -> int:
    sizes = {int(np.shape(a)[0]) for a in jax.tree.leaves(tree)}
    if len(sizes) != 1:
        raise FitInputError(
            "All input arrays (x, y, sample_weight) must have the same number of examples; "
            f"got first dimensions {sorted(sizes)}."
        )
    return sizes.pop()


def _as_host(tree):
    return jax.tree.map(host_array, tree)


class _Placer:
    """Places stacked host arrays on the strategy's mesh, split on the batch axis (axis 1).

    Without a copy: the adapters own what they place (lent buffers, fresh
    gathers) or read the user's arrays only while ``fit`` runs.

    ``stacked_put``/``replicated_put`` take the same value on every process
    (one process: a plain ``device_put``); ``local_put`` takes this process's
    share of each batch and builds the global batches from all processes' shares.
    """

    def __init__(self, strategy):
        self.strategy = strategy
        self.stacked = NamedSharding(strategy.mesh, P(None, "replica"))
        self.replicated = NamedSharding(strategy.mesh, P())
        self.multi_process = strategy._num_processes > 1

    def stacked_put(self, tree):
        # alias: what is placed here is never written while a device array reads it
        # (lent sets come back only when JAX lets go of them; gathers are fresh).
        return put(tree, self.stacked, copy=False, alias=True)

    def replicated_put(self, tree):
        return put(tree, self.replicated, copy=False)

    def resident_put(self, tree):
        """Places data that the programs index for a whole ``fit`` (replicated)."""
        return put_resident(tree, self.replicated)

    def local_put(self, tree):
        return self.strategy._global_batch(tree, stacked=True, copy=False)


class ArrayAdapter:
    """In-memory arrays, batched by index, resident on the devices when they fit."""

    def __init__(
        self,
        x,
        y=None,
        sample_weight=None,
        *,
        batch_size: int,
        steps_per_execution: int,
        strategy,
        shuffle: bool = False,
        seed: int = 0,
        steps: int | None = None,
        class_weight: dict | None = None,
        resident: bool | None = None,
    ):
        x = _as_host(x)
        y = _as_host(y) if y is not None else None
        self.num_examples = _leading((x, y) if y is not None else x)
        if self.num_examples == 0:
            raise FitInputError(
                "The input arrays hold no examples (their first dimension is 0). Pass at least "
                "one example."
            )
        if sample_weight is None:
            sw = np.ones(self.num_examples, np.float32)
        else:
            sw = np.asarray(sample_weight, np.float32).reshape(self.num_examples)
        if class_weight is not None:
            sw = sw * _class_weights(class_weight, y)
        self.batch_size = batch_size
        #: The rows of each step: ``batch_size`` padded to a multiple of the replicas.
        self.width = padded_width(batch_size, strategy.num_replicas_in_sync)
        self.n = steps_per_execution
        self.shuffle = shuffle
        self.seed = seed
        self.full_steps = math.ceil(self.num_examples / batch_size)
        self.steps_per_epoch = steps if steps is not None else self.full_steps
        # Keras 3's epoch iterator: with steps_per_epoch given, epochs read on through one
        # pass of the arrays (``_span``), and one that the pass ends short of its steps warns.
        self._steps_given = steps is not None
        #: fit's ``initial_epoch``: the passes of the arrays count from it, as Keras's iterator
        #: starts a pass there (set by ``fit``; a resumed run sets the same).
        self.first_epoch = 0
        self._placer = _Placer(strategy)
        host = (x, y if y is not None else np.zeros(self.num_examples, np.float32), sw)
        nbytes = sum(a.nbytes for a in jax.tree.leaves(host))
        self.resident = nbytes <= RESIDENT_LIMIT_BYTES if resident is None else resident
        self._host = host
        self.data = self._placer.resident_put(host) if self.resident else None
        #: Whether the input holds targets ``y`` (the zeros put in their place are none).
        self.has_targets = y is not None
        #: Whether sample weights were given (or made from class weights): an overridden
        #: train_step then gets ``(x, y, sample_weight)``.
        self.has_sample_weight = sample_weight is not None or class_weight is not None

    @property
    def global_batch_size(self) -> int:
        """The global batch of every step."""
        return self.batch_size

    def _span(self, epoch: int) -> tuple[int, int, int]:
        """Where ``epoch`` reads the arrays: ``(pass_epoch, offset, steps)``.

        As Keras 3 (``EpochIterator``): without ``steps_per_epoch`` every epoch
        is one pass. With it, one iterator goes on across epochs: an epoch takes
        the next ``steps_per_epoch`` batches of the pass, stopping early at the
        pass's end (it warns then, ``executions``), and the epoch after the one
        that reached the end starts a new pass, shuffled anew. ``pass_epoch`` is
        the epoch that began the pass (its shuffle is keyed on it), ``offset``
        the epoch's first batch within the pass. The passes count from
        ``first_epoch``, so a resumed ``fit`` reads what the whole run did.
        """
        if not self._steps_given:
            return epoch, 0, self.full_steps
        per_pass = math.ceil(self.full_steps / self.steps_per_epoch)  # epochs reading one pass
        k = (epoch - self.first_epoch) % per_pass
        offset = k * self.steps_per_epoch
        return epoch - k, offset, min(self.steps_per_epoch, self.full_steps - offset)

    def _indices(self, pass_epoch: int) -> np.ndarray:
        """One pass's batch indices ``[full_steps, width]``, ``-1`` for padding."""
        order = np.arange(self.num_examples)
        if self.shuffle:  # keys mod 2**64: any int (a negative initial_epoch) seeds numpy
            key = [self.seed % 2**64, pass_epoch % 2**64]
            order = np.random.default_rng(key).permutation(self.num_examples)
        total = self.full_steps * self.batch_size
        idx = np.full(total, -1, np.int32)  # the short last batch's missing rows
        idx[: self.num_examples] = order
        idx = idx.reshape(self.full_steps, self.batch_size)
        if self.width > self.batch_size:  # rows that even out the replicas' shares
            pad = np.full((self.full_steps, self.width - self.batch_size), -1, np.int32)
            idx = np.concatenate([idx, pad], axis=1)
        return idx

    def executions(self, epoch: int = 0, start: int = 0, input_state=None) -> Iterator[Execution]:
        """Yields the epoch's executions from step ``start`` on, in order.

        ``input_state`` is unused: the order of arrays follows from the seed and
        the epoch, so a resumed epoch skips its first ``start`` steps. An epoch
        that the arrays end short of ``steps_per_epoch`` warns at its end, with
        Keras 3's words (``warn_out_of_data``), and the next starts a new pass.
        """
        del input_state
        pass_epoch, offset, steps_now = self._span(epoch)
        idx = self._indices(pass_epoch)[offset : offset + steps_now]
        for first in range(start, steps_now, self.n):
            block = idx[first : first + self.n]
            steps = len(block)
            if steps < self.n:
                block = np.concatenate([block, np.full((self.n - steps, self.width), -1, np.int32)])
            sizes = tuple(int(s) for s in (block[:steps] >= 0).sum(axis=1))
            yield Execution(self._stack(block), first, steps, sizes, data=self.data)
        if start < steps_now < self.steps_per_epoch:
            warn_out_of_data()

    def _stack(self, block: np.ndarray):
        if self.resident and not self._placer.multi_process:
            # The indices as numpy: the program's call places them by its input sharding
            # in JAX's C++ path, ~0.1 ms less per execution than device_put (issue 24).
            return block
        if self.resident:
            return self._placer.stacked_put(block)
        safe = np.maximum(block, 0)
        x, y, sw = jax.tree.map(lambda a: a[safe], self._host)
        mask = (block >= 0).astype(np.float32)
        return self._placer.stacked_put((x, y, sw, mask))


def _class_weights(class_weight: dict, y) -> np.ndarray:
    if y is None:
        raise FitInputError("class_weight needs targets y; got y=None.")
    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(-1)
    labels = labels.reshape(labels.shape[0], -1)[:, 0].astype(np.int64)
    table = np.ones(max(int(labels.max()) + 1, max(class_weight) + 1), np.float32)
    for cls, w in class_weight.items():
        table[int(cls)] = float(w)
    return table[labels]


def split_batch(element) -> tuple[Any, Any, Any]:
    """Reads a batch as ``(x, y, sample_weight)``, Keras's way."""
    if isinstance(element, tuple):
        if len(element) == 1:
            return element[0], None, None
        if len(element) == 2:
            return element[0], element[1], None
        if len(element) == 3:
            return element
        raise FitInputError(
            "A batch is x, (x,), (x, y) or (x, y, sample_weight); got a tuple of "
            f"{len(element)} items. Put multiple inputs in a dict or an inner tuple."
        )
    return element, None, None


def _refuse_sparse_and_ragged(batch: Any) -> None:
    """Raises ``FitInputError`` for a batch that holds sparse or ragged values."""
    leaves = st.flatten(batch)
    if any(isinstance(a, st.COMPOSITES) for a in leaves):
        message = st.dense_only_message(st.spec_of(batch), "fit (and evaluate, predict)")
        raise FitInputError(message)


class IterableAdapter:
    """Batches from an iterable (Dataset, distributed dataset, generator), stacked by N."""

    def __init__(
        self,
        iterable: Iterable,
        *,
        steps_per_execution: int,
        strategy,
        process_local: bool = False,
        steps: int | None = None,
        class_weight: dict | None = None,
    ):
        self._iterable = iterable
        self.n = steps_per_execution
        self._steps_given = steps
        self.steps_per_epoch = steps if steps is not None else _known_length(iterable)
        self._placer = _Placer(strategy)
        # Batches that are this process's shares (several processes only).
        self.process_local = process_local and self._placer.multi_process
        self._num_replicas = strategy.num_replicas_in_sync
        self._shares = strategy._num_processes if self.process_local else 1
        self._class_weight = class_weight
        self._iterator: Iterator | None = None
        # Batches in one pass of the input (None: unknown or endless), and how many
        # ``_iterator`` has yielded (None: unknown, after restoring an older checkpoint).
        self._pass_length = _known_length(iterable)
        self._read: int | None = 0
        # The input ended before the steps asked for: the next epoch starts a new pass.
        self._ran_out = False
        # ``_iterator`` goes on from an earlier epoch (it may end at once: then a new pass).
        self._continued = False
        #: A one-shot input (generator, iterator) that ran out: no later epoch has data.
        self.exhausted = False
        self._one_shot = hasattr(iterable, "__next__")
        self._ahead: list = []  # a one-shot input's batch read ahead (is there another?)
        self.batch_size: int | None = None
        #: Whether some batches index arrays placed on the devices (``data``).
        self.resident = False
        self.data = None
        self._base = None  # the in-memory arrays (ArraysAccess) placed as ``data``
        self._refused = None  # arrays found unfit to place (too large, strings)
        self._pool = _BufferPool()
        #: Whether the batches hold targets ``y``; known once the first batch is read.
        self.has_targets: bool | None = None
        self.has_sample_weight = class_weight is not None  # or the first batch holds some
        #: ``fit``'s epochs while it runs (``_read_ahead.reading_ahead``): an epoch before
        #: the last starts reading the next one when it has read its own (None: never).
        self.epochs: int | None = None
        self._next_epoch: NextEpoch | None = None  # the next epoch, read ahead
        self._reading: object | None = None  # the epoch being read (an identity)
        self._lock = threading.Lock()

    @property
    def global_batch_size(self) -> int | None:
        """The global batch (every process's share); None until the first batch is read."""
        return None if self.batch_size is None else self.batch_size * self._shares

    @property
    def width(self) -> int:
        """The rows of each step (this process's share): the batch size, padded to a
        multiple of the replicas (one process; a process's share must split already)."""
        return padded_width(self.batch_size, self._num_replicas // self._shares)

    def _epoch_iterator(self, epoch: int, start: int = 0, input_state=None) -> Iterator:
        # Keras: a fresh pass per epoch, unless steps_per_epoch was given (then one
        # iterator continues across epochs) or the input is itself an iterator. A
        # phalanx Dataset's pass is chosen by the epoch number, so that a resumed run
        # (initial_epoch=k) reshuffles as the uninterrupted one did. A checkpoint's
        # ``input_state`` puts a resumed run where the saved one was (mid-epoch, or
        # an iterator that continues across epochs).
        # Keras 3 also starts a new pass when the steps used up a finite input at the
        # end of the previous epoch (steps_per_epoch or validation_steps equal to, or
        # a divisor of, a dataset's length: seed 001's test set), and after an epoch
        # that the input ended short of its steps (with its warning).
        fresh = self._steps_given is None and not self._one_shot
        used_up = not self._one_shot and (
            self._ran_out
            or (
                self._pass_length is not None
                and self._read is not None
                and self._read >= self._pass_length
            )
        )
        restore = input_state is not None and (start > 0 or not fresh)
        self._continued = self._iterator is not None and not (fresh or used_up or restore)
        if not self._continued:
            self._iterator = self._new_pass(epoch)
            self._read = input_state.get("read") if restore else 0
            if restore:
                _check_own_share(input_state)
                _set_input_state(self._iterator, input_state["iterator"])
                # The batch size the saved run learned from its first batch: a resumed
                # epoch may start at a short last batch.
                self.batch_size = self.batch_size or input_state.get("batch_size")
        self._ran_out = False
        return self._iterator

    def _new_pass(self, epoch: int) -> Iterator:
        """A new iterator over the input (a ``Dataset``'s pass chosen by the epoch number)."""
        by_epoch = getattr(self._iterable, "_iter_epoch", None)
        # A negative epoch (Keras runs initial_epoch=-1) keys its pass as an unsigned word.
        return by_epoch(epoch % 2**32) if by_epoch is not None else iter(self._iterable)

    def executions(self, epoch: int = 0, start: int = 0, input_state=None) -> Iterator[Execution]:
        """The epoch's executions from step ``start``, prepared one ahead in a background thread.

        ``start`` and ``input_state`` (an ``Execution.input_state`` of a saved
        run) resume an epoch where a checkpoint left it. Within ``fit``
        (``epochs`` set), the thread that read an epoch reads the next one's first
        execution ahead, when the input is a ``Dataset`` (``_read_ahead``); asking
        for that epoch from its start takes it, asking for anything else drops it.
        """
        with self._lock:
            ahead, self._next_epoch = self._next_epoch, None
            if ahead is not None and ahead.epoch == epoch and start == 0 and input_state is None:
                self._reading = ahead
                return ahead.adopt()
            self._reading = reading = object()
        if ahead is not None:
            ahead.drop()
        it = self._epoch_iterator(epoch, start, input_state)
        return background(self._read_on(self._generate(it, epoch, start), epoch, reading), size=1)

    def _read_on(self, executions: Iterator, epoch: int, reading: object) -> Iterator[Execution]:
        """``executions``, then the next epoch's read ahead when it may be (``_read_ahead``)."""
        yield from executions
        if (
            self.epochs is None
            or epoch + 1 >= self.epochs
            or self._one_shot
            or not hasattr(self._iterable, "_iter_epoch")  # a Dataset's next pass
        ):
            return
        with self._lock:
            if self._reading is not reading:  # fit went on without this epoch's end
                return
            ahead = NextEpoch(epoch + 1, warn_out_of_data)
            it = self._epoch_iterator(epoch + 1)
            ahead.start(
                self._read_on(self._generate(it, epoch + 1, warn=ahead.warn), epoch + 1, ahead)
            )
            self._next_epoch = ahead

    def drop_read_ahead(self) -> None:
        """Stops reading the next epoch ahead, if it was (its thread joined)."""
        with self._lock:
            ahead, self._next_epoch, self._reading = self._next_epoch, None, None
        if ahead is not None:
            ahead.drop()

    def _generate(
        self, it: Iterator, epoch: int, start: int = 0, warn: Callable[[], None] | None = None
    ) -> Iterator[Execution]:
        limit = self.steps_per_epoch
        step = start
        if limit == 0:  # a dataset of length 0
            raise _no_batches()
        source = self._batches(it)
        if self._ahead:  # a one-shot input's batch read at the end of the last epoch
            source, self._ahead = itertools.chain(self._ahead, source), []
        while limit is None or step < limit:
            want = self.n if limit is None else min(self.n, limit - step)
            batches = list(itertools.islice(source, want))
            if not batches and step == start and self._continued and not self._one_shot:
                # The iterator carried over from the last epoch ended with it (a pass of
                # unknown length used up exactly): this epoch reads a new pass.
                it = self._iterator = self._new_pass(epoch)
                self._read, self._continued = 0, False
                source = self._batches(it)
                batches = list(itertools.islice(source, want))
            if not batches and step == start == 0:
                raise _no_batches()
            if len(batches) < want:
                self._end_of_input(step + len(batches), limit, warn or warn_out_of_data)
            if not batches:
                return
            if self._read is not None:
                self._read += len(batches)
            yield self._stack(batches, step)._replace(input_state=self._input_state(it))
            step += len(batches)
            if len(batches) < want:
                return
        if self._one_shot:
            # Whether a later epoch has a batch: read one ahead, kept for that epoch.
            ahead = list(itertools.islice(source, 1))
            self._ahead = ahead
            self.exhausted = not ahead
        if self._steps_given is None and hasattr(self._iterable, "_iter_epoch"):
            # The epoch's steps came from the dataset's length: read on to its end (what
            # drop_remainder drops), so that the pipeline sees it, as a for loop would;
            # a cache() is complete only then, and later epochs read it as indices.
            next(source, None)

    def _end_of_input(self, step: int, limit: int | None, warn: Callable[[], None]) -> None:
        """The input ended after ``step`` steps of this epoch's ``limit`` (None: its length).

        As Keras 3: short of the steps asked for, a warning, and the epoch ends
        there; the next epoch reads a new pass (a one-shot input has none: fit
        stops, ``stop_after_epoch``).
        """
        if self._one_shot:
            self.exhausted = True
        if self._steps_given is not None and step < limit:
            self._ran_out = True
            warn()

    def _input_state(self, it: Iterator) -> dict | None:
        """What a checkpoint saves of the input after a batch: the iterator's state and
        the batch size (None when the iterator cannot save a position)."""
        state = _input_state(it)
        if state is None:
            return None
        saved = {"iterator": state, "batch_size": self.batch_size, "read": self._read}
        if self.process_local:  # this process's share (checkpoints gather every process's)
            saved["process"] = jax.process_index()
        return saved

    def _batches(self, it: Iterator) -> Iterator:
        """``it``'s batches; those of a ``Dataset`` that index its in-memory arrays as ``_Indices``.

        The batches are read by the dataset's own node iterators, exactly as
        ``next(it)`` reads them (``_index_batches.next_batch``), one per item
        asked for; ``it.get_state()`` stays the position after the last one.
        """
        node = None
        if hasattr(self._iterable, "_iter_epoch") and not self._placer.multi_process:
            node = fp.index_batches(it)
        # Not ``yield from it``: closing that generator would close ``it``, which may
        # continue into the next epoch.
        return it if node is None else self._read_indices(node)

    def _read_indices(self, node) -> Iterator:
        while True:
            try:
                pieces, first = fp.next_batch(node)
            except StopIteration:
                return
            one = fp.single_base(pieces)
            if one is not None and self._adopt(one[0]):
                yield _Indices(*one)
            else:
                yield fp.assemble(pieces, first_index=first)

    def _adopt(self, base) -> bool:
        """Whether ``base`` (an ``ArraysAccess``) is the one placed as ``data``; the first
        that fits (numbers, at most ``RESIDENT_LIMIT_BYTES``) is placed and kept."""
        if base is self._base:
            return True
        if self._base is not None or base is self._refused:
            return False
        host = _as_host(st.unflatten(base.tdef, base.leaves))
        x, y, sw = split_batch(host)
        fits = all(a.dtype.kind in "biuf" for a in jax.tree.leaves(host)) and (
            sum(a.nbytes for a in jax.tree.leaves(host)) <= RESIDENT_LIMIT_BYTES
        )
        if not fits:
            self._refused = base
            return False
        n = len(base)
        self.has_sample_weight = self.has_sample_weight or sw is not None
        sw = np.ones(n, np.float32) if sw is None else np.asarray(sw, np.float32).reshape(n)
        if self._class_weight is not None:
            sw = sw * _class_weights(self._class_weight, y)
        self._base_has_y = y is not None
        y = y if y is not None else np.zeros(n, np.float32)
        self.data = self._placer.resident_put((x, y, sw))
        self._base, self.resident = base, True
        return True

    def _stack_indices(self, batches: list[_Indices], first: int) -> Execution:
        """The batches' indices ``[N, batch]`` (``-1`` for padding), placed; ``data`` holds the rows."""
        sizes = [b.idx.size for b in batches]
        self._check_sizes(sizes)
        self._check_targets([(None, True if self._base_has_y else None)] * len(batches), first)
        block = np.full((self.n, self.width), -1, np.int32)
        for i, b in enumerate(batches):
            block[i, : b.idx.size] = b.idx
        placed = self._placer.stacked_put(block)  # a fresh array, never written again
        return Execution(placed, first, len(batches), tuple(sizes), data=self.data)

    def _check_sizes(self, sizes: list[int]) -> None:
        """The first batches fix the batch size; no later batch may be larger."""
        if self.batch_size is None:
            self.batch_size = max(sizes)
            if self.process_local:  # each process's share is padded on its own devices
                check_global_batch(
                    self.batch_size * self._shares, self._num_replicas, "batch size of the input"
                )
        if max(sizes) > self.batch_size:
            raise FitInputError(
                f"A batch of {max(sizes)} examples followed batches of {self.batch_size}: "
                "every batch must be at most as large as the first (compiled programs have "
                "static shapes). Batch the data with one batch size."
            )

    def _stack(self, batches: list, first: int) -> Execution:
        """Copies the batches into lent host buffers ``[N, batch, ...]``, then to the devices.

        Reusing buffers avoids allocating (and page-faulting) N fresh batches per
        execution, which costs more than the training step here. A buffer set is
        lent to one execution (``_BufferPool``) and comes back only through
        ``Execution.release``, which the loop calls once every device has
        finished the program that read it: JAX may alias the memory of a numpy
        array it is given (CPU) or copy from it asynchronously (GPU), so nothing
        writes a placed buffer before then, whatever the timing; nor before JAX
        lets go of it (``HostBuffer.free``), so on one CPU device JAX aliases the
        set instead of copying it. Sets are kept for later ``fit`` calls. Buffers hold
        JAX's canonical dtypes (``host_array``) and are handed over as new array
        objects, so JAX never converts, nor finds a copy it cached for the same
        object. Rows past a short batch repeat a real row and are masked; steps
        past the last batch keep what they held (the program skips them).
        """
        if all(isinstance(b, _Indices) for b in batches):
            return self._stack_indices(batches, first)
        batches = [b.base.gather(b.idx) if isinstance(b, _Indices) else b for b in batches]
        _refuse_sparse_and_ragged(batches[0])
        parts = [split_batch(_as_host(b)) for b in batches]
        check_batched(parts, first)
        sizes = [_leading(p[0]) for p in parts]
        self._check_sizes(sizes)
        check_batch_rows(parts, sizes, first)
        has_y = self._check_targets(parts, first)
        self.has_sample_weight = self.has_sample_weight or any(p[2] is not None for p in parts)
        buffers = None
        for i, ((x, y, sw), size) in enumerate(zip(parts, sizes, strict=True)):
            sw = np.ones(size, np.float32) if sw is None else np.asarray(sw, np.float32)
            if self._class_weight is not None:
                sw = sw.reshape(size) * _class_weights(self._class_weight, y)
            y = y if has_y else np.zeros(size, np.float32)
            row = (x, y, sw.reshape(size), np.ones(size, np.float32))
            if buffers is None:
                lent = self._pool.take(self._spec(row))
                buffers = lent.buffers
            leaves = list(zip(jax.tree.leaves(buffers), jax.tree.leaves(row), strict=True))
            for n, (buf, a) in enumerate(leaves):
                buf[i, :size] = a
                if size < self.width:
                    # Padding repeats a real example for x and y (a loss may not be finite
                    # on zeros, and NaN leaks through gradients of masked rows); the
                    # sample weight and mask (the last two leaves) are zero there.
                    buf[i, size:] = 0 if n >= len(leaves) - 2 else a[:1]
        put = self._placer.local_put if self.process_local else self._placer.stacked_put
        placed = put(jax.tree.map(np.ndarray.view, buffers))
        return Execution(placed, first, len(parts), tuple(sizes), self._pool.lender(lent))

    def _check_targets(self, parts: list, first: int) -> bool:
        """Whether these batches hold targets; once the first had some, every batch must."""
        for i, part in enumerate(parts):
            has_y = part[1] is not None
            if self.has_targets is None:
                self.has_targets = has_y
            elif self.has_targets and not has_y:  # none at first: predict, or refused by fit
                raise MissingTargetsError.of("The input", "the loss", batch=first + i)
        return bool(self.has_targets)

    def _spec(self, row):
        """The buffers' structure, shapes and dtypes for rows like ``row``; one per adapter."""

        def spec(a):
            a = np.asarray(a)
            return jax.ShapeDtypeStruct((self.n, self.width, *a.shape[1:]), a.dtype)

        return jax.tree.map(spec, row)


class _Indices(NamedTuple):
    """A batch read as its indices into in-memory arrays (``IterableAdapter._batches``)."""

    base: Any  # the ArraysAccess
    idx: np.ndarray


class _BufferPool:
    """Host buffer sets for stacked batches, each lent to one execution at a time.

    ``take`` lends a set (``_SETS``: one given back and no longer referenced by
    JAX, else a new one); the lender it returns gives the set back. The first
    ``take`` fixes the spec: every batch must have the same structure, shapes
    (but the batch size) and dtypes.
    """

    def __init__(self):
        self._spec = None
        self._lock = threading.Lock()

    def take(self, spec) -> _Set:
        with self._lock:
            if self._spec != spec:
                if self._spec is not None:
                    raise FitInputError(
                        "Every batch must have the same structure, shapes (but the batch size) "
                        f"and dtypes; the first was {self._spec}, now {spec}. Fix the input "
                        "pipeline so that its batches agree."
                    )
                self._spec = spec
        return _SETS.take(spec)

    def lender(self, lent: _Set) -> Callable[[], None]:
        """A function that gives ``lent`` back (once; later calls do nothing)."""
        pending = [lent]

        def release() -> None:
            if pending:
                _SETS.give(pending.pop())

        return release


class _Set(NamedTuple):
    key: Any
    buffers: Any  # the pytree of arrays the batches are copied into
    hosts: list  # their HostBuffers


class _SharedSets:
    """Buffer sets given back, shared by every adapter of the process (oldest first).

    A set is lent again only when JAX holds no reference to its memory
    (``HostBuffer.free``: no device array made from it is alive), so a later
    ``fit`` reuses memory that is already mapped instead of page-faulting
    fresh sets (as much as a step costs here). At most ``keep_bytes`` of sets
    are kept.
    """

    def __init__(self, keep_bytes: int = 1 << 30):
        self._back: list[_Set] = []
        self._lock = threading.Lock()
        self._keep = keep_bytes

    def take(self, spec) -> _Set:
        key = (jax.tree.structure(spec), tuple(jax.tree.leaves(spec)))
        with self._lock:
            for n, s in enumerate(self._back):
                if s.key == key and all(h.free() for h in s.hosts):
                    return self._back.pop(n)
        hosts = jax.tree.map(lambda d: HostBuffer(d.shape, d.dtype, zero=True), spec)
        return _Set(key, jax.tree.map(lambda h: h.buf, hosts), jax.tree.leaves(hosts))

    def give(self, lent: _Set) -> None:
        with self._lock:
            self._back.append(lent)
            while sum(h.buf.nbytes for s in self._back for h in s.hosts) > self._keep:
                self._back.pop(0)


_SETS = _SharedSets()


def _input_state(it) -> Any:
    """The iterator's ``get_state()``, or None when it cannot save a position."""
    from ...errors import NotCheckpointableError

    get_state = getattr(it, "get_state", None)
    if get_state is None:
        return None
    try:
        return get_state()
    except NotCheckpointableError:
        return None


def _check_own_share(input_state: dict) -> None:
    """Refuses to resume a process-local input from another process's position.

    With several processes each reads its own share of a ``Dataset``; a
    checkpoint holds every process's position (``checkpoint/_objects.py``
    gathers them) and gives each its own back, but only when restored under
    the process count that saved it: otherwise the process gets process 0's
    position, and cannot resume mid-epoch from it.
    """
    saved = input_state.get("process")
    if saved is not None and saved != jax.process_index():
        from ...errors import CheckpointError

        raise CheckpointError(
            f"Process {jax.process_index()} cannot resume its share of the input mid-epoch: "
            f"the checkpoint gives it the position of process {saved}'s share (it was saved "
            "by another number of processes, or holds one process's position only). Resume "
            "with the process count that saved it, or back up at epoch ends "
            "(BackupAndRestore(save_freq='epoch')) when each process reads its own share of "
            "a Dataset."
        )


def _set_input_state(it, state) -> None:
    set_state = getattr(it, "set_state", None)
    if set_state is None:
        from ...errors import NotCheckpointableError

        raise NotCheckpointableError(
            f"The checkpoint holds an input position, but fit's input ({type(it).__name__}) "
            "cannot restore one. Resume with the same kind of input (a phalanx Dataset)."
        )
    set_state(state)


def _no_batches() -> FitInputError:
    return FitInputError(
        "The input yielded no batches: the dataset is empty, or a generator that was used up "
        "already (a generator can be iterated once: pass a Dataset, e.g. "
        "Dataset.from_generator(make_batches, output_signature=...))."
    )


#: Keras 3's warning (``EpochIterator._interrupted_warning``), word for word.
OUT_OF_DATA = (
    "Your input ran out of data; interrupting training. Make sure that your dataset or "
    "generator can generate at least `steps_per_epoch * epochs` batches. You may need to "
    "use the `.repeat()` function when building your dataset."
)


def warn_out_of_data() -> None:
    """Warns (``UserWarning``) that the input ended before the steps asked for, as Keras 3."""
    warnings.warn(OUT_OF_DATA, UserWarning, stacklevel=2)


def stop_after_epoch(model, adapter, epochs_left: int) -> None:
    """Stops ``fit`` after this epoch when its input can give no more batches.

    A one-shot input (a generator) that ran out has nothing for the epochs
    left: ``model.stop_training`` is set and the history keeps the epochs
    done (tf.keras's rule; Keras 3 would replay the batches it peeked at).
    Inputs that can be read again start a new pass instead.
    """
    if epochs_left > 0 and getattr(adapter, "exhausted", False):
        if not adapter._ran_out:  # else it warned already, when it ran out mid-epoch
            warn_out_of_data()
        model.stop_training = True


def _known_length(iterable) -> int | None:
    card = getattr(iterable, "cardinality", None)
    if callable(card):
        n = int(card())
        return n if n >= 0 else None
    try:
        return len(iterable)
    except TypeError:
        return None


def make_adapter(
    strategy,
    x,
    y,
    sample_weight,
    *,
    batch_size,
    steps,
    shuffle,
    class_weight,
    steps_per_execution: int,
    seed: int,
    steps_name: str = "steps_per_epoch",
):
    """The adapter for what ``fit``/``evaluate``/``predict`` were given (Keras's rules).

    Raises:
      ValueError: ``y`` given with a dataset, or a bad ``batch_size`` with arrays (with a
        dataset or generator ``batch_size`` is ignored, as Keras).
      BatchNotDivisibleError: with several processes, a process's share of a ``Dataset``'s
        batch does not split over its devices (one global batch that does not split over
        the replicas is padded: ``padded_width``).
    """
    _check_steps(steps)
    _check_class_weight(class_weight)
    if is_array_like(x):
        if batch_size is None:
            batch_size = _default_batch_size(x, y, sample_weight, steps)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise FitInputError(
                f"batch_size must be a positive int (the global batch), got {batch_size!r}; "
                "e.g. batch_size=32, or leave it out."
            )
        return ArrayAdapter(
            x,
            y,
            sample_weight,
            batch_size=batch_size,
            steps_per_execution=steps_per_execution,
            strategy=strategy,
            shuffle=shuffle,
            seed=seed,
            steps=steps,
            class_weight=class_weight,
        )
    if y is not None or sample_weight is not None:
        raise FitInputError(
            f"When x is a {type(x).__name__} (a dataset or generator yielding (x, y) "
            "batches), pass y and sample_weight inside its batches, not as arguments."
        )
    # batch_size with a dataset or generator is ignored, as Keras 3 does (its
    # get_data_adapter): the batches are the input's own (issue 13).
    if steps is None:
        _check_finite(x, steps_name)
    iterable, process_local = _process_input(strategy, x, shuffle=shuffle, seed=seed)
    return IterableAdapter(
        iterable,
        steps_per_execution=steps_per_execution,
        strategy=strategy,
        process_local=process_local,
        steps=steps,
        class_weight=class_weight,
    )


def _check_finite(x, steps_name: str) -> None:
    """An endless dataset needs a step count, as tf.keras: else an epoch never ends (and
    with ``verbose=0`` nothing says so)."""
    if isinstance(x, Dataset) and int(x.cardinality()) == INFINITE_CARDINALITY:
        raise FitInputError(
            f"The dataset repeats forever (cardinality() is INFINITE_CARDINALITY, e.g. after "
            f".repeat()), so an epoch would never end: pass {steps_name}=N, the number of "
            f"batches per epoch (e.g. the dataset's size divided by the batch size), or "
            f"remove the .repeat()."
        )


def _default_batch_size(x, y, sample_weight, steps) -> int:
    """Keras's batch size for arrays given no ``batch_size``.

    ``ceil(N / steps)`` when ``steps`` (``steps_per_epoch``, or evaluate's
    ``steps``) is given, so one epoch covers the arrays once; else 32.
    """
    if steps is None:
        return 32
    present = [t for t in (x, y, sample_weight) if t is not None]
    return max(1, math.ceil(_leading(present) / steps))


def _check_steps(steps) -> None:
    """``steps_per_epoch`` (``validation_steps``, evaluate's and predict's ``steps``): None or >= 1."""
    if steps is None:
        return
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise FitInputError(
            f"steps_per_epoch must be a positive int, got {steps!r} ({type(steps).__name__}); "
            "or leave it out for one pass over the input (the same for validation_steps and "
            "evaluate's or predict's steps)."
        )


def _check_class_weight(class_weight) -> None:
    """``class_weight``: None or a dict {class index (int >= 0): weight (a number)}, as Keras."""
    if class_weight is None:
        return
    if not isinstance(class_weight, dict):
        raise FitInputError(
            f"class_weight must be a dict {{class index: weight}}, got "
            f"{type(class_weight).__name__} {class_weight!r}; e.g. class_weight={{0: 1.0, 1: "
            "5.0}. For a weight per example, pass sample_weight."
        )
    for cls, weight in class_weight.items():
        index_ok = not isinstance(cls, bool) and isinstance(cls, int | np.integer) and cls >= 0
        weight_ok = not isinstance(weight, bool | str) and isinstance(
            weight, int | float | np.integer | np.floating
        )
        if not (index_ok and weight_ok):
            raise FitInputError(
                f"class_weight maps class indices (ints >= 0) to weights (numbers); got "
                f"{cls!r}: {weight!r}. Map label values to weights, e.g. class_weight={{0: "
                "1.0, 1: 5.0}; one-hot targets count by their argmax."
            )


def is_array_like(x) -> bool:
    """Arrays, or tuples/lists/dicts of arrays (Keras's in-memory inputs)."""
    if not isinstance(x, np.ndarray | jax.Array | dict | tuple | list):
        return False
    leaves = jax.tree.leaves(x)
    return bool(leaves) and all(isinstance(a, np.ndarray | jax.Array) for a in leaves)


def _process_input(strategy, x, *, shuffle: bool = False, seed: int = 0) -> tuple[Any, bool]:
    """Returns (what to iterate, whether its batches are this process's shares).

    A distributed dataset gives its process-local dataset; under several
    processes a ``phalanx.data.Dataset`` is auto-sharded first, as
    ``experimental_distribute_dataset`` does. Anything else (a generator)
    yields the same global batches on every process.
    """
    from ...data import Dataset
    from ...utils import PyDataset
    from ._py_dataset import PyDatasetPasses

    if isinstance(x, PyDataset):
        return PyDatasetPasses(x, shuffle=shuffle, seed=seed), False
    if strategy._num_processes > 1 and isinstance(x, Dataset):
        x = strategy.experimental_distribute_dataset(x)
    local = getattr(x, "_dataset_for_fit", None)
    return (x, False) if local is None else (local, True)


def split_validation(x, y, sample_weight, split: float):
    if not 0.0 < split < 1.0:
        raise FitInputError(
            f"validation_split must be a fraction in (0, 1), got {split!r}; e.g. "
            "validation_split=0.1 holds out the last 10% of the examples."
        )
    if not is_array_like(x):
        raise FitInputError(
            "validation_split works with array inputs only (Keras's rule); for a dataset or "
            "generator, pass validation_data."
        )
    n = _leading(x)
    cut = int(n * (1.0 - split))

    def part(tree, sl):
        return None if tree is None else jax.tree.map(lambda a: np.asarray(a)[sl], tree)

    train = (part(x, slice(0, cut)), part(y, slice(0, cut)), part(sample_weight, slice(0, cut)))
    val = (part(x, slice(cut, n)), part(y, slice(cut, n)), part(sample_weight, slice(cut, n)))
    return train, tuple(v for v in val if v is not None)
