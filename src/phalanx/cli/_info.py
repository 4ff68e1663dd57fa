"""``phalanx info``: what JAX sees here, the cluster this process belongs to, the strategy.

The strategy is the one ``phalanx demo`` would train with (``cli/_strategy.py``
chooses for both); with a cluster, its replica count assumes every process has
as many devices as this one.

The cluster is what ``phalanx.cluster.resolve()`` finds in the environment
(``PHALANX_*``, ``TF_CONFIG``, Slurm, Kubernetes, a TPU VM), described
without connecting to anything: ``info`` never initializes ``jax.distributed``.

``--memory`` adds each local device's memory as the platform reports it and a
model's bytes per device, replicated vs sharded, from XLA's memory analysis of
its compiled training step (``cli/_info_memory.py``).
"""

from __future__ import annotations

import argparse
import json
import sys

import jax

import phalanx

from ..cluster import set_cpu_device_count
from ..errors import ClusterConfigError
from . import _info_memory
from ._strategy import choose_strategy


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``info`` to the ``phalanx`` command."""
    p = sub.add_parser("info", help="report JAX, the devices, the processes and the strategy")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--devices",
        dest="info_devices",
        type=int,
        default=None,
        metavar="N",
        help="simulate N CPU devices (same as phalanx --devices N); default: the real devices",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="also report memory per device: the platform's counters, and --model's training "
        "step replicated vs sharded (XLA's memory analysis; compiled, not run)",
    )
    p.add_argument(
        "--model",
        choices=tuple(_info_memory.MODELS),
        default=None,
        help="the model --memory analyses: "
        + "; ".join(f"{k}: {v}" for k, v in _info_memory.MODELS.items())
        + " (default: demo)",
    )
    p.add_argument(
        "--batch-size", type=int, default=None, help="--memory's global batch (default: 64)"
    )
    p.set_defaults(handler=run)


def collect() -> tuple[dict, str | None]:
    """Returns the facts ``phalanx info`` prints, and the cluster error (None when valid)."""
    local = jax.local_devices()
    facts = {
        "phalanx": phalanx.__version__,
        "jax": jax.__version__,
        "platform": jax.default_backend(),
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [str(d) for d in local],
        "global_device_count": jax.device_count(),
        "device_kind": local[0].device_kind if local else None,
    }
    try:
        choice = choose_strategy("auto")
    except ClusterConfigError as e:
        message = str(e).splitlines()[0]
        facts.update(cluster=f"invalid: {message}", strategy=None, num_replicas_in_sync=None)
        return facts, message
    facts.update(
        cluster=choice.cluster.describe() if choice.cluster else _NO_CLUSTER,
        strategy=choice.class_name,
        strategy_reason=choice.reason,
        num_replicas_in_sync=choice.num_replicas_in_sync,
    )
    return facts, None


_NO_CLUSTER = "none (one process on the local devices)"


def run(args: argparse.Namespace) -> int:
    """Prints the report; exits 2 when the environment describes an invalid cluster."""
    if not args.memory and (args.model is not None or args.batch_size is not None):
        print(
            "phalanx info: --model and --batch-size choose what --memory analyses; add "
            "--memory (phalanx info --memory --model mlp).",
            file=sys.stderr,
        )
        return 2
    if args.info_devices is not None:
        if args.info_devices < 1:
            print(
                f"phalanx info: --devices must be >= 1, got {args.info_devices}.", file=sys.stderr
            )
            return 2

        set_cpu_device_count(args.info_devices)
    facts, error = collect()
    memory = _memory_report(args) if args.memory else None
    if memory is not None and isinstance(memory, str):
        print(f"phalanx info: {memory}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(facts if memory is None else {**facts, "memory": memory}))
    else:
        _print_table(facts)
        if memory is not None:
            _info_memory.print_memory(memory)
    if error is not None:
        print(
            f"phalanx info: invalid cluster configuration: {error}\n"
            "Fix the variable named, unset it, or set PHALANX_CLUSTER=none to run as one "
            "process on the local devices.",
            file=sys.stderr,
        )
        return 2
    return 0


def _memory_report(args: argparse.Namespace) -> dict | str:
    """``--memory``'s facts, or what is wrong with the options (a message)."""
    devices = jax.local_device_count()
    size = 64 if args.batch_size is None else args.batch_size
    name = args.model or "demo"
    if size < 1 or size % devices:
        return (
            f"--batch-size must be a positive multiple of the {devices} local devices (the "
            f"global batch is split over them), got {size}. Try --batch-size {devices * 8}."
        )
    return {
        "devices": _info_memory.device_memory(),
        "model_name": name,
        "batch_size": size,
        "model": _info_memory.model_memory(name, size),
    }


def _print_table(facts: dict) -> None:
    width = max(map(len, facts))
    for key, value in facts.items():
        if isinstance(value, list):
            value = (
                ", ".join(value) if len(value) <= 8 else f"{value[0]} .. {value[-1]} ({len(value)})"
            )
        print(f"{key:<{width}}  {value}")
