"""Running executions: at most two in flight, the watchdog told, results fetched in order.

``pipelined`` is the one loop behind ``fit``, ``evaluate`` and ``predict``: it
dispatches execution ``k + 1`` before fetching the results of ``k``, so the
devices always have the next program queued while the host reads logs and
calls callbacks, and never more than two are in flight (DESIGN.md: unbounded
dispatch deadlocks XLA's CPU collectives). Once an execution's results are
fetched and all its outputs are ready on every device, the loop calls its
``release``: the host buffers it was placed from (``_adapter.IterableAdapter``
lends them) may be refilled from then on, and not before.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
from jax.experimental import multihost_utils

from ..callbacks import Callback
from ..cluster import _agree, watchdog

log = logging.getLogger("phalanx")

FIRST_EXECUTION_FACTOR = 5  # the watchdog's deadline for an execution that may compile


def pipelined(
    executions: Iterable,
    dispatch: Callable[[Any], Any],
    fetch: Callable[[Any, Any], Any],
    *,
    phase: str,
    should_stop: Callable[[], bool] | None = None,
    ahead: bool = True,
) -> Iterator[tuple[Any, Any]]:
    """Yields ``(execution, fetch(execution, dispatch(execution)))`` in order.

    ``dispatch`` starts an execution's program and returns its device results;
    ``fetch`` brings them to the host. With ``ahead``, execution ``k`` is
    fetched after ``k + 1`` is dispatched; without, right after its own
    dispatch (when a callback may stop training or read the weights after a
    batch, as Keras does: then nothing runs past that batch). When
    ``should_stop()`` turns true, no more executions start; the last
    dispatched one is still fetched. As in Keras, it is read after each
    execution, not before the first (a stop set in ``on_epoch_begin`` lets
    one execution run).
    """
    pending = None
    with _watched(phase) as beat:
        for k, ex in enumerate(executions):
            if k and should_stop is not None and should_stop():
                break
            beat(ex.first_step, ex.steps)
            result = dispatch(ex)
            if pending is not None:
                yield pending[0], _finish(fetch, *pending)
            pending = (ex, result)
            if not ahead:
                yield pending[0], _finish(fetch, *pending)
                pending = None
        if pending is not None:
            yield pending[0], _finish(fetch, *pending)


def _finish(fetch: Callable[[Any, Any], Any], ex, result) -> Any:
    """Fetches an execution's results, then gives back what its input borrowed.

    The fetch may read one device's shard of a replicated value; the release
    waits for every output on every device, so no device still reads the input.
    """
    fetched = fetch(ex, result)
    release = getattr(ex, "release", None)
    if release is not None:
        jax.block_until_ready(result)
        release()
    return fetched


def may_act_per_batch(cbs, kind: str) -> bool:
    """Whether a user callback overrides a batch-end hook (it may stop or read the model).

    Callbacks whose batch hooks only record the logs they are given say so with
    ``batch_hooks_read_only_logs = True`` (``History``, ``ProgbarLogger``,
    ``TensorBoard``; and ``BackupAndRestore``, which saves the model's state with
    the position that moves with it, consistent whichever execution has been
    dispatched); anything else that defines ``on_train_batch_end`` or
    ``on_batch_end`` (``on_test_batch_end`` in evaluation, ``on_predict_batch_end`` in
    prediction) makes the loop synchronous, so that nothing runs past the
    batch it acted on and the batch hooks come in Keras's order.
    """
    if cbs is None:
        return False

    hooks = {
        "train": ("on_train_batch_end", "on_batch_end"),  # Keras: on_batch_end counts too
        "predict": ("on_predict_batch_end",),
    }.get(kind, ("on_test_batch_end",))

    def overrides(cb) -> bool:
        for hook in hooks:
            base = getattr(Callback, hook)
            fn = getattr(cb, hook, base)  # an instance attribute too (LambdaCallback)
            if getattr(fn, "__func__", fn) is not base:
                return True
        return False

    return any(
        overrides(cb)
        for cb in getattr(cbs, "callbacks", ())
        if not getattr(cb, "batch_hooks_read_only_logs", False)
    )


def in_step(executions: Iterable, phase: str) -> Iterator:
    """The executions, stopped where the first process runs out (several processes).

    Per-process inputs (a distributed dataset's shares) may yield different
    numbers of batches; a process that ran a step the others never start would
    wait forever in its collectives. Before each execution the processes agree
    (``cluster._agree``, no device collective) that all have one; when some do
    not, every process stops there, and the log says who had more.
    """
    series = _agree.new_round()
    it = iter(executions)
    for k in itertools.count():
        ex = next(it, None)
        have = _agree.all_have(f"{series}/{k}", ex is not None, timeout_s=watchdog.timeout)
        if not all(have):
            if any(have):
                more = [p for p, h in enumerate(have) if h]
                log.warning(
                    "phalanx: %s: processes %s had more batches than the others; all stop "
                    "after %d executions so that they stay in step. Give every process "
                    "the same number of batches (e.g. batch with drop_remainder=True, files "
                    "of equal length).",
                    phase,
                    more,
                    k,
                )
            return
        yield ex


@contextlib.contextmanager
def _watched(kind: str):
    """Yields ``beat(step, steps)`` for a loop of executions; stops the watchdog at its end.

    ``phalanx.cluster.watchdog`` (on in multi-process runs) then reports a
    process whose next execution does not start within the deadline. An
    execution of a count of real steps not seen yet in the loop may compile (the
    first; a short last one: ``_step.run_steps`` compiles a program per count),
    so it gets ``FIRST_EXECUTION_FACTOR`` times the deadline.
    """
    seen: set[int] = set()

    def beat(step: int, steps: int) -> None:
        new = steps not in seen
        seen.add(steps)
        timeout = watchdog.timeout * FIRST_EXECUTION_FACTOR if new else None
        watchdog.beat(step=step, phase=kind, timeout=timeout)

    try:
        yield beat
    finally:
        watchdog.stop()


def unpad_predictions(ex, out, adapter):
    """This execution's predictions on the host, padding removed, one pytree per real step.

    With several processes the outputs (and, for process-local batches whose
    padding sits inside each process's share, the mask) are gathered to every
    process first.
    """
    if not getattr(adapter, "process_local", False) or jax.process_count() == 1:
        host = _fetch(out)
        return [jax.tree.map(lambda a, i=i, s=s: a[i, :s], host) for i, s in enumerate(ex.sizes)]
    host, mask = _fetch((out, ex.xs[-1]))
    return [jax.tree.map(lambda a, i=i: a[i][mask[i] > 0], host) for i in range(ex.steps)]


def _fetch(tree):
    """``jax.device_get``, gathering arrays split over several processes first."""
    if jax.process_count() > 1:
        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)
