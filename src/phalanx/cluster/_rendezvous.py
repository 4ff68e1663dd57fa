"""A roll call on the coordinator's port, in Python, before JAX connects.

``jax.distributed`` reports a missing process or a wrong address by aborting
the process (SIGABRT) after its timeout, with no Python exception and no
names (DESIGN.md). So before calling it, every process meets process 0 on
the coordinator's port with a few lines of plain TCP:

* process 0 listens and waits, until a deadline, for a hello from every other
  process (``PHALANX1 <num_processes> <process_id> <host> <pid>``);
* the others connect (retrying while nobody listens) and wait for the answer:
  ``GO`` (everyone arrived), ``MISSING 2,3`` (the deadline passed), or
  ``ERR <message>`` (the processes disagree about the cluster).

Every failure is then a Python exception naming the address, the deadline
and the missing process ids, raised in every process that is up. After
``GO`` process 0 closes the port and starts JAX's coordinator on it; JAX's
clients retry their connection, so the brief gap is harmless.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import time

from ..errors import (
    ClusterMismatchError,
    CoordinatorUnreachableError,
    InitializationError,
    ProcessesMissingError,
)

_MAGIC = "PHALANX1"
_RETRY_S = 0.25
_REPLY_GRACE_S = 5.0


def host_roll_call(port: int, num_processes: int, *, timeout: float, address: str, hint: str):
    """Process 0: waits until every other process said hello, or raises.

    Raises:
      InitializationError: the port is taken on this machine.
      ProcessesMissingError: some processes never arrived within ``timeout`` s.
      ClusterMismatchError: a process disagrees about the number of processes or its id.
    """
    server = _listen(port, address, num_processes)
    deadline = time.monotonic() + timeout
    arrived: dict[int, tuple[socket.socket, str]] = {}
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    buffers: dict[socket.socket, bytes] = {}
    try:
        while len(arrived) < num_processes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [i for i in range(1, num_processes) if i not in arrived]
                _tell(arrived, f"MISSING {','.join(map(str, missing))}")
                raise ProcessesMissingError(
                    _missing_message(missing, arrived, num_processes, address, timeout, hint)
                )
            for key, _ in selector.select(timeout=min(left, 1.0)):
                if key.fileobj is server:
                    conn, _ = server.accept()
                    conn.setblocking(False)
                    buffers[conn] = b""
                    selector.register(conn, selectors.EVENT_READ)
                    continue
                conn = key.fileobj
                hello = _read_line(conn, buffers)
                if hello is None:
                    continue
                selector.unregister(conn)
                buffers.pop(conn, None)
                _admit(conn, hello, arrived, num_processes, address)
        _tell(arrived, "GO")
        _await_close([c for c, _ in arrived.values()])
    finally:
        for conn in list(buffers):
            conn.close()
        for conn, _ in arrived.values():
            conn.close()
        selector.close()
        server.close()


def attend_roll_call(
    host: str, port: int, num_processes: int, process_id: int, *, timeout: float, hint: str
):
    """Processes other than 0: says hello to process 0 and waits for ``GO``, or raises.

    Raises:
      CoordinatorUnreachableError: nobody listened at ``host:port`` within ``timeout`` s.
      ProcessesMissingError: process 0 reported that some processes never arrived.
      ClusterMismatchError: process 0 refused this process (wrong count or duplicate id).
    """
    address = f"{host}:{port}"
    conn = _connect(host, port, timeout, num_processes)
    with conn:
        hello = f"{_MAGIC} {num_processes} {process_id} {socket.gethostname()} {os.getpid()}\n"
        conn.sendall(hello.encode())
        conn.settimeout(timeout + _REPLY_GRACE_S)
        try:
            reply = conn.makefile("rb").readline(4096).decode(errors="replace").strip()
        except (TimeoutError, OSError):
            reply = ""
    if reply == "GO":
        return
    if reply.startswith("MISSING "):
        missing = reply.split(" ", 1)[1]
        raise ProcessesMissingError(
            f"Process 0 (the coordinator at {address}) waited {timeout:.0f} s, but process(es) "
            f"{missing.replace(',', ', ')} of {num_processes} never arrived. {hint}"
        )
    if reply.startswith("ERR "):
        raise ClusterMismatchError(
            f"Process 0 (at {address}) refused process {process_id}: {reply[4:]}."
        )
    if not reply:
        raise CoordinatorUnreachableError(
            f"Process 0 accepted the connection at {address} and then went away without an "
            f"answer (process {process_id} of {num_processes}); look at process 0's output "
            "for its error."
        )
    # Not a phalanx roll call (process 0 called jax.distributed directly): let JAX try.


def _listen(port: int, address: str, num_processes: int) -> socket.socket:
    try:
        if socket.has_dualstack_ipv6():
            server = socket.create_server(
                ("::", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=num_processes
            )
        else:
            server = socket.create_server(("", port), backlog=num_processes)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        raise InitializationError(
            f"Process 0 cannot serve the coordinator at {address}: port {port} is already in use "
            "on this machine (another job, or a process of an earlier run still alive). Pick a "
            "free port (`phalanx launch --port P`, or the resolver's port) and start again."
        ) from None
    server.setblocking(False)
    return server


def _read_line(conn: socket.socket, buffers: dict[socket.socket, bytes]) -> str | None:
    try:
        chunk = conn.recv(4096)
    except BlockingIOError:
        return None
    except OSError:
        chunk = b""
    data = buffers[conn] + chunk
    buffers[conn] = data
    if not chunk or b"\n" in data or len(data) > 4096:
        return data.split(b"\n", 1)[0].decode(errors="replace")
    return None


def _admit(conn, hello: str, arrived: dict, num_processes: int, address: str) -> None:
    parts = hello.split()
    if len(parts) < 3 or parts[0] != _MAGIC:
        conn.close()  # not one of ours (a port scanner, a plain JAX client): ignore it
        return
    try:
        n, pid = int(parts[1]), int(parts[2])
    except ValueError:
        conn.close()
        return
    who = f"{parts[3]}, pid {parts[4]}" if len(parts) >= 5 else "?"
    problem = None
    if n != num_processes:
        problem = (
            f"process {pid} on {who} expects {n} processes, process 0 expects {num_processes}; "
            "give every process the same number of processes"
        )
    elif not 0 < pid < num_processes:
        problem = (
            f"a process on {who} claims process id {pid}, but process 0 is this one and the "
            f"others are 1..{num_processes - 1}; give each process its own id"
        )
    elif pid in arrived:
        problem = (
            f"two processes claim process id {pid} ({arrived[pid][1]} and {who}); "
            "give each process its own id"
        )
    if problem:
        _send(conn, f"ERR {problem}")
        conn.close()
        _tell(arrived, f"ERR {problem}")
        raise ClusterMismatchError(f"At the coordinator {address}: {problem}.")
    arrived[pid] = (conn, who)


def _tell(arrived: dict, line: str) -> None:
    for conn, _ in arrived.values():
        _send(conn, line)


def _send(conn: socket.socket, line: str) -> None:
    with contextlib.suppress(OSError):
        conn.setblocking(True)
        conn.settimeout(2.0)
        conn.sendall((line + "\n").encode())


def _await_close(conns: list[socket.socket], timeout: float = 2.0) -> None:
    """Lets the clients close first, so this side's port is not left in TIME_WAIT."""
    deadline = time.monotonic() + timeout
    for conn in conns:
        with contextlib.suppress(OSError):
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            conn.recv(1)


