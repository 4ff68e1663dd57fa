"""``TensorBoard(profile_batch=...)``: a JAX profiler trace of chosen training steps.

Keras's rule for ``profile_batch``: 0 turns profiling off, ``N`` profiles
step N, ``(start, stop)`` (or the string ``"start,stop"``) the steps from
start to stop, counted from 1 over the whole ``fit`` (across epochs). The
trace is ``jax.profiler.start_trace``/``stop_trace`` into
``<log_dir>/train``, which writes ``plugins/profile/<run>/*.xplane.pb``:
the layout TensorBoard's profile plugin reads (``pip install
tensorboard-plugin-profile`` to view it), plus a ``*.trace.json.gz`` for
Perfetto.

With ``steps_per_execution=N`` a step runs inside a compiled program of N
steps, so the trace starts before the execution that holds ``start`` and
stops after the one that holds ``stop``: whole executions are profiled.
Only process 0 traces (as it alone writes the event files).
"""

from __future__ import annotations

from typing import Any

import jax


def parse_profile_batch(profile_batch: Any) -> tuple[int, int] | None:
    """``(start, stop)`` (1-based training steps) from Keras's ``profile_batch``, or None for 0.

    Raises:
      ValueError: not 0, a positive int, a pair ``start <= stop`` of positive ints, or
        ``"start,stop"``.
    """
    value = profile_batch
    if isinstance(value, str):
        try:
            value = tuple(int(v) for v in value.split(","))
        except ValueError:
            value = None
    if isinstance(value, int) and not isinstance(value, bool):
        if value == 0:
            return None
        value = (value, value)
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 < value[0] <= value[1]
    ):
        return int(value[0]), int(value[1])
    raise ValueError(
        "TensorBoard: profile_batch must be 0 (off), a positive step N, or a pair "
        f"(start, stop) of steps with 0 < start <= stop (counted from 1); received "
        f"profile_batch={profile_batch!r}."
    )


class ProfileWindow:
    """Starts and stops one JAX profiler trace around the steps ``[start, stop]``."""

    def __init__(self, steps: tuple[int, int] | None):
        self.steps = steps
        self.active = False
        self.done = steps is None
        self.trace_dir: str | None = None

    def begin(self, first_step: int, last_step: int, trace_dir: str) -> None:
        """Before the execution of steps ``first_step..last_step`` (1-based): start if due."""
        if self.done or self.active or last_step < self.steps[0] or first_step > self.steps[1]:
            return
        try:
            jax.profiler.start_trace(trace_dir)
        except RuntimeError as e:
            raise RuntimeError(
                f"TensorBoard(profile_batch={self.steps}) could not start a JAX profiler "
                f"trace ({e}). Stop the other trace (jax.profiler.stop_trace()) or set "
                "profile_batch=0."
            ) from e
        self.active, self.trace_dir = True, trace_dir

    def end(self, steps_done: int) -> bool:
        """After an execution: stops the trace once ``stop`` is done. True when it stopped."""
        if self.active and steps_done >= self.steps[1]:
            self.close()
            return True
        return False

    def close(self) -> None:
        """Stops a running trace (training ended before ``stop``)."""
        if self.active:
            jax.profiler.stop_trace()
            self.active, self.done = False, True
