"""The local multi-process launcher behind ``phalanx launch``: start, prefix, supervise.

Each process gets the ``PHALANX_*`` variables that ``resolve()`` reads and
runs in its own process group. Its output (stdout and stderr merged) is
copied line by line with a ``[i]`` prefix. The launcher watches them all:

* a process that exits non-zero or is killed by a signal ends the job: the
  others get SIGTERM, then SIGKILL after ``grace`` seconds, and the launcher
  exits non-zero naming the process, its exit code or signal, and its last
  lines of output. JAX alone would notice a dead process only after its
  heartbeat timeout, and a Python error only after its shutdown barrier;
* a process that is stopped (SIGSTOP, SIGTSTP: suspended, not dead) for
  ``STOPPED_S`` seconds ends the job, named with what it last did (its
  watchdog's report in the run folder, the ledger): JAX would abort the healthy
  processes after its heartbeat (15 s), and name none;
* a process that exits 0 while the others wait for it inside a step (no beat
  for ``LEFT_EARLY_S`` seconds since it left) ends the job: "process 1 left
  early (exit 0 at epoch 2)"; a process that fails after another left early
  is named as the one that waited;
* ``timeout`` bounds the whole job (exit status 124);
* Ctrl-C (SIGINT) and SIGTERM are forwarded to every process group; a
  second Ctrl-C kills at once;
* on Linux each process gets SIGKILL if the launcher itself dies.

Each job gets a secret (``PHALANX_JOB_SECRET``, 256 random bits unless the
environment gives one): ``initialize()``'s roll call admits only processes
that sign their hello with it. A job across machines needs the same secret on
every launcher: export it before launching.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._cpu import CPU_DEVICES_ENV
from ._env import COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV, RUN_DIR_ENV
from ._rendezvous import new_job_secret
from ._resolver import JOB_SECRET_ENV
from ._watchdog import Report

LOCAL_PROCESS_ID_ENV = "PHALANX_LOCAL_PROCESS_ID"
TIMEOUT_EXIT = 124
_POLL_S = 0.05
_SETTLE_S = 0.5
#: Seconds a process may stay stopped (SIGSTOP) before the job ends naming it: well within
#: JAX's heartbeat (``initialize``'s 15 s), after which the others abort and name nobody.
STOPPED_S = 5.0
#: Seconds the others may wait inside one step after a process exited 0 before the job ends
#: naming that process as having left early.
LEFT_EARLY_S = 5.0
_CHECK_S = 0.5
_EPOCH_LINE = re.compile(r"^Epoch (\d+)/\d+")
# Lines of a process that failed because another one died first.
_PEER_LOST = re.compile(
    r"Gloo .*failed|Connection (closed|reset) by peer|detected fatal errors|stopped sending "
    r"heartbeats|Shutdown barrier|Broken pipe|UNAVAILABLE"
)
_NOISE = re.compile(r"^\s*(@\s+0x[0-9a-f]+|\*\*\* Check failure stack trace)")  # absl frames
# Lines the runtime prints in every job, or on every failure, that tell the user nothing:
# Gloo's connection count at startup and the C++ preemption notifier's shutdown line.
_QUIET = re.compile(
    r"^\[Gloo\] Rank \d+ is connected to \d+ peer ranks|preemption_notifier\.cc:\d+\]"
)
# Lines of a process that waited for another one: its watchdog's verdict, or an agreement
# that timed out (cluster._kv). The launcher names the process waited for, not the waiter.
_WAITED_FOR = (
    re.compile(
        r"phalanx watchdog: process (?P<process>\d+) is holding the job up \((?P<why>.*?)\);"
    ),
    re.compile(r"Process \d+ waited \d+ s for processes \[(?P<process>\d+)[^\]]*\] to report"),
)


@dataclass
class _Child:
    index: int  # global process id
    popen: subprocess.Popen
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=20))
    reader: threading.Thread | None = None
    exited_at: float | None = None  # set by its waiter thread when the process ends
    stopped_since: float | None = None  # when the launcher first saw it stopped

    def wait(self, events: queue.SimpleQueue) -> None:
        self.popen.wait()
        self.exited_at = time.monotonic()
        events.put(self)


@dataclass
class LaunchSpec:
    """What to launch on this machine.

    Attributes:
      command: the program and its arguments (``[python, script.py, ...]``).
      nprocs: processes on this machine.
      nnodes: machines in the job; one launcher runs on each.
      node_rank: this machine's index; its processes get ids
        ``node_rank * nprocs + i``.
      coordinator: ``host:port`` of process 0 (default ``127.0.0.1`` and a
        free port, or ``port``); required when ``nnodes > 1``.
      port: the coordinator port on 127.0.0.1 when ``coordinator`` is unset.
      devices_per_process: simulated CPU devices per process (``PHALANX_CPU_DEVICES``).
      timeout: seconds the whole job may run (None: no bound).
      grace: seconds between SIGTERM and SIGKILL when ending processes.
    """

    command: Sequence[str]
    nprocs: int
    nnodes: int = 1
    node_rank: int = 0
    coordinator: str | None = None
    port: int | None = None
    devices_per_process: int | None = None
    timeout: float | None = None
    grace: float = 5.0


def launch(spec: LaunchSpec, *, out=None, err=None) -> int:
    """Runs ``spec.nprocs`` processes of ``spec.command`` and supervises them.

    Args:
      spec: what to run.
      out: binary stream for the prefixed output (default ``sys.stdout.buffer``).
      err: text stream for the launcher's own messages (default ``sys.stderr``).

    Returns:
      0 when every process exited 0; else the failing process's exit code,
      ``128 + signal`` when it was killed, 124 after ``timeout``, 130 after Ctrl-C
      (143 after SIGTERM).
    """
    return _Supervisor(spec, out or sys.stdout.buffer, err or sys.stderr).run()


def free_port() -> int:
    """Returns a TCP port that is free on this machine right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Supervisor:
    def __init__(self, spec: LaunchSpec, out, err):
        self.spec, self.out, self.err = spec, out, err
        self.children: list[_Child] = []
        self.exits: queue.SimpleQueue[_Child] = queue.SimpleQueue()  # in the order they ended
        self.failed: list[_Child] = []
        self.lock = threading.Lock()
        self.interrupts = 0
        self.last_signal = signal.SIGINT
        self.start = time.monotonic()
        self.run_dir = ""
        self.left: list[tuple[_Child, float]] = []  # (process, time.time()) exited 0 early
        self.checked = 0.0

    # The job ---------------------------------------------------------------------

    def run(self) -> int:
        run_dir = tempfile.mkdtemp(prefix="phalanx-launch-")
        previous = self._install_signal_handlers()
        try:
            self._start_all(run_dir)
            return self._supervise()
        finally:
            self._end_all()
            for child in self.children:
                if child.reader:
                    child.reader.join(timeout=1.0)
            self._restore_signal_handlers(previous)
            shutil.rmtree(run_dir, ignore_errors=True)

    def _start_all(self, run_dir: str) -> None:
        self.run_dir = run_dir
        coordinator = self.spec.coordinator or f"127.0.0.1:{self.spec.port or free_port()}"
        total = self.spec.nnodes * self.spec.nprocs
        secret = self._job_secret()
        for local in range(self.spec.nprocs):
            index = self.spec.node_rank * self.spec.nprocs + local
            env = dict(os.environ)
            env.update(
                {
                    COORDINATOR_ENV: coordinator,
                    NUM_PROCESSES_ENV: str(total),
                    PROCESS_ID_ENV: str(index),
                    LOCAL_PROCESS_ID_ENV: str(local),
                    RUN_DIR_ENV: run_dir,
                    JOB_SECRET_ENV: secret,
                    "PYTHONUNBUFFERED": "1",
                }
            )
            if self.spec.devices_per_process is not None:
                env[CPU_DEVICES_ENV] = str(self.spec.devices_per_process)
            popen = subprocess.Popen(
                list(self.spec.command),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: signals reach all it starts
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            self.children.append(_Child(index, popen))
        for child in self.children:
            child.reader = threading.Thread(target=self._copy_output, args=(child,), daemon=True)
            child.reader.start()
            threading.Thread(target=child.wait, args=(self.exits,), daemon=True).start()

    def _job_secret(self) -> str:
        """The job's roll-call secret: the environment's, else a fresh one (one machine)."""
        given = os.environ.get(JOB_SECRET_ENV, "").strip()
        if given or self.spec.nnodes == 1:
            return given or new_job_secret()
        self._say(
            f"warning: --nnodes {self.spec.nnodes} without {JOB_SECRET_ENV}: the roll call is "
            "not authenticated, so anyone who reaches the coordinator port can join or end "
            f"the job. Export the same {JOB_SECRET_ENV} (say, `openssl rand -hex 32`) on every "
            "machine before launching."
        )
        return ""

    def _supervise(self) -> int:
        deadline = None if self.spec.timeout is None else self.start + self.spec.timeout
        finished = 0
        while True:
            if self.interrupts:
                return self._interrupted()
            try:
                child = self.exits.get(timeout=_POLL_S)
            except queue.Empty:
                child = None
            if child is not None:
                if child.popen.returncode != 0:
                    return self._failed(self._first_cause(child))
                finished += 1
                if finished == len(self.children):
                    return 0
                self.left.append((child, time.time()))
            if time.monotonic() - self.checked >= _CHECK_S:
                self.checked = time.monotonic()
                verdict = self._check_stalls()
                if verdict is not None:
                    return verdict
            if deadline is not None and time.monotonic() > deadline:
                return self._timed_out()

    # Endings ---------------------------------------------------------------------

    def _first_cause(self, first: _Child) -> _Child:
        """The process that failed on its own, not one that a peer's death took down.

        When one process dies, the others fail within milliseconds (a collective
        loses its peer), so the order in which exits are seen is not reliable.
        Wait a moment for the others to fail, then prefer a process whose last
        lines do not show a lost peer, then the earliest.
        """
        failed = [first]

        def classify(child: _Child) -> None:
            if child.popen.returncode != 0:
                failed.append(child)
            else:  # it exited 0: the peer the failed ones lost may be this one
                self.left.append((child, time.time()))

        def settle(seconds: float, until_one_left: bool = False) -> None:
            end = time.monotonic() + seconds
            while self._running() and time.monotonic() < end:
                if until_one_left and self.left:
                    return
                with contextlib.suppress(queue.Empty):
                    classify(self.exits.get(timeout=_POLL_S))
            # A waiter sets exited_at just before it queues its child: the last exits may
            # still be on their way when no process is running any more.
            with contextlib.suppress(queue.Empty):
                while True:
                    classify(self.exits.get(timeout=_POLL_S))
            for child in failed:
                if child.reader:
                    child.reader.join(timeout=0.5)

        settle(_SETTLE_S)
        if not self.left and all(_lost_a_peer(c) for c in failed):
            # Every failure lost a peer and nobody failed on their own: a process that
            # finished early may still be ending (JAX's shutdown waits for its peers), and
            # it is the one to name; give it a few seconds to exit.
            settle(LEFT_EARLY_S, until_one_left=True)
        self.failed = failed
        return min(failed, key=lambda c: (_lost_a_peer(c), c.exited_at))

    def _check_stalls(self) -> int | None:
        """Ends the job when a process is stopped, or the others wait for one that left."""
        now = time.monotonic()
        for child in self._running():
            if _is_stopped(child.popen.pid):
                child.stopped_since = child.stopped_since or now
                if now - child.stopped_since >= STOPPED_S:
                    return self._stopped(child)
            else:
                child.stopped_since = None
        for gone, left_at in self.left:
            if time.time() - left_at < LEFT_EARLY_S:
                continue
            ledger = self._ledger()
            waiting = [
                c
                for c in self._running()
                if (r := ledger.get(c.index)) is not None
                and r.deadline is not None
                and r.time <= left_at + 1.0  # no beat since shortly after it left
            ]
            if waiting:
                return self._left_early(gone, left_at, waiting[0])
        return None

    def _ledger(self) -> dict:
        """The processes' last watchdog reports (``_watchdog``'s files in the run folder)."""
        folder = os.path.join(self.run_dir, "watchdog")
        found = {}
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if name.endswith(".json"):
                    with contextlib.suppress(OSError, ValueError, TypeError):
                        with open(os.path.join(folder, name)) as f:
                            report = Report(**json.load(f))
                        found[report.process] = report
        return found

    def _last_did(self, child: _Child) -> str:
        report = self._ledger().get(child.index)
        if report is None:
            return "it never reported a step to its watchdog"
        return f"it last reported {report.describe(time.time())}"

    def _stopped(self, child: _Child) -> int:
        """Ends the job naming ``child``, stopped (suspended) for ``STOPPED_S`` seconds."""
        did = self._last_did(child)
        self._say(
            f"process {child.index} is stopped (SIGSTOP or SIGTSTP: suspended, not dead) for "
            f"{time.monotonic() - child.stopped_since:.1f} s, {did} (its watchdog's ledger). "
            f"The others would wait for it until JAX's heartbeat aborts them; ending the job "
            f"after {self._elapsed():.1f} s."
        )
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.popen.pid, signal.SIGKILL)  # a stopped process takes no SIGTERM
        self._end_all()
        self._say_tail(child)
        self._say(f"failed: process {child.index} was stopped ({did}).")
        return 128 + signal.SIGSTOP

    def _left_early(self, gone: _Child, left_at: float, waiter: _Child) -> int:
        """Ends the job naming ``gone``, which exited 0 while the others still needed it."""
        epochs = [m.group(1) for line in gone.tail if (m := _EPOCH_LINE.match(line))]
        report = self._ledger().get(gone.index)
        if epochs:
            at = f" at epoch {epochs[-1]}"
        elif report is not None and report.phase == "train" and report.loop:
            at = f" at epoch {report.loop}"  # the epochs it ran (its watchdog's train loops)
        elif report is not None and report.step is not None:
            at = f" at step {report.step}"
        else:
            at = ""
        why = f"left early (exit 0{at})"
        if waiter.exited_at is not None:  # it failed: the peer it lost is the one that left
            lost = " (it lost its peer)" if _lost_a_peer(waiter) else ""
            waits = f"; process {waiter.index} then {_describe_exit(waiter.popen.returncode)}{lost}"
        else:
            mine = self._ledger().get(waiter.index)
            where = f" ({mine.describe(time.time())})" if mine is not None else ""
            waits = f" while process {waiter.index} still waits for it{where}"
        self._say(
            f"process {gone.index} {why} {time.time() - left_at:.1f} s ago{waits}; ending the "
            f"job after {self._elapsed():.1f} s."
        )
        self._end_all()
        self._say_tail(gone)
        self._say(f"failed: process {gone.index} {why}.")
        return 1

    def _failed(self, child: _Child) -> int:
        for other in self._running():
            if _is_stopped(other.popen.pid):  # it failed because that one is suspended
                other.stopped_since = other.stopped_since or time.monotonic()
                return self._stopped(other)
        if self.left and (_lost_a_peer(child) or child.popen.returncode < 0):
            return self._left_early(*self.left[0], child)
        waited_for = _waited_for(child)
        if waited_for is not None and waited_for[0] != child.index:
            return self._held_up(child, *waited_for)
        code = child.popen.returncode
        what = _describe_exit(code)
        if any(line.startswith("phalanx watchdog:") for line in child.tail):
            what += " (its watchdog fired: a step ran past its deadline)"
        others = [c for c in self.failed if c is not child]
        also = "".join(
            f" Process {c.index} then {_describe_exit(c.popen.returncode)}"
            + (" (it lost its peer)" if _lost_a_peer(c) else "")
            + "."
            for c in others
        )
        running = len(self._running())
        ending = f" Ending the other {running} process(es)." if running else ""
        self._say(f"process {child.index} {what} after {self._elapsed():.1f} s.{also}{ending}")
        self._end_all()
        if child.reader:
            child.reader.join(timeout=1.0)
        self._say_tail(child)
        for other in self.failed:
            if other is not child and not _lost_a_peer(other):
                self._say_tail(other)  # it failed on its own too (say, its watchdog fired)
        self._say(f"failed: process {child.index} {what}.")
        return code if code > 0 else 128 - code

    def _held_up(self, waiter: _Child, index: int, why: str) -> int:
        """Ends the job naming process ``index``, which ``waiter`` waited for until it gave up."""
        code = waiter.popen.returncode
        running = len(self._running())
        ending = f" Ending the other {running} process(es)." if running else ""
        self._say(
            f"process {index} is holding the job up ({why}): process {waiter.index} waited for "
            f"it until its deadline and {_describe_exit(code)} after {self._elapsed():.1f} s."
            f"{ending}"
        )
        self._end_all()
        if waiter.reader:
            waiter.reader.join(timeout=1.0)
        held = [c for c in self.children if c.index == index]
        for other in held:
            self._say_tail(other)
        self._say_tail(waiter)
        where = "" if held else " (on another node: see its launcher's output)"
        self._say(f"failed: process {index} stalled{where}; process {waiter.index} waited for it.")
        return code if code > 0 else 128 - code

    def _timed_out(self) -> int:
        running = self._running()
        self._say(
            f"the job ran past --timeout {self.spec.timeout:g} s; ending "
            f"{', '.join(str(c.index) for c in running)} (still running)."
        )
        self._end_all()
        for child in running:
            self._say_tail(child)
        return TIMEOUT_EXIT

    def _interrupted(self) -> int:
        sig = signal.Signals(self.last_signal)
        self._say(f"got {sig.name}; forwarding it to every process.")
        self._signal_all(sig)
        self._wait_for_exit(self.spec.grace, stop_on_second_interrupt=True)
        self._end_all()
        return 128 + sig

    def _end_all(self) -> None:
        """SIGTERM to every running process group, SIGKILL after ``grace`` seconds."""
        running = self._running()
        if not running:
            return
        self._signal_all(signal.SIGTERM, running)
        self._wait_for_exit(self.spec.grace, stop_on_second_interrupt=True)
        self._signal_all(signal.SIGKILL, running)
        end = time.monotonic() + 2.0
        while any(c.exited_at is None for c in running) and time.monotonic() < end:
            time.sleep(_POLL_S)

    def _wait_for_exit(self, seconds: float, *, stop_on_second_interrupt: bool) -> None:
        end = time.monotonic() + seconds
        while self._running() and time.monotonic() < end:
            if stop_on_second_interrupt and self.interrupts > 1:
                return
            time.sleep(_POLL_S)

    def _signal_all(self, sig: int, children: list[_Child] | None = None) -> None:
        for child in self._running() if children is None else children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.popen.pid, sig)

    def _running(self) -> list[_Child]:
        return [c for c in self.children if c.exited_at is None]

    # Output ----------------------------------------------------------------------

    def _copy_output(self, child: _Child) -> None:
        prefix = f"[{child.index}] ".encode()
        for line in iter(child.popen.stdout.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            text = line.decode(errors="replace").rstrip("\n")
            if _QUIET.search(text):
                continue
            if not _NOISE.match(text):
                child.tail.append(text)
            with self.lock, contextlib.suppress(OSError, ValueError):
                self.out.write(prefix + line)
                self.out.flush()
        child.popen.stdout.close()

    def _say(self, message: str) -> None:
        with self.lock:
            print(f"phalanx launch: {message}", file=self.err, flush=True)

    def _say_tail(self, child: _Child) -> None:
        lines = list(child.tail)
        if not lines:
            self._say(f"process {child.index} printed nothing.")
            return
        body = "\n".join(f"  [{child.index}] {line}" for line in lines)
        self._say(f"last {len(lines)} line(s) of process {child.index}:\n{body}")

    def _elapsed(self) -> float:
        return time.monotonic() - self.start

    # Signals ---------------------------------------------------------------------

    def _install_signal_handlers(self):
        if threading.current_thread() is not threading.main_thread():
            return None

        def on_signal(signum, frame):
            self.interrupts += 1
            self.last_signal = signum
            if self.interrupts > 1:
                self._signal_all(signal.SIGKILL)

        return {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

    @staticmethod
    def _restore_signal_handlers(previous) -> None:
        for sig, handler in (previous or {}).items():
            signal.signal(sig, handler)


def _waited_for(child: _Child) -> tuple[int, str] | None:
    """The process ``child`` says it waited for, and why, from its last lines; None if none."""
    for line in child.tail:
        for pattern in _WAITED_FOR:
            match = pattern.search(line)
            if match:
                why = match.groupdict().get("why") or "it never reported to an agreement"
                return int(match.group("process")), why
    return None


def _is_stopped(pid: int) -> bool:
    """Whether the process ``pid`` is stopped (state ``T`` in ``/proc``; False elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"T"


def _lost_a_peer(child: _Child) -> bool:
    return any(_PEER_LOST.search(line) for line in child.tail)


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (JAX aborts a process when the cluster fails)" if -code == signal.SIGABRT else ""
        return f"was killed by {name} ({-code}){hint}"
    return f"exited with code {code}"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
