"""The watchdog: a step that runs past its deadline ends the process, saying where it was.

A training loop calls ``watchdog.beat(step=..., phase=...)`` as it goes (the
fit loop does it for you). A background thread checks that the next beat
comes within the deadline; when it does not, it prints which process waits,
in which step and phase, what the other processes last reported, and where
this process's main thread is, then exits with status 3 (``os._exit``) so
that ``phalanx launch`` ends the job. Without it, a process that skipped a
collective leaves the others waiting forever.

Reports are shared two ways, whichever exist: JAX's key-value store
(``jax.distributed``'s client, keys ``phalanx/watchdog/<process>``), which
reaches every machine; and files in ``PHALANX_RUN_DIR`` (a temporary folder
that ``phalanx launch`` creates for each job), which work even when JAX's
coordinator is unreachable. The thread publishes at most once a second,
never from ``beat()`` itself, so a beat costs a few microseconds.

On by default only in multi-process runs (``jax.distributed`` initialized
with more than one process); ``PHALANX_WATCHDOG_TIMEOUT=S`` sets the
deadline (0 turns it off), as does ``watchdog.configure(timeout=S)``. Call
``watchdog.stop()`` when the loop ends, or the first long pause after it
would look like a stuck step.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass

from .._threads import start_thread
from . import _kv

TIMEOUT_ENV = "PHALANX_WATCHDOG_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
EXIT_CODE = 3
_KEY_DIR = "watchdog/"  # under _kv.PREFIX
_INTERVAL_S = 1.0
_KV_WAIT_S = 2.0


@dataclass(frozen=True)
class Report:
    """What one process last said: its step and phase, and when (``time.time()``)."""

    process: int
    step: int | None
    phase: str
    time: float
    deadline: float | None  # seconds allowed until the next beat; None when stopped

    def describe(self, now: float) -> str:
        """One line such as ``step 12, phase 'train', 0.4 s ago``."""
        where = "stopped (not in a step)" if self.deadline is None else f"phase {self.phase!r}"
        step = "" if self.step is None else f"step {self.step}, "
        return f"{step}{where}, {max(0.0, now - self.time):.1f} s ago"


class Watchdog:
    """Notices a step that runs past its deadline and ends the process with a report.

    Use the module-level instance ``phalanx.cluster.watchdog``.

    Example:
      >>> from phalanx.cluster import watchdog
      >>> for step in range(3):
      ...     watchdog.beat(step=step, phase="train")  # a no-op in one process
      >>> watchdog.stop()
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()  # set by the exit hook of phalanx._threads
        self._timeout: float | None = None  # set by configure()
        self._publishing = threading.Lock()  # one publish at a time (thread or stop())
        self._enabled: bool | None = None  # set by configure(); None: decide from the run
        self._last: Report | None = None
        self._published: Report | None = None

    # The training loop's side -------------------------------------------------------

    def configure(self, *, timeout: float | None = None, enabled: bool | None = None) -> None:
        """Sets the deadline and whether the watchdog runs.

        Args:
          timeout: seconds allowed between two beats (default
            ``PHALANX_WATCHDOG_TIMEOUT`` or 120). Setting it enables the watchdog.
          enabled: force on or off; None decides from the run (on with more
            than one process, or when a timeout was set).
        """
        if timeout is not None and timeout <= 0:
            raise ValueError(f"watchdog timeout must be > 0 seconds, got {timeout!r}.")
        self._timeout = timeout
        self._enabled = True if (timeout is not None and enabled is None) else enabled

    @property
    def enabled(self) -> bool:
        """True when beats are watched in this process."""
        if self._enabled is not None:
            return self._enabled
        env = _env_timeout()
        if env is not None:
            return env > 0
        return _num_processes() > 1

    @property
    def timeout(self) -> float:
        """Seconds allowed between two beats."""
        env = _env_timeout()
        return self._timeout or (env if env else DEFAULT_TIMEOUT)

    def beat(self, step: int | None = None, phase: str = "step", *, timeout: float | None = None):
        """Says "still going": this process is now in ``step`` and ``phase``.

        Args:
          step: the step number about to run (None when there is none).
          phase: what the process is about to do (``"train"``, ``"eval"``,
            ``"checkpoint"``, ``"compile"``...), shown in the reports.
          timeout: the deadline for this phase only, e.g. longer for the first,
            compiling step (default: ``timeout``).
        """
        if not self.enabled:
            return
        deadline = float(timeout) if timeout is not None else self.timeout
        self._last = Report(_process_id(), step, str(phase), time.time(), deadline)
        if self._thread is None:
            self._start()

    def stop(self) -> None:
        """Stops watching until the next beat (call it when the loop ends).

        The final report is published here, in the caller's thread, after any
        publish in flight: a program that exits right after its last loop must
        not leave the watchdog thread inside the key-value client (a thread that
        dies inside a native call at interpreter exit aborts the process).
        """
        last = self._last
        if last is not None:
            stopped = Report(last.process, last.step, last.phase, time.time(), None)
            self._last = stopped
            if self._publishing.acquire(timeout=_KV_WAIT_S):
                try:
                    _bounded(lambda: _publish(stopped))
                    self._published = stopped
                finally:
                    self._publishing.release()

    def reports(self) -> dict[int, Report]:
        """Returns the other processes' last reports that can be read now."""
        mine = _process_id()
        return {p: r for p, r in _read_reports().items() if p != mine}

    # The thread's side -------------------------------------------------------------

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = start_thread(self._run, name="phalanx-watchdog", stop=self._stop)

    def _run(self) -> None:
        while not self._stop.wait(_INTERVAL_S):
            last = self._last
            if last is None:
                continue
            # The deadline first: publishing talks to the coordinator, which may be the
            # very thing that hangs (and the write is bounded too, in _publish).
            if last.deadline is not None and time.time() - last.time > last.deadline:
                self._fire(last)
            if last is not self._published and self._publishing.acquire(blocking=False):
                try:
                    if self._last is last:  # stop() may have published a newer one meanwhile
                        _publish(last)
                        self._published = last
                finally:
                    self._publishing.release()

    def _fire(self, last: Report) -> None:  # pragma: no cover - exercised in a subprocess test
        now = time.time()
        text = format_report(last, self.reports(), now=now, num_processes=_num_processes())
        stack = _main_thread_stack()
        print(
            f"{stack}\n{text}", file=sys.stderr, flush=True
        )  # the report last: launchers show tails
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(EXIT_CODE)


