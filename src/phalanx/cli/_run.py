"""``phalanx run``: one process of a script, on N simulated CPU devices if asked.

    phalanx run --devices 8 train.py --epochs 3

The script runs with this Python, its output unprefixed, as ``python train.py``
would run it, with ``launch``'s options for one process: ``--devices`` (or
``--devices-per-process``) gives it N simulated CPU devices, set before Python
starts (``PHALANX_CPU_DEVICES`` and XLA's host device count, so ``jax.devices()``
sees them too, whatever the script calls first); ``--timeout`` ends it (exit
124); ``--max-restarts`` starts it again after a failure or a save on
preemption (exit 42). Several processes: ``phalanx launch -n N``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from ..checkpoint import RESTARTABLE_EXIT_CODE
from ..cluster import CPU_DEVICES_ENV, TIMEOUT_EXIT
from . import _launch

_HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
# Options of ``launch`` that describe several processes: refused here, naming launch.
_MULTI_PROCESS = (
    ("nprocs", "-n"),
    ("nnodes", "--nnodes"),
    ("node_rank", "--node-rank"),
    ("coordinator", "--coordinator"),
    ("port", "--port"),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``run`` to the ``phalanx`` command."""
    p = sub.add_parser(
        "run",
        help="run a script as one process, on N simulated CPU devices with --devices N",
        description=(
            "Run a script as one process, as python would, on N simulated CPU devices with "
            "--devices N (set before Python starts). Several processes: phalanx launch."
        ),
        usage="phalanx run [--devices N] [options] [--] script.py [args ...]",
    )
    p.add_argument(
        "--devices",
        "--devices-per-process",
        dest="run_devices",
        type=int,
        default=None,
        metavar="N",
        help="simulate N CPU devices in the script's process (default: phalanx --devices N, "
        "else PHALANX_CPU_DEVICES, else the real devices)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="end the script after S seconds (exit 124)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL at --timeout (default 5)",
    )
    p.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        metavar="N",
        help="start the script again, up to N times, after it fails or saved on preemption "
        "(exit 42); it resumes from its checkpoint (default 0)",
    )
    for dest, flag in _MULTI_PROCESS:  # launch's, for several processes: refused by name
        p.add_argument(flag, dest=dest, default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="script.py and its arguments (or -- -m module, or -- -c code)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Checks the options, runs the script (again after a failure, up to --max-restarts)."""
    try:
        command, env = _prepare(args)
    except ValueError as e:
        print(f"phalanx run: {e}", file=sys.stderr)
        return 2
    status = _run_once(command, env, args.timeout, args.grace)
    for restart in range(1, args.max_restarts + 1):
        if status == 0 or status in _launch._NOT_RESTARTED:
            break
        why = " (saved before preemption)" if status == RESTARTABLE_EXIT_CODE else ""
        print(
            f"phalanx run: {_name(command)} ended with status {status}{why}; restarting it "
            f"({restart} of {args.max_restarts}).",
            file=sys.stderr,
        )
        status = _run_once(command, env, args.timeout, args.grace)
    return status


def _prepare(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    for dest, flag in _MULTI_PROCESS:
        value = getattr(args, dest)
        if value is not None and not (flag in ("-n", "--nnodes") and value == "1"):
            raise ValueError(
                f"{flag} {value} describes a job of several processes; phalanx run runs one. "
                f"For several: phalanx launch -n N {flag} {value} ... -- script.py"
            )
    args.port = None  # launch's check reads it: refused above when given
    _launch._check_options(args)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ValueError("nothing to run; usage: phalanx run [--devices N] script.py [args ...]")
    if not (command[0].endswith(".py") or command[0] in ("-m", "-c")):
        raise ValueError(
            f"phalanx run runs a Python script (script.py, -m module or -c code), got "
            f"{command[0]!r}."
        )
    _launch._check_program(command[0])
    devices = args.run_devices if args.run_devices is not None else args.devices
    env = dict(os.environ)
    if devices is not None:
        if devices < 1:
            raise ValueError(f"--devices must be >= 1, got {devices}.")
        env[CPU_DEVICES_ENV] = str(devices)
        flags = [
            f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(_HOST_DEVICES_FLAG)
        ]
        env["XLA_FLAGS"] = " ".join([*flags, f"{_HOST_DEVICES_FLAG}={devices}"])
    return [sys.executable, *command], env


def _run_once(command: list[str], env: dict[str, str], timeout: float | None, grace: float) -> int:
    """Runs the script to its end; forwards SIGTERM; returns its status (128 + signal)."""
    child = subprocess.Popen(command, env=env)
    forwarded = {}

    def forward(signum, _frame):
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):  # Ctrl-C reaches the child by itself too
        forwarded[sig] = signal.signal(sig, forward if sig == signal.SIGTERM else signal.SIG_IGN)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                code = child.wait(timeout=None if deadline is None else 0.1)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    return _end(child, command, timeout, grace)
    finally:
        for sig, previous in forwarded.items():
            signal.signal(sig, previous)
    return code if code >= 0 else 128 - code


def _end(child: subprocess.Popen, command: list[str], timeout: float, grace: float) -> int:
    print(
        f"phalanx run: {_name(command)} ran past --timeout {timeout:g} s; ending it.",
        file=sys.stderr,
    )
    child.terminate()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    return TIMEOUT_EXIT


def _name(command: list[str]) -> str:
    """The script's name in messages: ``train.py``, ``-m package.module``, ``-c``."""
    return " ".join(command[1:3]) if command[1] == "-m" else command[1]
