"""``IterableAdapter``: executions from anything that yields batches (a phalanx
``Dataset``, a distributed dataset, a generator), a checkpoint's input position, and
a ``Dataset``'s batches read as indices into its arrays placed once."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import jax
import numpy as np

from ...data import Dataset, background
from ...data import _index_batches as fp
from ...data import _structure as st
from ...errors import FitInputError, MissingTargetsError
from ._buffers import _BufferPool
from ._checks import check_batch_rows, check_batched
from ._execution import (
    RESIDENT_LIMIT_BYTES,
    Execution,
    _as_host,
    _class_weights,
    _leading,
    _Placer,
    check_global_batch,
    padded_width,
    split_batch,
    warn_out_of_data,
)
from ._read_ahead import NextEpoch


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
        # A phalanx Dataset: a pass per epoch number, read ahead, batches read as indices.
        self._dataset = iterable if isinstance(iterable, Dataset) else None
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
        if self._dataset is None:
            return iter(self._iterable)
        # A negative epoch (Keras runs initial_epoch=-1) keys its pass as an unsigned word.
        return self._dataset._iter_epoch(epoch % 2**32)

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
            or self._dataset is None  # a Dataset's next pass
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
        if self._steps_given is None and self._dataset is not None:
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
        if self._dataset is not None and not self._placer.multi_process:
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


def _known_length(iterable) -> int | None:
    card = getattr(iterable, "cardinality", None)
    if callable(card):
        n = int(card())
        return n if n >= 0 else None
    try:
        return len(iterable)
    except TypeError:
        return None
