"""``phalanx launch`` with real processes on loopback: each test bounded in time.

The children are fresh Python processes: they get ``JAX_PLATFORMS=cpu`` and
their device count from ``PHALANX_CPU_DEVICES`` (``--devices-per-process``),
not from this test process's ``XLA_FLAGS`` (8 devices, see conftest).
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from cluster_procs import SCRIPTS, Launcher, _env


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_two_processes_two_devices_each_all_reduce():
    launcher = Launcher(
        "-n", "2", "--devices-per-process", "2", "--timeout", "75", "--", str(SCRIPTS / "psum.py")
    )
    code, out, err, seconds = launcher.finish(timeout=85)
    print(f"2 processes x 2 devices: {seconds:.1f} s")
    assert code == 0, out + err
    # process i contributes (i + 1) on each of its 2 devices: 2*1 + 2*2 = 6 on every process.
    assert "[0] process 0 psum 6.0" in out and "[1] process 1 psum 6.0" in out, out


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_one_launcher_per_machine_numbers_processes_by_node_rank():
    coordinator = f"127.0.0.1:{_free_port()}"
    common = (
        "-n",
        "1",
        "--nnodes",
        "2",
        "--coordinator",
        coordinator,
        "--devices-per-process",
        "2",
        "--timeout",
        "75",
    )
    node1 = Launcher(*common, "--node-rank", "1", "--", str(SCRIPTS / "psum.py"))
    node0 = Launcher(*common, "--node-rank", "0", "--", str(SCRIPTS / "psum.py"))
    code0, out0, err0, _ = node0.finish(timeout=85)
    code1, out1, err1, _ = node1.finish(timeout=20)
    assert (code0, code1) == (0, 0), out0 + err0 + out1 + err1
    assert "[0] process 0 psum 6.0" in out0 and "[1] process 1 psum 6.0" in out1


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_kill_9_of_one_process_ends_the_job_and_names_it():
    launcher = Launcher(
        "-n", "2", "--timeout", "75", "--grace", "3", "--", str(SCRIPTS / "job.py"), "loop"
    )
    pid = int(launcher.wait_for(r"^\[1\] ready pid=(\d+)", timeout=60).group(1))
    launcher.wait_for(r"^\[0\] ready", timeout=30)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    code, _, err, _ = launcher.finish(timeout=30)
    seconds = time.monotonic() - killed
    print(f"kill -9 of process 1 -> launcher exit: {seconds:.2f} s")
    assert code != 0
    assert "process 1 was killed by SIGKILL" in err, err
    assert seconds < 20


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_python_error_in_one_process_ends_the_job_and_names_it():
    launcher = Launcher(
        "-n", "2", "--timeout", "75", "--grace", "3", "--", str(SCRIPTS / "job.py"), "raise"
    )
    launcher.wait_for(r"^\[1\] ready", timeout=60)
    raised = time.monotonic()
    code, out, err, _ = launcher.finish(timeout=30)
    seconds = time.monotonic() - raised
    print(f"Python error in process 1 -> launcher exit: {seconds:.2f} s")
    assert code == 1, out + err
    assert "process 1 exited with code 1" in err, err
    assert "[1] ValueError: boom from process 1" in err  # the last lines, repeated in the report
    assert seconds < 20


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_wrong_coordinator_port_is_a_clear_error_within_the_deadline():
    # The second machine's launcher is pointed at a port where nobody listens.
    launcher = Launcher(
        "-n", "1", "--nnodes", "2", "--node-rank", "1", "--coordinator", "127.0.0.1:9",
        "--timeout", "50", "--", str(SCRIPTS / "job.py"), "init", "4",
    )  # fmt: skip
    code, out, err, seconds = launcher.finish(timeout=55)
    print(f"wrong port -> error after {seconds:.1f} s (initialization deadline 4 s)")
    assert code == 1, out + err
    assert (
        "CoordinatorUnreachableError: Nobody is listening at the coordinator address 127.0.0.1:9"
        in out
    )
    assert "process 1 exited with code 1" in err
    assert seconds < 40  # 4 s deadline + interpreter start-up on busy machines


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_process_that_never_arrives_is_named_by_process_zero():
    env = _env(
        PHALANX_COORDINATOR_ADDRESS=f"127.0.0.1:{_free_port()}",
        PHALANX_NUM_PROCESSES="3",
        PHALANX_PROCESS_ID="0",
    )
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(SCRIPTS / "job.py"), "init", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
    )
    print(f"missing processes -> error after {time.monotonic() - start:.1f} s (deadline 3 s)")
    assert run.returncode == 1
    assert re.search(
        r"ProcessesMissingError: Only 1 of 3 processes arrived .* process\(es\) 1, 2 never did",
        run.stderr,
    )


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_timeout_bounds_the_whole_job():
    launcher = Launcher(
        "-n",
        "2",
        "--timeout",
        "2",
        "--grace",
        "1",
        "--",
        "-c",
        "import time; print('up', flush=True); time.sleep(60)",
    )
    code, _, err, seconds = launcher.finish(timeout=40)
    assert code == 124
    assert "ran past --timeout 2 s" in err
    assert seconds < 30


def test_launch_refuses_bad_options():
    run = subprocess.run(
        [sys.executable, "-m", "phalanx.cli", "launch", "-n", "2", "--nnodes", "2", "--", "x.py"],
        capture_output=True, text=True, env=_env(), timeout=60,
    )  # fmt: skip
    assert run.returncode == 2
    assert "--nnodes > 1 needs --coordinator HOST:PORT" in run.stderr


def _free_port() -> int:
    from phalanx.cluster._launcher import free_port

    return free_port()


def _stamp(launcher, word):
    return float(launcher.wait_for(rf"^\[1\] {word} at ([0-9.]+)", timeout=120).group(1))


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_stopped_process_is_named_with_what_it_last_did_within_the_heartbeat():
    """Process 1 is SIGSTOPped mid-fit: the launcher names it (not the healthy process 0,
    which JAX's heartbeat would abort after 15 s) and its last watchdog report."""
    launcher = Launcher(
        "-n", "2", "--timeout", "150", "--grace", "3", "--", str(SCRIPTS / "fit_fault.py"), "stop"
    )
    stopped = _stamp(launcher, "stopping")
    code, out, err, _ = launcher.finish(timeout=60)
    seconds = time.time() - stopped
    print(f"SIGSTOP of process 1 -> launcher exit: {seconds:.2f} s")
    assert code == 128 + signal.SIGSTOP, out + err
    assert re.search(
        r"process 1 is stopped \(SIGSTOP or SIGTSTP: suspended, not dead\) for 5\.\d s, it last reported step \d+, (phase 'train'|stopped \(not in a step\)), \d+\.\d s ago(, waiting)? \(its watchdog's ledger\)",
        err,
    ), err
    assert "failed: process 1 was stopped" in err and "process 0 was killed" not in err, err
    assert seconds < 15  # initialize()'s JAX heartbeat: before it aborts process 0


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_process_that_exits_0_early_is_named_as_having_left():
    launcher = Launcher(
        "-n", "2", "--timeout", "150", "--grace", "3", "--", str(SCRIPTS / "fit_fault.py"), "leave"
    )
    left = _stamp(launcher, "leaving")
    code, out, err, _ = launcher.finish(timeout=60)
    seconds = time.time() - left
    print(f"early exit 0 of process 1 -> launcher exit: {seconds:.2f} s")
    assert code == 1, out + err
    assert "failed: process 1 left early (exit 0 at epoch 2)." in err, err
    # process 0 either fails at once (gloo loses its peer) or waits in its step: both name 1
    assert re.search(
        r"process 1 left early \(exit 0 at epoch 2\) \d+\.\d s ago(; process 0 then "
        r"(was killed by|exited with)| while process 0 still waits for it)",
        err,
    ), err
    assert "finished all epochs" not in out
    assert seconds < 15
