"""The roll call (``cluster/_rendezvous.py``) in one process, on loopback: who may join.

Process 0's side runs in a thread; the others are threads too, or raw sockets
that forge messages. Every wait is bounded by the roll call's own deadlines.
"""

import socket
import threading

import pytest
from listening import is_loopback, listening_addresses

from phalanx.cluster._launcher import free_port
from phalanx.cluster._rendezvous import (
    attend_roll_call,
    bind_host,
    host_roll_call,
    jax_bind_address,
)
from phalanx.errors import ClusterMismatchError, ProcessesMissingError


class Host(threading.Thread):
    """Process 0's roll call in a thread; ``error`` is what it raised, ``log`` what it logged."""

    def __init__(self, port, num_processes=2, *, secret="s3cret", timeout=10.0, bind="127.0.0.1"):
        super().__init__(daemon=True)
        self.port, self.n, self.secret, self.timeout, self.bind = (
            port,
            num_processes,
            secret,
            timeout,
            bind,
        )
        self.error, self.log, self.done = None, [], False

    def run(self):
        try:
            host_roll_call(
                self.port,
                self.n,
                timeout=self.timeout,
                address=f"127.0.0.1:{self.port}",
                hint="",
                bind=self.bind,
                secret=self.secret,
                log=self.log.append,
            )
            self.done = True
        except Exception as e:
            self.error = e


def _attend(port, process_id=1, n=2, *, secret="s3cret", timeout=10.0):
    attend_roll_call("127.0.0.1", port, n, process_id, timeout=timeout, hint="", secret=secret)


def _forge(port: int, line: bytes) -> bytes:
    """Connects, reads the challenge, sends ``line``; returns what came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.makefile("rb").readline()
        s.sendall(line)
        s.settimeout(3)
        try:
            return s.recv(4096)
        except TimeoutError:
            return b"(no answer)"


def test_roll_call_listens_on_loopback_only():
    port = free_port()
    host = Host(port)
    host.start()
    _wait_listening(port)
    found = [a for a, p in listening_addresses() if p == port]
    assert found and all(is_loopback(a) for a in found), found
    _attend(port)
    host.join(10)
    assert host.done and host.error is None


def test_forged_hellos_without_the_secret_are_dropped_and_the_roll_call_goes_on():
    port = free_port()
    host = Host(port)
    host.start()
    _wait_listening(port)
    # The old unauthenticated hello (a claim of a wrong process count, which used to end the
    # job), a hello with a bad signature, and junk: none may join or end the roll call.
    assert _forge(port, b"PHALANX1 3 1 evil 1\n") == b""
    reply = _forge(port, b"PHALANX2 HELLO 3 1 evil 1 abcd " + b"0" * 64 + b"\n")
    assert reply.startswith(b"REFUSED"), reply
    _forge(port, b"\x00" * 5000)
    assert host.is_alive() and host.error is None, host.error
    _attend(port)
    host.join(10)
    assert host.done and host.error is None, host.error
    assert len(host.log) == 3, host.log
    assert all("dropped a roll-call connection from 127.0.0.1:" in m for m in host.log)
    assert "not signed with the job's secret PHALANX_JOB_SECRET" in host.log[1]


@pytest.mark.parametrize(
    "secret, said",
    [("other", "PHALANX_JOB_SECRET is set"), (None, "PHALANX_JOB_SECRET is not set")],
)
def test_a_process_with_another_secret_or_none_is_told_so_and_cannot_join(secret, said):
    port = free_port()
    host = Host(port, timeout=3.0)
    host.start()
    _wait_listening(port)
    with pytest.raises(ClusterMismatchError, match=f"not signed with the job's secret .*{said}"):
        _attend(port, secret=secret, timeout=5)
    host.join(10)
    assert isinstance(host.error, ProcessesMissingError)
    assert "1 connection(s) were dropped" in str(host.error), host.error


def test_an_answer_not_signed_with_the_secret_is_refused():
    """A squatter on the port cannot tell a process to go on (or that others are missing)."""
    port = free_port()
    server = socket.create_server(("127.0.0.1", port))

    def squat():
        conn, _ = server.accept()
        with conn:
            conn.sendall(b"PHALANX2 CHALLENGE 00\n")
            conn.makefile("rb").readline()
            conn.sendall(b"0000 GO\n")

    threading.Thread(target=squat, daemon=True).start()
    with server, pytest.raises(ClusterMismatchError, match="not signed with this job's secret"):
        _attend(port, timeout=5)


def test_without_a_secret_on_either_side_the_roll_call_still_works():
    port = free_port()
    host = Host(port, secret=None)
    host.start()
    _wait_listening(port)
    _attend(port, secret=None)
    host.join(10)
    assert host.done


def test_a_genuine_process_with_a_wrong_count_still_ends_the_roll_call():
    port = free_port()
    host = Host(port)
    host.start()
    _wait_listening(port)
    with pytest.raises(ClusterMismatchError, match="expects 3 processes, process 0 expects 2"):
        _attend(port, n=3)
    host.join(10)
    assert isinstance(host.error, ClusterMismatchError)


def test_bind_host_is_the_coordinators_own_address():
    assert bind_host("127.0.0.1", environ={}) == "127.0.0.1"
    assert is_loopback(bind_host("localhost", environ={}))
    assert bind_host("10.1.2.3", environ={"PHALANX_COORDINATOR_BIND_ADDRESS": "0.0.0.0"}) == (
        "0.0.0.0"
    )
    assert jax_bind_address("::1", 5) == "[::1]:5"
    assert jax_bind_address("127.0.0.1", 5) == "127.0.0.1:5"


# An unresolvable host and another machine's address: tests/bad_inputs/test_cluster_inputs.py.


def _wait_listening(port: int, timeout: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p == port for _, p in listening_addresses()):
            return
        time.sleep(0.02)
    raise AssertionError(f"nothing listens on port {port}")


def test_a_hello_after_the_roll_call_ended_is_a_python_error_naming_it():
    """Processes started by hand without a secret: a forger took process id 1 and the roll
    call ended (GO); JAX's coordinator holds the port. The real process 1 is told at once
    that the roll call is over and its id taken, instead of failing inside JAX."""
    import time

    from jax._src.lib import _jax

    port = free_port()
    service = _jax.get_distributed_runtime_service(f"127.0.0.1:{port}", 2)
    try:
        began = time.monotonic()
        with pytest.raises(
            ClusterMismatchError,
            match=r"Process 1 of 2 came to the roll call at 127\.0\.0\.1:\d+ after it ended: "
            r"JAX's coordinator already holds that port.*Another process took process id 1",
        ):
            attend_roll_call("127.0.0.1", port, 2, 1, timeout=20, hint="")
        assert time.monotonic() - began < 10  # not after the roll call's deadline
    finally:
        service.shutdown()
