"""``Dataset.interleave``: tf.data's cycle/block order.

``cycle_length`` input elements are open at once, each mapped to a dataset
by ``map_func``; the iterator takes ``block_length`` consecutive elements from
the dataset in the current slot of the cycle, then moves to the next slot.
An exhausted dataset frees its slot and the cycle moves on; an empty slot is
filled with the next input element when the cycle reaches it. This is
TensorFlow's ``InterleaveDatasetOp`` order. Without ``num_parallel_calls``
the inner datasets are read in the consumer thread; with it, each one runs
ahead in its own reader thread, in the same order (``_parallel_interleave.py``).

The state saves, for every open slot, the input's state before its element
was read and the inner iterator's state: a restore re-reads that one input
element, calls ``map_func`` again and restores the inner iterator.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import DatasetArgumentError
from ..io import _record_blocks as rb
from . import _structure as st
from ._dataset import Dataset, check_positive
from ._iterator import DatasetIterator, IterCtx, _safe_state, _unwrap_state
from ._map import _EMPTY, first_element
from ._options import AUTOTUNE, UNKNOWN_CARDINALITY


class InterleaveDataset(Dataset):
    """``Dataset.interleave``."""

    _input_attrs = ("_input",)

    def __init__(
        self,
        input_dataset: Dataset,
        map_func,
        cycle_length,
        block_length,
        num_parallel_calls=None,
        deterministic=None,
    ):
        self._parallel = _check_parallel(num_parallel_calls)
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = _autotuned_cycle_length(num_parallel_calls)
        self._input, self._fn = input_dataset, map_func
        self._cycle = check_positive("cycle_length", cycle_length, "interleave")
        self._block = check_positive("block_length", block_length, "interleave")
        if deterministic not in (None, True, False):
            raise DatasetArgumentError(
                f"interleave: deterministic must be None, True or False, got {deterministic!r}. "
                "Leave it None (the order of the sequential interleave)."
            )

    def _inner(self, element: Any, ctx: IterCtx, index: int) -> DatasetIterator:
        ds = st.call_unpacked(self._fn, element)
        if not isinstance(ds, Dataset):
            raise DatasetArgumentError(
                f"interleave: map_func must return a phalanx.data.Dataset, got {type(ds).__name__}. "
                "Wrap arrays with Dataset.from_tensor_slices(...)."
            )
        return ds._iterator(ctx.child(index))

    def _iterator(self, ctx):
        if self._parallel:
            from ._parallel_interleave import ParallelInterleaveIterator

            return ParallelInterleaveIterator(self, ctx)
        return InterleaveIterator(self, ctx)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _compute_spec(self):
        x = first_element(self._input)
        if x is _EMPTY:
            return None
        return st.call_unpacked(self._fn, x).element_spec


class _NotRecords(Exception):
    """An inner iterator is not a record source (``_record_blocks.py``); nothing was read."""


def _take_record(it: DatasetIterator) -> Any:
    """The next record of ``it`` as ``bytes``; StopIteration at its end."""
    records = rb.next_records(it, 1)
    if records is None:
        raise _NotRecords
    if records.size == 0:
        raise StopIteration
    return records[0]


def _schedulable_cores() -> int:
    """TensorFlow's ``port::MaxParallelism()``: the cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _autotuned_cycle_length(num_parallel_calls: Any) -> int:
    """``cycle_length=None`` (AUTOTUNE) as TF 2.21: the schedulable cores without
    ``num_parallel_calls``; ``min(num_parallel_calls, cores)`` with a number; with AUTOTUNE,
    ``ceil(cores / 3)`` (each open element has 2 more prefetching behind it)."""
    cores = _schedulable_cores()
    if num_parallel_calls is None:
        return cores
    if num_parallel_calls == AUTOTUNE:
        return -(-cores // 3)
    return min(int(num_parallel_calls), cores)


def _check_parallel(num_parallel_calls: Any) -> bool:
    """True when ``num_parallel_calls`` asks for reader threads (an int >= 1 or AUTOTUNE)."""
    if num_parallel_calls is None:
        return False
    if num_parallel_calls == AUTOTUNE:
        return True
    check_positive("num_parallel_calls", num_parallel_calls, "interleave")
    return True


class InterleaveIterator(DatasetIterator):
    """The cycle over the open inner iterators; reads them in the consumer thread (internal)."""

    def __init__(self, ds: InterleaveDataset, ctx: IterCtx):
        self.ds, self.ctx = ds, ctx
        self.input = ds._input._iterator(ctx)
        self.slots: list[dict | None] = [None] * ds._cycle
        self.cycle = self.block = 0
        self.end = False
        self.opened = 0  # input elements read so far
        self.records_ok = True  # no inner dataset met so far is other than a record source

    def _advance(self) -> None:
        self.block = 0
        self.cycle = (self.cycle + 1) % len(self.slots)

    def __next__(self):
        return self._step(next)

    def next_records(self, k: int) -> np.ndarray | None:
        """The next ``1..k`` elements as records (``_record_blocks.py``); None when an inner
        dataset is not a record source. Whole rounds of the cycle are taken at once."""
        if not self.records_ok:
            return None
        parts, single, got = [], [], 0
        try:
            while got < k:
                block = self._rounds(k - got)
                if block is None:
                    single.append(self._step(_take_record))
                    got += 1
                    continue
                if single:
                    parts.append(rb.objects(single))
                    single = []
                parts.append(block)
                got += len(block)
        except StopIteration:
            pass
        except _NotRecords:
            self.records_ok = False
        if single:
            parts.append(rb.objects(single))
        if not parts:
            return None if not self.records_ok else rb.EMPTY
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _rounds(self, limit: int) -> np.ndarray | None:
        """As many whole rounds of the cycle as every open slot holds records for (and
        ``limit`` allows), interleaved; None when not even one (or mid-block).

        A round starts at the current slot and takes ``block_length`` records
        from each open slot in turn; after whole rounds the cycle is where it
        was. Empty slots are passed over only once the input has ended (before,
        the next one would be opened in that slot).
        """
        if self.block:
            return None
        c, b = len(self.slots), self.ds._block
        its = []
        for i in range(c):
            slot = self.slots[(self.cycle + i) % c]
            if slot is None:
                if not self.end:
                    return None
                continue
            if not hasattr(slot["it"], "records_ahead"):
                return None
            its.append(slot["it"])
        if not its or limit < b * len(its):
            return None
        ahead = [it.records_ahead() for it in its]
        rounds = min(min(map(len, ahead)) // b, limit // (b * len(its)))
        if rounds == 0:
            return None
        out = np.empty((rounds, len(its), b), object)
        for j, (it, records) in enumerate(zip(its, ahead, strict=True)):
            out[:, j, :] = records[: rounds * b].reshape(rounds, b)
            it.skip_records(rounds * b)
        return out.reshape(-1)

    def _step(self, take):
        """The next element of the cycle, read from its slot's iterator by ``take``."""
        while not self.end or any(s is not None for s in self.slots):
            slot = self.slots[self.cycle]
            if slot is not None:
                try:
                    x = take(slot["it"])
                except StopIteration:
                    slot["it"].close()
                    self.slots[self.cycle] = None
                    self._advance()
                    continue
                self.block += 1
                if self.block == self.ds._block:
                    self._advance()
                return x
            if self.end:
                self._advance()
                continue
            slot = self._open_next()
            if slot is None:
                self.end = True
                continue
            self.slots[self.cycle] = slot
            self.opened += 1
        raise StopIteration

    def _open_next(self) -> dict | None:
        """The slot of the next input element; None at the end of the input."""
        snap = _safe_state(self.input)
        try:
            element = next(self.input)
        except StopIteration:
            return None
        it = self.ds._inner(element, self.ctx, self.opened)
        return {"it": it, "input_state": snap, "index": self.opened}

    def _wrap(self, it: DatasetIterator) -> Any:
        """The iterator a slot reads (here ``it`` itself; a reader thread in the parallel one)."""
        return it

    def children(self):
        return [self.input] + [s["it"] for s in self.slots if s is not None]

    def get_state(self):
        slots = [
            None
            if s is None
            else {
                "input_state": _unwrap_state(s["input_state"]),
                "index": s["index"],
                "inner": s["it"].get_state(),
            }
            for s in self.slots
        ]
        return {
            "input": self.input.get_state(),
            "slots": slots,
            "cycle": self.cycle,
            "block": self.block,
            "end": self.end,
            "opened": self.opened,
        }

    def set_state(self, state):
        self.close()
        self.input = self.ds._input._iterator(self.ctx)
        self.input.set_state(state["input"])
        self.cycle, self.block = int(state["cycle"]), int(state["block"])
        self.end, self.opened = bool(state["end"]), int(state["opened"])
        self.slots = [self._restore_slot(s) for s in state["slots"]]

    def _restore_slot(self, s: dict | None) -> dict | None:
        if s is None:
            return None
        reader = self.ds._input._iterator(self.ctx)
        reader.set_state(s["input_state"])
        element = next(reader)
        reader.close()
        it = self.ds._inner(element, self.ctx, int(s["index"]))
        it.set_state(s["inner"])
        return {"it": self._wrap(it), "input_state": s["input_state"], "index": int(s["index"])}
