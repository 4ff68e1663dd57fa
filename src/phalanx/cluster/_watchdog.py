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

**Blame.** When one process stalls, the others soon wait for it in a
collective, and every deadline runs out within about a second of the others
(a waiting process beats its next step just after the stalled one's last
beat). Which watchdog fired first, and so which process the launcher named,
was a race, whatever the deadline: in the issue's run with 120 s it named the
healthy waiting process. So each report also says whether the main thread is
*waiting* (blocked inside JAX or the key-value client: a device result, a
collective, an agreement) or running Python code, read from its stack once a
second by the watchdog thread (the innermost Python frame: ``fit``'s waits and
``jax.device_get``/``block_until_ready`` have one in JAX; a C call made
straight from a custom loop, ``float(step(x))``, does not, and reads as
running code, so two processes in the same step of such a loop still race). A process whose deadline passed while it waits,
and sees another process holding the job up (behind it in the same phase,
stopped outside any step, never reported, or running code while this one
waits), gives that process ``BLAME_GRACE_S`` more to fire first; if it must
fire itself (the other cannot: its loop stopped, it holds the GIL, it was
suspended), its report names the process holding the job up in a line the
launcher reads (``HOLDING_UP``), so ``phalanx launch`` names that process.

A script that hangs outside any step (before ``fit``, between loops of a
custom training loop that stopped its watchdog, in ``initialize()`` after the
roll call) in every process has no deadline running: only ``phalanx launch
--timeout`` ends it.
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
from ._env import PROCESS_ID_ENV, RUN_DIR_ENV

TIMEOUT_ENV = "PHALANX_WATCHDOG_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
EXIT_CODE = 3
_KEY_DIR = "watchdog/"  # under _kv.PREFIX
_INTERVAL_S = 1.0
_KV_WAIT_S = 2.0
#: Seconds a waiting process whose deadline passed gives the process it waits for to fire
#: first: the other's watchdog checks once a second, then the launcher must see it exit.
BLAME_GRACE_S = 4 * _INTERVAL_S
#: The report line that names the process holding the job up (``phalanx launch`` reads it).
HOLDING_UP = "phalanx watchdog: process {process} is holding the job up ({reason})"
#: Modules whose frames mean the main thread waits for other processes or devices.
_WAITING_IN = ("jax.", "jaxlib.", "phalanx.cluster._kv", "phalanx.cluster._agree")


@dataclass(frozen=True)
class Report:
    """What one process last said: its step and phase, and when (``time.time()``)."""

    process: int
    step: int | None
    phase: str
    time: float
    deadline: float | None  # seconds allowed until the next beat; None when stopped
    waiting: bool | None = None  # main thread blocked in JAX/key-value waits (None: unknown)
    loop: int | None = None  # how many loops of this phase the process began (fit: epochs)

    def describe(self, now: float) -> str:
        """One line such as ``step 12, phase 'train', 0.4 s ago``."""
        where = "stopped (not in a step)" if self.deadline is None else f"phase {self.phase!r}"
        step = "" if self.step is None else f"step {self.step}, "
        doing = {True: ", waiting", False: ", running Python code"}.get(self.waiting, "")
        return f"{step}{where}, {max(0.0, now - self.time):.1f} s ago{doing}"

    def with_waiting(self, waiting: bool | None) -> Report:
        """This report, saying whether the main thread waits now."""
        return Report(
            self.process, self.step, self.phase, self.time, self.deadline, waiting, self.loop
        )