def _connect(host: str, port: int, timeout: float, num_processes: int) -> socket.socket:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        left = deadline - time.monotonic()
        try:
            return socket.create_connection((host, port), timeout=max(0.1, min(2.0, left)))
        except socket.gaierror as e:
            last = f"cannot resolve the host name {host!r} ({e.strerror})"
        except OSError as e:
            last = e.strerror or type(e).__name__
        if time.monotonic() + _RETRY_S >= deadline:
            raise CoordinatorUnreachableError(
                f"Nobody is listening at the coordinator address {host}:{port} after {timeout:.0f} s "
                f"of retrying ({last}). Process 0 of {num_processes} should serve it: check that "
                "process 0 is running and has reached initialize(), that every process was given "
                "the same address and port, and that the port is open between the machines."
            )
        time.sleep(_RETRY_S)


def _missing_message(missing, arrived, num_processes, address, timeout, hint) -> str:
    came = ", ".join(
        [f"0 ({socket.gethostname()}, this process)"]
        + [f"{pid} ({who})" for pid, (_, who) in sorted(arrived.items())]
    )
    return (
        f"Only {len(arrived) + 1} of {num_processes} processes arrived at the coordinator "
        f"{address} within {timeout:.0f} s: process(es) {', '.join(map(str, missing))} never "
        f"did. Arrived: {came}. {hint} To wait longer, pass initialize(initialization_timeout=...)."
    )
