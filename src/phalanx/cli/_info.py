"""``phalanx info``: what JAX sees here, the cluster this process belongs to, the strategy.

The cluster is what ``phalanx.cluster.resolve()`` finds in the environment
(``PHALANX_*``, ``TF_CONFIG``, Slurm, Kubernetes, a TPU VM), described
without connecting to anything: ``info`` never initializes ``jax.distributed``.
"""

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
        "cluster": describe_cluster(),
        "strategy": repr(strategy),
        "num_replicas_in_sync": strategy.num_replicas_in_sync,
    }


def describe_cluster() -> str:
    """One line: the resolved cluster, ``none (...)``, or why the environment is invalid."""
    from ..cluster import resolve
    from ..errors import ClusterConfigError

    try:
        resolver = resolve()
    except (ClusterConfigError, ValueError) as e:
        return f"invalid: {str(e).splitlines()[0]}"
    if resolver is None:
        return "none (one process on the local devices)"
    return resolver.describe()


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
