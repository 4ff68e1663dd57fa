"""``phalanx launch``: run N processes of a script as one job, and supervise them.

    phalanx launch -n 2 --devices-per-process 2 -- train.py --epochs 3

Each process finds its place through ``phalanx.cluster.initialize()`` (the
``PHALANX_*`` variables); its output lines are prefixed with ``[i]``. When one
process fails, the launcher ends the others within seconds and names it.
With ``--nnodes M --node-rank R --coordinator HOST:PORT`` one launcher per
machine runs a job across machines.

With ``--max-restarts N`` a job that ended with a non-zero status is started
again, at most N times: status 42 (``phalanx.checkpoint.RESTARTABLE_EXIT_CODE``,
the processes saved a checkpoint on SIGTERM) or a crash (an exception, a
process killed). ``BackupAndRestore`` (or a ``CheckpointManager``) in the
script resumes it from its last checkpoint. A job ended by the launcher's own
deadline (124) or by Ctrl-C / SIGTERM to the launcher (130, 143) is not
restarted.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time

from ..checkpoint import RESTARTABLE_EXIT_CODE
from ..cluster import LaunchSpec, launch, split_address
from ..errors import ClusterConfigError


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``launch`` to the ``phalanx`` command."""
    p = sub.add_parser(
        "launch",
        help="run N processes of a script as one distributed job, supervised",
        description="Run N processes of a script as one distributed job, and supervise them.",
        usage="phalanx launch -n N [options] -- script.py [args ...]",
    )
    p.add_argument(
        "-n", "--nprocs", type=int, required=True, metavar="N", help="processes on this machine"
    )
    p.add_argument(
        "--devices-per-process",
        type=int,
        default=None,
        metavar="K",
        help="simulate K CPU devices in each process (PHALANX_CPU_DEVICES; default: --devices)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="P",
        help="coordinator port on 127.0.0.1 (default: a free one)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=(
            "end the job after S seconds (exit 124). The watchdog ends a job whose training "
            "step is stuck (PHALANX_WATCHDOG_TIMEOUT, 120 s); a script that hangs outside any "
            "step (before fit, between loops, in code that never calls watchdog.beat) is ended "
            "only by --timeout"
        ),
    )
    p.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL (default 5)",
    )
    p.add_argument(
        "--nnodes",
        type=int,
        default=1,
        metavar="M",
        help="machines in the job; run one launcher on each",
    )
    p.add_argument(
        "--node-rank", type=int, default=0, metavar="R", help="this machine's index in [0, M)"
    )
    p.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="process 0's address (required with --nnodes > 1)",
    )
    p.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        metavar="N",
        help="start the job again, up to N times, after it fails or its processes saved on "
        "preemption (exit 42); the script resumes from its checkpoint (default 0)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="script.py and its arguments (or -m module, or a program)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validates the options, starts the processes, returns the job's exit status."""
    try:
        spec = _spec(args)
    except (ValueError, ClusterConfigError) as e:
        print(f"phalanx launch: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    status = launch(spec)
    for restart in range(1, args.max_restarts + 1):
        if status == 0 or status in _NOT_RESTARTED:
            break
        why = " (saved before preemption)" if status == RESTARTABLE_EXIT_CODE else ""
        print(
            f"phalanx launch: the job ended with status {status}{why}; restarting it "
            f"({restart} of {args.max_restarts}).",
            file=sys.stderr,
        )
        status = launch(spec)
    if status == 0:  # a failure is reported by the launcher, naming the process
        where = f" of node {spec.node_rank} ({spec.nnodes} nodes)" if spec.nnodes > 1 else ""
        print(
            f"phalanx launch: all {spec.nprocs} processes{where} exited 0 in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return status


def _spec(args: argparse.Namespace) -> LaunchSpec:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ValueError("nothing to run; usage: phalanx launch -n N -- script.py [args ...]")
    program = command[0]
    if command[0].endswith(".py") or command[0] in ("-m", "-c"):
        command = [sys.executable, *command]
    if args.nprocs < 1 or args.nnodes < 1:
        raise ValueError(
            f"-n and --nnodes must be >= 1, got -n {args.nprocs} --nnodes {args.nnodes}."
        )
    if not 0 <= args.node_rank < args.nnodes:
        raise ValueError(f"--node-rank must be in [0, {args.nnodes}), got {args.node_rank}.")
    if args.nnodes > 1 and not args.coordinator:
        raise ValueError(
            "--nnodes > 1 needs --coordinator HOST:PORT: the address of node 0, where process 0 "
            "runs, reachable from every machine (the same on every launcher)."
        )
    if args.coordinator:
        split_address(args.coordinator)
    _check_options(args)
    _check_program(program)
    devices = args.devices_per_process if args.devices_per_process is not None else args.devices
    if devices is not None and devices < 1:
        raise ValueError(f"--devices-per-process must be >= 1, got {devices}.")
    return LaunchSpec(
        command=command,
        nprocs=args.nprocs,
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        coordinator=args.coordinator,
        port=args.port,
        devices_per_process=devices,
        timeout=args.timeout,
        grace=args.grace,
    )


# The launcher's own deadline, Ctrl-C and SIGTERM to the launcher: the job is not restarted.
_NOT_RESTARTED = (124, 130, 143)


def _check_options(args: argparse.Namespace) -> None:
    if args.max_restarts < 0:
        raise ValueError(
            f"--max-restarts must be >= 0, got {args.max_restarts}; 0 runs the job once."
        )
    if args.port is not None and not 0 < args.port < 65536:
        raise ValueError(
            f"--port must be a TCP port in 1..65535, got {args.port}; leave it out to use a "
            "free port."
        )
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ValueError(
            f"--timeout must be a number of seconds > 0, got {args.timeout:g}; leave it out "
            "for no bound."
        )
    if not (math.isfinite(args.grace) and args.grace >= 0):
        raise ValueError(
            f"--grace must be a number of seconds >= 0 (between SIGTERM and SIGKILL), got "
            f"{args.grace:g}."
        )


def _check_program(program: str) -> None:
    if program in ("-m", "-c"):
        return
    if program.endswith(".py"):
        if not os.path.isfile(program):
            raise ValueError(f"cannot run {program!r}: no such file.")
        return
    if os.sep in program:
        if not os.path.isfile(program):
            raise ValueError(f"cannot run {program!r}: no such file.")
        if not os.access(program, os.X_OK):
            raise ValueError(
                f"cannot run {program!r}: it is not executable (chmod +x it, or run a .py "
                "script, which phalanx launch runs with this Python)."
            )
    elif shutil.which(program) is None:
        raise ValueError(
            f"cannot run {program!r}: no such program on PATH. Give a script (train.py, run "
            "with this Python), -m module, or the path of a program."
        )
