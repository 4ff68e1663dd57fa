"""``phalanx info``: what JAX sees here, and the strategy phalanx would give."""

from __future__ import annotations

import argparse
import json

import jax


def register(sub: argparse._SubParsersAction) -> None:
    """Adds ``info`` to the ``phalanx`` command."""
    p = sub.add_parser("info", help="report JAX, the devices, the processes and the strategy")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def collect() -> dict:
    """Returns the facts ``phalanx info`` prints, as a dict."""
    import phalanx

    strategy = phalanx.get_strategy()
    local = jax.local_devices()
    return {
        "phalanx": phalanx.__version__,
        "jax": jax.__version__,
        "platform": jax.default_backend(),
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [str(d) for d in local],
        "global_device_count": jax.device_count(),
        "device_kind": local[0].device_kind if local else None,
        "strategy": repr(strategy),
        "num_replicas_in_sync": strategy.num_replicas_in_sync,
    }


def run(args: argparse.Namespace) -> int:
    """Prints the report."""
    facts = collect()
    if args.json:
        print(json.dumps(facts))
        return 0
    width = max(map(len, facts))
    for key, value in facts.items():
        if isinstance(value, list):
            value = (
                ", ".join(value) if len(value) <= 8 else f"{value[0]} .. {value[-1]} ({len(value)})"
            )
        print(f"{key:<{width}}  {value}")
    return 0
