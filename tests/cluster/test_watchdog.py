"""The watchdog: off in one process, a report that names who waits on what, firing for real."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_procs import SCRIPTS, Launcher, _env

from phalanx.cluster import Watchdog
from phalanx.cluster._watchdog import EXIT_CODE, Report, format_report


def test_off_by_default_in_one_process(monkeypatch):
    monkeypatch.delenv("PHALANX_WATCHDOG_TIMEOUT", raising=False)
    w = Watchdog()
    w.beat(step=1, phase="train")
    assert not w.enabled and w._thread is None


def test_configure_and_environment(monkeypatch):
    monkeypatch.setenv("PHALANX_WATCHDOG_TIMEOUT", "0")
    assert not Watchdog().enabled
    monkeypatch.setenv("PHALANX_WATCHDOG_TIMEOUT", "7")
    assert Watchdog().enabled and Watchdog().timeout == 7
    w = Watchdog()
    w.configure(timeout=2.5)
    assert w.enabled and w.timeout == 2.5
    with pytest.raises(ValueError, match="must be > 0"):
        w.configure(timeout=0)


def test_its_thread_is_stopped_by_the_exit_hook():
    """The watchdog thread starts through phalanx._threads, whose exit hook ends it."""
    from phalanx import _threads

    w = Watchdog()
    w.configure(timeout=60)
    w.beat(step=1, phase="train")
    thread = w._thread
    assert thread in _threads.live_threads()
    assert _threads.stop_all(timeout=5.0) == []
    assert not thread.is_alive() and thread not in _threads.live_threads()


def test_report_names_the_process_the_step_and_who_is_behind():
    mine = Report(0, 12, "train", time=100.0, deadline=30.0)
    others = {1: Report(1, 11, "eval", time=90.0, deadline=30.0)}
    text = format_report(mine, others, now=131.0, num_processes=3)
    assert "process 0 has waited 31.0 s (deadline 30 s) in step 12, phase 'train'" in text
    assert "process 1: step 11, phase 'eval', 41.0 s ago  <- behind this process" in text
    assert "process 2: no report" in text
    stopped = Report(1, 40, "train", time=130.0, deadline=None)
    assert "stopped (not in a step)" in format_report(
        mine, {1: stopped}, now=131.0, num_processes=2
    )


def test_who_holds_the_job_up():
    """A process past its deadline while waiting blames the one behind, stopped, silent or
    running Python code; one that runs Python code itself blames nobody (it is stuck)."""
    from phalanx.cluster._watchdog import holding_up

    mine = Report(0, 4, "train", 100.0, 30.0, waiting=True)

    def blame(other, n=2, me=mine):
        return holding_up(me, {} if other is None else {1: other}, num_processes=n)

    assert blame(Report(1, 3, "train", 90.0, 30.0)) == {
        1: "behind: step 3 of phase train, this process is at step 4"
    }
    assert blame(Report(1, 7, "train", 90.0, None)) == {
        1: "outside any step after step 7: its loop stopped"
    }
    assert blame(None) == {1: "it never reported a step"}
    assert blame(Report(1, 4, "train", 90.0, 30.0, waiting=False)) == {
        1: "running Python code in step 4, phase 'train'"
    }
    assert blame(Report(1, 4, "train", 90.0, 30.0, waiting=True)) == {}  # both wait: no blame
    assert blame(Report(1, 9, "train", 90.0, 30.0)) == {}  # ahead
    assert blame(Report(1, 0, "eval", 90.0, 30.0)) == {}  # steps of another phase: no order
    running = Report(0, 4, "train", 100.0, 30.0, waiting=False)
    assert blame(Report(1, 3, "train", 90.0, None), me=running) == {}


def test_the_report_names_the_process_holding_the_job_up():
    mine = Report(0, 4, "train", 100.0, 30.0, waiting=True)
    text = format_report(mine, {1: Report(1, 3, "train", 100.0, 30.0)}, now=135.0, num_processes=2)
    assert "process 1: step 3, phase 'train', 35.0 s ago  <- holding the job up" in text
    assert (
        "phalanx watchdog: process 1 is holding the job up (behind: step 3 of phase train, "
        "this process is at step 4); process 0 waits for it." in text
    )


def test_a_waiting_process_gives_the_one_it_waits_for_time_to_fire_first(monkeypatch):
    from phalanx.cluster import _watchdog

    fired = []
    others = {1: Report(1, 3, "train", 100.0, 30.0, waiting=False)}
    monkeypatch.setattr(_watchdog, "_num_processes", lambda: 2)
    monkeypatch.setattr(Watchdog, "reports", lambda self: others)
    monkeypatch.setattr(Watchdog, "_fire", lambda self, last: fired.append(last.process))
    w = Watchdog()
    waiting = Report(0, 4, "train", 100.0, 30.0, waiting=True)
    w._overdue(waiting)
    assert fired == [] and w._grace_until is not None  # deferred
    w._overdue(waiting)
    assert fired == []  # still within the grace
    w._grace_until = 0.0
    w._overdue(waiting)
    assert fired == [0]  # the other never fired: this one ends the job, naming it
    fired.clear()
    w = Watchdog()
    w._overdue(Report(0, 4, "train", 100.0, 30.0, waiting=False))  # running code: stuck here
    assert fired == [0]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_fires_in_a_single_process_when_configured(tmp_path: Path):
    script = tmp_path / "alone.py"
    script.write_text(
        "import time\n"
        "from phalanx.cluster import watchdog\n"
        "watchdog.configure(timeout=1)\n"
        "watchdog.beat(step=5, phase='load')\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=50
    )
    assert run.returncode == EXIT_CODE, run.stderr
    assert "phalanx watchdog: process 0 has waited" in run.stderr
    assert "in step 5, phase 'load'" in run.stderr and "time.sleep(60)" in run.stderr
    assert time.monotonic() - start < 40


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_fires_on_a_stuck_step_across_processes():
    launcher = Launcher(
        "-n", "2", "--timeout", "75", "--", str(SCRIPTS / "stuck.py"), env=_env(PHALANX_WATCHDOG_TIMEOUT="4")
    )  # fmt: skip
    launcher.wait_for(r"^\[1\] stuck in step 3", timeout=60)
    stuck = time.monotonic()
    code, out, err, _ = launcher.finish(timeout=40)
    print(f"stuck step -> launcher exit: {time.monotonic() - stuck:.1f} s (deadline 4 s)")
    assert code == EXIT_CODE, out + err
    # Both processes wait in step 3 (one sleeps, the other in the all-reduce); whichever
    # watchdog fires first ends the job, and its report shows the other's last step.
    # (This custom loop blocks in a C call from its own code, so neither looks "waiting"
    # to the watchdog: same step, no blame rule applies. fit's waits are recognized:
    # tests/multiprocess/test_mp_watchdog.py.)
    fired = re.search(
        r"\[(\d)\] phalanx watchdog: process \1 has waited .* in step 3, phase 'train'", out
    )
    assert fired, out
    other = 1 - int(fired.group(1))
    assert f"process {other}: step 3, phase 'train'" in out
    assert "its watchdog fired" in err


def test_the_launcher_reads_whom_a_failed_process_waited_for():
    """A watchdog's verdict, or an agreement that timed out, names the process waited for."""
    from phalanx.cluster._launcher import _Child, _waited_for

    def child(*lines):
        c = _Child(0, popen=None)
        c.tail.extend(lines)
        return c

    verdict = (
        "phalanx watchdog: process 1 is holding the job up (outside any step after step 7: its "
        "loop stopped); process 0 waits for it. Its output and stack show where it is."
    )
    assert _waited_for(child("[x]", verdict)) == (
        1,
        "outside any step after step 7: its loop stopped",
    )
    missing = (
        "phalanx.errors.ProcessesMissingError: Process 0 waited 120 s for processes [2, 3] to "
        "report whether they had another batch (0/4); they never did."
    )
    assert _waited_for(child(missing)) == (2, "it never reported to an agreement")
    assert _waited_for(child("Traceback (most recent call last):", "ValueError: boom")) is None


def test_the_launcher_names_the_process_whose_exit_is_queued_just_after_the_last_one_ended():
    """A waiter thread marks its process ended, then queues it: the launcher, which had seen
    a peer-lost failure first and found no process running, still names the real cause
    (CI: 'process 0 exited' named for process 1's error, its exit still on its way)."""
    import queue
    import threading

    from phalanx.cluster._launcher import _Child, _Supervisor

    class Ended:
        returncode = 1

    lost = _Child(0, popen=Ended())
    lost.tail.append("ValueError: UNKNOWN: Gloo all-reduce failed: Connection closed by peer")
    cause = _Child(1, popen=Ended())
    cause.tail.append("RuntimeError: the user's error")
    lost.exited_at = cause.exited_at = time.monotonic()
    supervisor = object.__new__(_Supervisor)  # only the exits, as the launcher keeps them
    supervisor.children, supervisor.exits, supervisor.left = [lost, cause], queue.SimpleQueue(), []
    threading.Timer(0.02, supervisor.exits.put, args=(cause,)).start()
    assert supervisor._first_cause(lost) is cause
