"""A roll call on the coordinator's port, in Python, before JAX connects.

``jax.distributed`` reports a missing process or a wrong address by aborting
the process (SIGABRT) after its timeout, with no Python exception and no
names (DESIGN.md). So before calling it, every process meets process 0 on
the coordinator's port with a few lines of plain TCP:

* process 0 listens on the coordinator's own host (loopback for a local job,
  never every interface unless ``PHALANX_COORDINATOR_BIND_ADDRESS`` says so)
  and greets each connection with a challenge (``PHALANX2 CHALLENGE <nonce>``);
* the others connect (retrying while nobody listens) and answer with a hello
  (``PHALANX2 HELLO <num_processes> <process_id> <host> <pid> <nonce> <mac>``),
  signed with the job's secret (``PHALANX_JOB_SECRET``, which ``phalanx
  launch`` generates) over process 0's challenge: HMAC-SHA256, compared in
  constant time. A hello that is not signed with the job's secret is dropped
  and logged: it can neither join nor end the job;
* process 0 answers each admitted process, signed over its nonce: ``GO``
  (everyone arrived), ``MISSING 2,3`` (the deadline passed), or ``ERR
  <message>`` (the processes disagree about the cluster).

Every failure is then a Python exception naming the address, the deadline
and the missing process ids, raised in every process that is up. After
``GO`` process 0 closes the port and starts JAX's coordinator on it; JAX's
clients retry their connection, so the brief gap is harmless.

Without a secret (processes started by hand without ``PHALANX_JOB_SECRET``)
the messages are signed with an empty key: the roll call still works, but
anyone who reaches the port can take part in it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import ipaddress
import os
import secrets
import selectors
import socket
import sys
import time
from dataclasses import dataclass

from ..errors import (
    ClusterMismatchError,
    CoordinatorUnreachableError,
    InitializationError,
    ProcessesMissingError,
)
from ._resolver import JOB_SECRET_ENV

BIND_ADDRESS_ENV = "PHALANX_COORDINATOR_BIND_ADDRESS"
_MAGIC = "PHALANX2"
_RETRY_S = 0.25
_REPLY_GRACE_S = 5.0
_LINE_MAX = 4096
_PENDING_MAX = 64  # unauthenticated connections held at once; the oldest is dropped beyond


def new_job_secret() -> str:
    """A fresh random secret for one job (256 bits, hex)."""
    return secrets.token_hex(32)


def bind_host(host: str, environ=None) -> str:
    """The local address process 0 listens on for the coordinator host ``host``.

    ``PHALANX_COORDINATOR_BIND_ADDRESS`` (a host or address, ``0.0.0.0`` or
    ``::`` for every interface) overrides it; otherwise it is ``host``'s own
    address (``127.0.0.1`` for ``localhost``), so a local job listens on
    loopback only and a multi-host job on the interface others reach it by.

    Raises:
      InitializationError: ``host`` does not resolve.
    """
    env = os.environ if environ is None else environ
    override = env.get(BIND_ADDRESS_ENV, "").strip().strip("[]")
    if override:
        return override
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise InitializationError(
            f"Process 0 cannot resolve the coordinator host {host!r} to listen on it "
            f"({e.strerror}). Give an address of this machine, or set {BIND_ADDRESS_ENV} to "
            "the local address to listen on."
        ) from None
    addresses = [info[4][0] for info in infos]
    loopback = [a for a in addresses if ipaddress.ip_address(a.split("%")[0]).is_loopback]
    return (loopback or addresses)[0]


def jax_bind_address(host: str, port: int) -> str:
    """``host:port`` in the form JAX's coordinator takes (``[v6]:port`` for IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _mac(secret: str | None, text: str) -> str:
    return hmac.new((secret or "").encode(), text.encode(), hashlib.sha256).hexdigest()


def _sign(secret: str | None, nonce: str, body: str) -> str:
    return f"{_mac(secret, f'reply {nonce} {body}')} {body}"


@dataclass
class _Attendee:
    conn: socket.socket
    who: str
    nonce: str


@dataclass
class _Pending:
    challenge: str
    peer: str
    since: float
    data: bytes = b""


