"""The one key-value module: every use of JAX's coordination service (its private client).

Agreement between processes (``_agree``), the watchdog's reports and the
barriers of ``save_on_chief`` all go through here, so there is one place that
knows JAX's private API, one place that bounds every wait, and one place that
cleans up: ``gather`` deletes its keys once every process has read the result,
so nothing accumulates on the coordinator over a long job.

``gather`` costs O(processes) key-value operations per call, not O(processes^2):
each process writes its value, process 0 alone reads them all and writes one
summary, and the others read that summary.

With no multi-process cluster (``client()`` is None) every function is a no-op
or answers for this process alone.
"""

from __future__ import annotations

import contextlib
import time

from jax._src.distributed import global_state

from ..errors import ProcessesMissingError

PREFIX = "phalanx/"
_MISSING = "\x00missing:"


def client():
    """JAX's coordination-service client, or None outside a multi-process job."""
    return global_state.client


def process_id() -> int:
    """This process's id in the job (0 outside one)."""
    return int(global_state.process_id) if global_state.client is not None else 0


def num_processes() -> int:
    """Processes in the job (1 outside one)."""
    return int(global_state.num_processes) if global_state.client is not None else 1


def put(key: str, value: str, *, overwrite: bool = False) -> None:
    """Writes ``value`` at ``PREFIX + key``."""
    c = client()
    if c is not None:
        c.key_value_set(PREFIX + key, value, allow_overwrite=overwrite)


def values_under(directory: str) -> list[str]:
    """Every value stored under ``PREFIX + directory`` (no wait)."""
    c = client()
    if c is None:
        return []
    return [value for _, value in c.key_value_dir_get(PREFIX + directory)]


def delete(key: str) -> None:
    """Deletes ``PREFIX + key`` and every key under it (errors ignored: cleanup only)."""
    c = client()
    if c is not None:
        with contextlib.suppress(Exception):
            c.key_value_delete(PREFIX + key)


def barrier(name: str, timeout_s: float) -> None:
    """Waits until every process reached ``name``; raises JAX's error after ``timeout_s``."""
    c = client()
    if c is not None:
        c.wait_at_barrier(PREFIX + name, int(timeout_s * 1000))


def gather(tag: str, value: str, *, timeout_s: float, what: str) -> list[str]:
    """Every process's ``value`` for ``tag``, in process order; the keys are deleted after.

    Every process calls it with the same ``tag`` (a fresh one per call).

    Raises:
      ProcessesMissingError: some processes did not answer within ``timeout_s``
        (named); ``what`` says what they were asked, for the message.
    """
    c = client()
    if c is None:
        return [value]
    me, n = process_id(), num_processes()
    base = f"{PREFIX}gather/{tag}"
    c.key_value_set(f"{base}/{me}", value)
    deadline = time.monotonic() + timeout_s
    if me == 0:
        values, missing = _collect(c, base, n, deadline)
        summary = _MISSING + ",".join(map(str, missing)) if missing else _join(values)
        c.key_value_set(f"{base}/all", summary)
    else:
        try:
            summary = c.blocking_key_value_get(f"{base}/all", _ms(deadline))
        except Exception:  # DEADLINE_EXCEEDED, or the coordinator is gone
            summary = _MISSING + "0"
    if summary.startswith(_MISSING):
        missing = [int(p) for p in summary[len(_MISSING) :].split(",")]
        raise ProcessesMissingError(
            f"Process {me} waited {timeout_s:.0f} s for processes {missing} to report "
            f"{what} ({tag}); they never did. They may be stuck or dead: see their output "
            "(phalanx launch prefixes it with [i])."
        )
    # The last process to read the summary deletes the whole round.
    with contextlib.suppress(Exception):
        if c.key_value_increment(f"{base}/read", 1) == n:
            c.key_value_delete(base)
    return _split(summary, n)


def _collect(c, base: str, n: int, deadline: float) -> tuple[list[str], list[int]]:
    values, missing = [], []
    for p in range(n):
        try:
            values.append(c.blocking_key_value_get(f"{base}/{p}", _ms(deadline)))
        except Exception:
            missing.append(p)
            values.append("")
    return values, missing


def _ms(deadline: float) -> int:
    return max(1, int((deadline - time.monotonic()) * 1000))


def _join(values: list[str]) -> str:
    return "\x1f".join(values)


def _split(summary: str, n: int) -> list[str]:
    parts = summary.split("\x1f")
    if len(parts) != n:
        raise ProcessesMissingError(f"gather: expected {n} answers, got {len(parts)}.")
    return parts