watchdog = Watchdog()


def format_report(
    mine: Report, others: dict[int, Report], *, now: float, num_processes: int
) -> str:
    """Returns the watchdog's message: who waits, on what, and what the others last said.

    Example:
      >>> mine = Report(1, 12, "train", time=100.0, deadline=30.0)
      >>> print(format_report(mine, {0: Report(0, 13, "train", 129.5, 30.0)}, now=131.0,
      ...                     num_processes=2))  # doctest: +NORMALIZE_WHITESPACE
      phalanx watchdog: process 1 has waited 31.0 s (deadline 30 s) in step 12, phase 'train'.
      Other processes last reported:
        process 0: step 13, phase 'train', 1.5 s ago
      Exiting with status 3. If this step is slow rather than stuck, raise the deadline:
      PHALANX_WATCHDOG_TIMEOUT=S or phalanx.cluster.watchdog.configure(timeout=S).
    """
    step = "" if mine.step is None else f"step {mine.step}, "
    lines = [
        f"phalanx watchdog: process {mine.process} has waited {now - mine.time:.1f} s "
        f"(deadline {mine.deadline:g} s) in {step}phase {mine.phase!r}.",
        "Other processes last reported:",
    ]
    for p in range(num_processes):
        if p == mine.process:
            continue
        report = others.get(p)
        behind = (
            "  <- behind this process"
            if report
            and report.step is not None
            and mine.step is not None
            and report.step < mine.step
            else ""
        )
        lines.append(f"  process {p}: {report.describe(now) if report else 'no report'}{behind}")
    if num_processes <= 1:
        lines.append("  (none: this is the only process)")
    lines.append(
        f"Exiting with status {EXIT_CODE}. If this step is slow rather than stuck, raise the "
        f"deadline:\n{TIMEOUT_ENV}=S or phalanx.cluster.watchdog.configure(timeout=S)."
    )
    return "\n".join(lines)


# Where the reports live --------------------------------------------------------------


def _publish(report: Report) -> None:
    data = json.dumps(asdict(report))
    run_dir = _run_dir()
    if run_dir:
        with contextlib.suppress(OSError):
            tmp = os.path.join(run_dir, f".{report.process}.{os.getpid()}.tmp")
            with open(tmp, "w") as f:
                f.write(data)
            os.replace(tmp, os.path.join(run_dir, f"{report.process}.json"))
    if _kv.client() is not None:
        with contextlib.suppress(Exception):
            _kv.put(f"{_KEY_DIR}{report.process}", data, overwrite=True)


def _read_reports() -> dict[int, Report]:
    found: dict[int, Report] = {}
    for raw in _kv_values() + _file_values():
        with contextlib.suppress(ValueError, TypeError, KeyError):
            report = Report(**json.loads(raw))
            if report.process not in found or found[report.process].time < report.time:
                found[report.process] = report
    return found


def _file_values() -> list[str]:
    run_dir = _run_dir()
    if not run_dir:
        return []
    values = []
    with contextlib.suppress(OSError):
        for name in os.listdir(run_dir):
            if name.endswith(".json"):
                with contextlib.suppress(OSError), open(os.path.join(run_dir, name)) as f:
                    values.append(f.read())
    return values


def _kv_values() -> list[str]:
    """Reads the key-value store in a helper thread, so a dead coordinator cannot hang us."""
    if _kv.client() is None:
        return []
    out: list[str] = []
    _bounded(lambda: out.extend(_kv.values_under(_KEY_DIR)))
    return list(out)


def _bounded(call) -> None:
    """Runs ``call`` in a helper thread for at most ``_KV_WAIT_S`` (errors ignored)."""

    def run():
        with contextlib.suppress(Exception):
            call()

    helper = threading.Thread(target=run, daemon=True)
    helper.start()
    helper.join(_KV_WAIT_S)


def _run_dir() -> str | None:
    from ._launcher import RUN_DIR_ENV

    base = os.environ.get(RUN_DIR_ENV)
    if not base:
        return None
    path = os.path.join(base, "watchdog")
    with contextlib.suppress(OSError):
        os.makedirs(path, exist_ok=True)
    return path


def _num_processes() -> int:
    return _kv.num_processes()


def _process_id() -> int:
    if _kv.client() is not None:
        return _kv.process_id()
    from ._env import PROCESS_ID_ENV

    with contextlib.suppress(ValueError):
        return int(os.environ.get(PROCESS_ID_ENV, "0"))
    return 0


def _env_timeout() -> float | None:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            f"{TIMEOUT_ENV} must be a number of seconds (0: off), got {raw!r}."
        ) from None


def _main_thread_stack(limit: int = 8) -> str:
    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None:
        return ""
    lines = traceback.format_stack(frame)[-limit:]
    return "This process's main thread is at (most recent call last):\n" + "".join(lines).rstrip()
