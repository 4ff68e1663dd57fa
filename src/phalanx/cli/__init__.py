"""The ``phalanx`` command: ``demo``, ``info``, ``run``, ``launch`` and ``records``.

Each subcommand lives in its own module with ``register(subparsers)``; the
global ``--devices N`` option (or ``PHALANX_CPU_DEVICES``) simulates N CPU
devices and is applied before any subcommand touches JAX.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..cluster import cpu_device_count_from_env, set_cpu_device_count
from ..errors import PhalanxError
from . import _demo, _info, _launch, _records, _run

_SUBCOMMANDS = (_demo, _info, _run, _launch, _records)


def build_parser() -> argparse.ArgumentParser:
    """Returns the ``phalanx`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="phalanx",
        description="Distributed training with tf.distribute's semantics on JAX.",
    )
    parser.add_argument(
        "--devices",
        type=int,
        default=None,
        metavar="N",
        help="simulate N CPU devices (for a CPU-only machine; default: PHALANX_CPU_DEVICES)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``phalanx`` command; returns its exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    script = _script_given_as_command(argv)
    if script is not None:
        print(
            f"phalanx: {script!r} is not a command. Run a script with: phalanx run "
            f"[--devices N] {script} [args ...] (one process), or phalanx launch -n N -- "
            f"{script} (several).",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        devices = args.devices if args.devices is not None else cpu_device_count_from_env()
        if devices is not None:
            set_cpu_device_count(devices)
    except (ValueError, RuntimeError) as e:
        print(f"phalanx: {e}", file=sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except PhalanxError as e:  # a mistake the message explains: no traceback
        print(f"phalanx {args.command}: {e}", file=sys.stderr)
        return 2


def _script_given_as_command(argv: list[str]) -> str | None:
    """The ``train.py`` of ``phalanx [--devices N] train.py``, else None."""
    rest = argv[2:] if argv[:1] == ["--devices"] else argv
    rest = rest[1:] if rest[:1] and rest[0].startswith("--devices=") else rest
    return rest[0] if rest and rest[0].endswith(".py") else None


__all__ = ["build_parser", "main"]