def host_roll_call(
    port: int,
    num_processes: int,
    *,
    timeout: float,
    address: str,
    hint: str,
    bind: str = "127.0.0.1",
    secret: str | None = None,
    log=None,
):
    """Process 0: waits until every other process said hello, or raises.

    Args:
      port: the coordinator port.
      num_processes: processes in the job, this one included.
      timeout: seconds to wait for all of them.
      address: the coordinator address as the others know it (for messages).
      hint: advice added when processes are missing.
      bind: the local address to listen on (``bind_host``).
      secret: the job's secret; hellos not signed with it are dropped.
      log: called with one line per dropped connection (default: stderr).

    Raises:
      InitializationError: the port is taken on this machine, or ``bind`` is not its address.
      ProcessesMissingError: some processes never arrived within ``timeout`` s.
      ClusterMismatchError: a process disagrees about the number of processes or its id.
    """
    log = log or _log
    server = _listen(bind, port, address, num_processes)
    deadline = time.monotonic() + timeout
    arrived: dict[int, _Attendee] = {}
    pending: dict[socket.socket, _Pending] = {}
    refused: list[str] = []
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    try:
        while len(arrived) < num_processes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [i for i in range(1, num_processes) if i not in arrived]
                _tell(arrived, f"MISSING {','.join(map(str, missing))}", secret)
                raise ProcessesMissingError(
                    _missing_message(missing, arrived, num_processes, address, timeout, hint)
                    + _refused_note(refused)
                )
            for key, _ in selector.select(timeout=min(left, 1.0)):
                if key.fileobj is server:
                    _accept(server, selector, pending, log)
                    continue
                conn = key.fileobj
                hello = _read_line(conn, pending[conn])
                if hello is None:
                    continue
                selector.unregister(conn)
                entry = pending.pop(conn)
                reason = _admit(conn, hello, entry, arrived, num_processes, address, secret)
                if reason:
                    refused.append(entry.peer)
                    log(
                        f"process 0: dropped a roll-call connection from {entry.peer} "
                        f"({reason}); the roll call goes on"
                    )
        _tell(arrived, "GO", secret)
        _await_close([a.conn for a in arrived.values()])
    finally:
        for conn in list(pending):
            conn.close()
        for attendee in arrived.values():
            attendee.conn.close()
        selector.close()
        server.close()


def _accept(server, selector, pending: dict, log) -> None:
    try:
        conn, peer = server.accept()
    except OSError:
        return
    if len(pending) >= _PENDING_MAX:
        oldest = min(pending, key=lambda c: pending[c].since)
        selector.unregister(oldest)
        log(
            f"process 0: dropped a roll-call connection from {pending.pop(oldest).peer} "
            f"(more than {_PENDING_MAX} connections waiting)"
        )
        oldest.close()
    challenge = secrets.token_hex(16)
    with contextlib.suppress(OSError):
        conn.sendall(f"{_MAGIC} CHALLENGE {challenge}\n".encode())
    conn.setblocking(False)
    pending[conn] = _Pending(challenge, _peer_name(peer), time.monotonic())
    selector.register(conn, selectors.EVENT_READ)


def _peer_name(peer) -> str:
    with contextlib.suppress(Exception):
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return str(peer)


