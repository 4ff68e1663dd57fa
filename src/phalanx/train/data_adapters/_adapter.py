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

import math
from typing import Any

import jax
import numpy as np

from ...data import INFINITE_CARDINALITY, Dataset
from ...distribute import DistributedDataset
from ...errors import FitInputError
from ._arrays import ArrayAdapter as ArrayAdapter
from ._buffers import _BufferPool as _BufferPool
from ._execution import RESIDENT_LIMIT_BYTES as RESIDENT_LIMIT_BYTES
from ._execution import Execution as Execution
from ._execution import _leading as _leading
from ._execution import check_global_batch as check_global_batch
from ._execution import padded_width as padded_width
from ._execution import split_batch as split_batch
from ._execution import warn_out_of_data as warn_out_of_data
from ._iterable import IterableAdapter as IterableAdapter


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
    from ...utils import PyDataset
    from ._py_dataset import PyDatasetPasses

    if isinstance(x, PyDataset):
        return PyDatasetPasses(x, shuffle=shuffle, seed=seed), False
    if strategy._num_processes > 1 and isinstance(x, Dataset):
        x = strategy.experimental_distribute_dataset(x)
    if isinstance(x, DistributedDataset):
        return x._dataset_for_fit, True
    return x, False


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
