"""Nobody joins a job from outside: real jobs through ``phalanx launch``, on loopback.

Each test is bounded in time (the launcher's ``--timeout`` and pytest's).
"""

import re
import socket

import pytest
from cluster_procs import SCRIPTS, Launcher, _env
from listening import is_loopback


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_running_two_process_job_listens_on_loopback_only():
    launcher = Launcher(
        "-n",
        "2",
        "--devices-per-process",
        "2",
        "--timeout",
        "75",
        "--",
        str(SCRIPTS / "sockets.py"),
    )
    code, out, err, _ = launcher.finish(timeout=85)
    assert code == 0, out + err
    lines = re.findall(r"process (\d) listens on (.*)", out)
    assert sorted(p for p, _ in lines) == ["0", "1"], out
    found = [a.split() for _, listed in lines for a in listed.split(";") if a]
    assert found, out  # process 0 at least serves JAX's coordinator
    outside = [f"{host}:{port}" for host, port in found if not is_loopback(host)]
    assert not outside, f"listening outside loopback: {outside}\n{out}"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_forged_roll_call_message_is_refused_and_the_job_goes_on(tmp_path):
    go = tmp_path / "go"
    launcher = Launcher(
        "-n",
        "2",
        "--devices-per-process",
        "2",
        "--timeout",
        "75",
        "--",
        str(SCRIPTS / "late.py"),
        env=_env(PHALANX_TEST_GO_FILE=str(go)),
    )
    match = launcher.wait_for(r"\[0\] .*waiting up to .* listening on 127\.0\.0\.1:(\d+)", 60)
    port = int(match.group(1))
    # What ended a job in 1.4 s before: a hello claiming another process count. Then a
    # hello for process 1 with a made-up signature, then the right format with no signature.
    for line in (
        b"PHALANX1 3 1 evil 1\n",
        b"PHALANX2 HELLO 2 1 evil 1 00 " + b"0" * 64 + b"\n",
        b"PHALANX2 HELLO 3 1 evil 1 00\n",
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.makefile("rb").readline()
            s.sendall(line)
            s.settimeout(5)
            s.recv(4096)  # process 0 answers REFUSED or closes
    go.write_text("go")
    code, out, err, _ = launcher.finish(timeout=80)
    assert code == 0, out + err
    assert "[0] process 0 psum 6.0" in out and "[1] process 1 psum 6.0" in out, out
    assert out.count("dropped a roll-call connection from 127.0.0.1:") == 3, out


@pytest.mark.timeout(60)
def test_the_launcher_gives_each_job_its_own_secret():
    script = "import os; print('secret', os.environ['PHALANX_JOB_SECRET'])"
    secrets = []
    for _ in range(2):
        code, out, err, _ = Launcher("-n", "2", "--timeout", "30", "--", "-c", script).finish(40)
        assert code == 0, out + err
        found = set(re.findall(r"secret ([0-9a-f]+)", out))
        assert len(found) == 1 and len(next(iter(found))) == 64, out
        secrets.append(found.pop())
    assert secrets[0] != secrets[1]


@pytest.mark.timeout(60)
def test_a_secret_in_the_environment_is_passed_on():
    script = "import os; print('secret', os.environ['PHALANX_JOB_SECRET'])"
    env = _env(PHALANX_JOB_SECRET="shared-by-all-machines")
    code, out, err, _ = Launcher("-n", "1", "--timeout", "30", "--", "-c", script, env=env).finish(
        40
    )
    assert code == 0, out + err
    assert "[0] secret shared-by-all-machines" in out


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_agreements_leave_no_keys_on_the_coordinator():
    launcher = Launcher(
        "-n", "3", "--devices-per-process", "1", "--timeout", "75", "--", str(SCRIPTS / "agree.py")
    )
    code, out, err, _ = launcher.finish(timeout=85)
    assert code == 0, out + err
    for p in range(3):
        assert f"[{p}] process {p} agreed 30 times; keys left 0" in out, out