def attend_roll_call(
    host: str,
    port: int,
    num_processes: int,
    process_id: int,
    *,
    timeout: float,
    hint: str,
    secret: str | None = None,
):
    """Processes other than 0: says hello to process 0 and waits for ``GO``, or raises.

    Raises:
      CoordinatorUnreachableError: nobody listened at ``host:port`` within ``timeout`` s.
      ProcessesMissingError: process 0 reported that some processes never arrived.
      ClusterMismatchError: process 0 refused this process (wrong count, duplicate id, or
        another job secret), or the answer was not signed with this job's secret.
    """
    address = f"{host}:{port}"
    conn = _connect(host, port, timeout, num_processes)
    nonce = secrets.token_hex(16)
    with conn:
        conn.settimeout(timeout + _REPLY_GRACE_S)
        reader = conn.makefile("rb")
        if _is_grpc_server(_peek(reader, 9)):
            raise ClusterMismatchError(_roll_call_over(address, process_id, num_processes))
        greeting = _readline(reader)
        parts = greeting.split()
        if len(parts) != 3 or parts[:2] != [_MAGIC, "CHALLENGE"]:
            if not greeting:
                raise _went_away(address, process_id, num_processes)
            return  # Not a phalanx roll call (process 0 called jax.distributed directly).
        fields = f"{num_processes} {process_id} {socket.gethostname()} {os.getpid()} {nonce}"
        mac = _mac(secret, f"hello {parts[2]} {fields}")
        with contextlib.suppress(OSError):
            conn.sendall(f"{_MAGIC} HELLO {fields} {mac}\n".encode())
        reply = _readline(reader)
    if reply.startswith("REFUSED"):
        raise ClusterMismatchError(_refused_message(address, process_id, secret))
    if not reply:
        raise _went_away(address, process_id, num_processes)
    mac, _, body = reply.partition(" ")
    if not hmac.compare_digest(mac, _mac(secret, f"reply {nonce} {body}")):
        raise ClusterMismatchError(
            f"The answer from {address} to process {process_id} is not signed with this job's "
            f"secret ({JOB_SECRET_ENV}): another job holds that port, or process 0 was given "
            "another secret. Start every process with the same secret (phalanx launch does), "
            "on a port no other job uses."
        )
    if body == "GO":
        return
    if body.startswith("MISSING "):
        missing = body.split(" ", 1)[1]
        raise ProcessesMissingError(
            f"Process 0 (the coordinator at {address}) waited {timeout:.0f} s, but process(es) "
            f"{missing.replace(',', ', ')} of {num_processes} never arrived. {hint}"
        )
    if body.startswith("ERR "):
        raise ClusterMismatchError(
            f"Process 0 (at {address}) refused process {process_id}: {body[4:]}."
        )
    raise _went_away(address, process_id, num_processes)


def _peek(reader, n: int) -> bytes:
    try:
        return reader.peek(n)[:n]
    except (TimeoutError, OSError):
        return b""


def _is_grpc_server(head: bytes) -> bool:
    """Whether ``head`` opens an HTTP/2 server's SETTINGS frame: JAX's coordinator (gRPC)
    already holds the port, so the roll call there is over."""
    return len(head) == 9 and head[3] == 0x04 and head[4] in (0, 1) and head[5:] == b"\0" * 4


def _roll_call_over(address: str, process_id: int, num_processes: int) -> str:
    return (
        f"Process {process_id} of {num_processes} came to the roll call at {address} after it "
        "ended: JAX's coordinator already holds that port, so process 0 had admitted a process "
        f"for every id, {process_id} included. Another process took process id {process_id} "
        "(this one started twice, a process of another job with the same ids, or a forged "
        f"hello: without {JOB_SECRET_ENV} anyone who reaches the port can say hello). Give "
        f"each process its own id and the same {JOB_SECRET_ENV} (phalanx launch does both), "
        "then start the job again."
    )


def _readline(reader) -> str:
    try:
        return reader.readline(_LINE_MAX).decode(errors="replace").strip()
    except (TimeoutError, OSError):
        return ""


def _went_away(address: str, process_id: int, num_processes: int) -> CoordinatorUnreachableError:
    return CoordinatorUnreachableError(
        f"Process 0 accepted the connection at {address} and then went away without an "
        f"answer (process {process_id} of {num_processes}); look at process 0's output "
        "for its error."
    )


def _refused_message(address: str, process_id: int, secret: str | None) -> str:
    mine = "set" if secret else "not set"
    return (
        f"Process 0 (at {address}) refused process {process_id}: its hello was not signed with "
        f"the job's secret ({JOB_SECRET_ENV} is {mine} in this process). Give every process "
        f"of the job the same {JOB_SECRET_ENV} (phalanx launch generates one per job; with "
        "--nnodes > 1, export the same value on every machine before launching)."
    )