class Watchdog:
    """Notices a step that runs past its deadline and ends the process with a report.

    Use the module-level instance ``phalanx.cluster.watchdog``.

    Examples:
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
        self._grace_until: float | None = None  # set when firing is deferred (module docs)
        self._loops: dict[str, int] = {}  # loops begun per phase (a beat after a stop)

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
        phase, last = str(phase), self._last
        if last is None or last.deadline is None or last.phase != phase:
            self._loops[phase] = self._loops.get(phase, 0) + 1  # a new loop (fit: an epoch)
        loop = self._loops[phase]
        self._last = Report(_process_id(), step, phase, time.time(), deadline, loop=loop)
        self._grace_until = None
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
            stopped = Report(last.process, last.step, last.phase, time.time(), None, loop=last.loop)
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
            if last.deadline is not None:
                last = last.with_waiting(_main_thread_waits())
            # The deadline first: publishing talks to the coordinator, which may be the
            # very thing that hangs (and the write is bounded too, in _publish).
            if last.deadline is not None and time.time() - last.time > last.deadline:
                self._overdue(last)
            if last != self._published and self._publishing.acquire(blocking=False):
                try:
                    if self._last is not None and self._last.time == last.time:  # not stopped
                        _publish(last)
                        self._published = last
                finally:
                    self._publishing.release()

    def _overdue(self, last: Report) -> None:
        """Fires now, or once after ``BLAME_GRACE_S`` when another process holds the job up."""
        now = time.time()
        if self._grace_until is None:
            holding = holding_up(last, self.reports(), num_processes=_num_processes())
            if not holding:
                self._fire(last)
            self._grace_until = now + BLAME_GRACE_S
        elif now >= self._grace_until:
            self._fire(last)

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


def holding_up(mine: Report, others: dict[int, Report], *, num_processes: int) -> dict[int, str]:
    """The processes that ``mine`` (past its deadline) waits for, each with the reason.

    None when ``mine`` runs Python code itself (then it is the one stuck). A
    process holds the job up when it is behind in the same phase, stopped
    (outside any step, or finished), never reported, or runs Python code while
    ``mine`` waits.

    Examples:
      >>> mine = Report(0, 4, "train", 100.0, 30.0, waiting=True)
      >>> holding_up(mine, {1: Report(1, 3, "train", 100.0, 30.0, waiting=False)},
      ...            num_processes=2)
      {1: 'behind: step 3 of phase train, this process is at step 4'}
    """
    if mine.waiting is False:
        return {}
    found = {}
    for p in range(num_processes):
        other = others.get(p)
        if p == mine.process:
            continue
        if other is None:
            found[p] = "it never reported a step"
        elif other.deadline is None:
            at = "" if other.step is None else f" after step {other.step}"
            found[p] = f"outside any step{at}: its loop stopped"
        elif other.phase == mine.phase and _behind(other.step, mine.step):
            found[p] = (
                f"behind: step {other.step} of phase {other.phase}, this process is at "
                f"step {mine.step}"
            )
        elif other.waiting is False and mine.waiting:
            found[p] = f"running Python code in step {other.step}, phase {other.phase!r}"
    return found


def _behind(step: int | None, than: int | None) -> bool:
    return step is not None and than is not None and step < than


def format_report(
    mine: Report, others: dict[int, Report], *, now: float, num_processes: int
) -> str:
    """Returns the watchdog's message: who waits, on what, and what the others last said.

    Examples:
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
    holding = holding_up(mine, others, num_processes=num_processes)
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
        if p in holding:
            behind = "  <- holding the job up"
        lines.append(f"  process {p}: {report.describe(now) if report else 'no report'}{behind}")
    if num_processes <= 1:
        lines.append("  (none: this is the only process)")
    for p, reason in holding.items():
        lines.append(
            HOLDING_UP.format(process=p, reason=reason)
            + f"; process {mine.process} waits for it. Its output and stack show where it is."
        )
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


def _main_thread_waits() -> bool | None:
    """Whether the main thread is blocked inside JAX or the key-value client (``_WAITING_IN``).

    The innermost Python frame decides: a device result, a collective or an
    agreement waits there; a callback, a data loader or ``time.sleep`` in user
    code does not. None when the main thread is gone.
    """
    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None:
        return None
    return str(frame.f_globals.get("__name__", "")).startswith(_WAITING_IN)


def _main_thread_stack(limit: int = 8) -> str:
    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None:
        return ""
    lines = traceback.format_stack(frame)[-limit:]
    return "This process's main thread is at (most recent call last):\n" + "".join(lines).rstrip()
