"""Background threads: one helper starts them all, and stops them before the interpreter ends.

A thread still inside a native call (a ``jax.device_put``, a key-value RPC) when
the interpreter finalizes is ended while it unwinds through C++, which aborts
the process after the script's work is done ("terminate called ... FATAL:
exception not rethrown", status 134). Any phalanx thread can be in one: the
producers of ``Dataset.prefetch``, of distributed datasets and of ``fit``'s
streamed input copy batches to the devices.

So every background thread is started by ``start_thread`` with a
``threading.Event`` that its loop checks between units of work, and one exit
hook stops them all: it sets every event, calls the thread's ``wake`` (to
unblock a queue it waits on) and joins the threads, ``EXIT_JOIN_S`` in all.
The hook is registered with ``threading._register_atexit`` (as
``concurrent.futures`` does): it runs first thing in interpreter shutdown, in
the main thread, before any ``atexit`` handler, so before JAX's own handlers
tear its runtime down, whatever order the modules were imported or first used
in. (Two earlier attempts, reverted, used ``atexit`` handlers: their order
against JAX's handlers, some registered at first use, decided whether the
producers stopped before or after the runtime they were calling into.)

Only stdlib here: every layer may use it.

A thread that is still running after ``EXIT_JOIN_S`` (a user generator blocked
on a socket) is named on stderr and left behind; the interpreter then ends as
it would have.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

EXIT_JOIN_S = 10.0

_lock = threading.Lock()
_live: dict[threading.Thread, tuple[threading.Event, Callable[[], None] | None]] = {}
_exiting = False


def start_thread(
    target: Callable[..., Any],
    args: tuple = (),
    *,
    name: str,
    stop: threading.Event,
    wake: Callable[[], None] | None = None,
) -> threading.Thread:
    """Starts ``target(*args)`` in a daemon thread that the exit hook stops (sets ``stop``).

    Args:
      target: the thread's function; it must return soon after ``stop`` is set
        (check it between units of work; wait on queues with a timeout).
      args: its arguments.
      name: the thread's name (shown if it does not stop at exit).
      stop: the event that tells it to stop.
      wake: called after ``stop`` is set at exit, to unblock the thread sooner.

    Returns:
      The started thread.

    Raises:
      RuntimeError: the interpreter is already exiting.
    """

    def run() -> None:
        try:
            target(*args)
        finally:
            with _lock:
                _live.pop(threading.current_thread(), None)

    thread = threading.Thread(target=run, name=name, daemon=True)
    with _lock:
        if _exiting:
            raise RuntimeError(
                f"phalanx: cannot start the background thread {name!r}: the interpreter is "
                "exiting. Iterate datasets before the script ends, not from exit handlers."
            )
        _live[thread] = (stop, wake)
    thread.start()
    return thread


def live_threads() -> list[threading.Thread]:
    """The background threads started by ``start_thread`` that have not ended yet."""
    with _lock:
        return list(_live)


def stop_all(timeout: float = EXIT_JOIN_S) -> list[threading.Thread]:
    """Stops every background thread and waits up to ``timeout`` s in all for them to end.

    Returns:
      The threads still running after ``timeout``.
    """
    with _lock:
        entries = list(_live.items())
    for _thread, (stop, wake) in entries:
        stop.set()
        if wake is not None:
            with contextlib.suppress(Exception):  # best effort: the join below still waits
                wake()
    deadline = time.monotonic() + timeout
    for thread, _ in entries:
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t, _ in entries if t.is_alive()]


def _at_exit() -> None:
    global _exiting
    with _lock:
        _exiting = True
    left = stop_all()
    if left:
        names = ", ".join(t.name for t in left)
        print(
            f"phalanx: background thread(s) {names} still running {EXIT_JOIN_S:.0f} s after "
            "exit began (blocked in a user function?); the process may abort while it ends. "
            "Close iterators (it.close()) or make the source return.",
            file=sys.stderr,
        )


threading._register_atexit(_at_exit)