def _listen(bind: str, port: int, address: str, num_processes: int) -> socket.socket:
    backlog = num_processes + 4
    try:
        if bind in ("::", ""):
            server = socket.create_server(
                ("::", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=backlog
            )
        else:
            family = socket.AF_INET6 if ":" in bind else socket.AF_INET
            server = socket.create_server((bind, port), family=family, backlog=backlog)
    except OSError as e:
        if e.errno == errno.EADDRNOTAVAIL:
            raise InitializationError(
                f"Process 0 cannot listen for the coordinator {address} on {bind}: that is not "
                "an address of this machine. Run process 0 on the machine the coordinator "
                f"address names, or set {BIND_ADDRESS_ENV} to the local address to listen on "
                "(0.0.0.0 listens on every interface: anyone who reaches the port can then "
                "reach JAX's coordinator)."
            ) from None
        if e.errno != errno.EADDRINUSE:
            raise
        raise InitializationError(
            f"Process 0 cannot serve the coordinator at {address}: port {port} is already in use "
            "on this machine (another job, or a process of an earlier run still alive). Pick a "
            "free port (`phalanx launch --port P`, or the resolver's port) and start again."
        ) from None
    server.setblocking(False)
    return server


def _read_line(conn: socket.socket, entry: _Pending) -> str | None:
    try:
        chunk = conn.recv(_LINE_MAX)
    except BlockingIOError:
        return None
    except OSError:
        chunk = b""
    entry.data += chunk
    if not chunk or b"\n" in entry.data or len(entry.data) > _LINE_MAX:
        return entry.data.split(b"\n", 1)[0].decode(errors="replace")
    return None


def _admit(
    conn, hello: str, entry: _Pending, arrived: dict, num_processes: int, address: str, secret
) -> str | None:
    """Admits a signed hello; returns why a connection was dropped (None when admitted).

    Raises:
      ClusterMismatchError: a process signed with the job's secret disagrees about the cluster.
    """
    parts = hello.split()
    if len(parts) != 8 or parts[:2] != [_MAGIC, "HELLO"]:
        conn.close()  # not one of ours (a port scanner, a plain JAX client, an older phalanx)
        return "not a phalanx roll-call hello"
    fields, mac = " ".join(parts[2:7]), parts[7]
    if not hmac.compare_digest(mac, _mac(secret, f"hello {entry.challenge} {fields}")):
        _send(conn, "REFUSED job secret")
        conn.close()
        return f"not signed with the job's secret {JOB_SECRET_ENV}"
    try:
        n, pid = int(parts[2]), int(parts[3])
    except ValueError:
        conn.close()
        return "malformed hello"
    who, nonce = f"{parts[4]}, pid {parts[5]}", parts[6]
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
            f"two processes claim process id {pid} ({arrived[pid].who} and {who}); "
            "give each process its own id"
        )
    if problem:
        _send(conn, _sign(secret, nonce, f"ERR {problem}"))
        conn.close()
        _tell(arrived, f"ERR {problem}", secret)
        raise ClusterMismatchError(f"At the coordinator {address}: {problem}.")
    arrived[pid] = _Attendee(conn, who, nonce)
    return None


def _tell(arrived: dict, body: str, secret) -> None:
    for attendee in arrived.values():
        _send(attendee.conn, _sign(secret, attendee.nonce, body))


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


def _log(line: str) -> None:
    print(f"[phalanx] {line}", file=sys.stderr, flush=True)


def _refused_note(refused: list[str]) -> str:
    if not refused:
        return ""
    return (
        f" {len(refused)} connection(s) were dropped meanwhile (from "
        f"{', '.join(sorted(set(refused))[:5])}): a process started with another "
        f"{JOB_SECRET_ENV}, or not a process of this job."
    )


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
        + [f"{pid} ({a.who})" for pid, a in sorted(arrived.items())]
    )
    return (
        f"Only {len(arrived) + 1} of {num_processes} processes arrived at the coordinator "
        f"{address} within {timeout:.0f} s: process(es) {', '.join(map(str, missing))} never "
        f"did. Arrived: {came}. {hint} To wait longer, pass initialize(initialization_timeout=...)."
    )
