"""``ArrayAdapter``: executions from in-memory arrays (resident on the devices, or
gathered on the host), shuffled per pass as Keras."""

from __future__ import annotations

import math
from collections.abc import Iterator

import jax
import numpy as np

from ...errors import FitInputError
from ._execution import (
    RESIDENT_LIMIT_BYTES,
    Execution,
    _as_host,
    _class_weights,
    _leading,
    _Placer,
    padded_width,
    warn_out_of_data,
)


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
