"""Per-call overhead of ``strategy.run`` against plain ``jax.jit``.

Prints, for 1, 2 and 8 simulated CPU devices, the microseconds per call of a
trivial function (``x * 2 + 1`` on a small batch) through ``strategy.run`` and
through ``jax.jit`` of the same function on the same global batch, and their
ratio. Medians of several repeats, each timing many calls and waiting for the
last result.

    python bench/strategy_run.py [--calls 2000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )

import jax
import numpy as np

import phalanx


def _fn(x):
    return x * 2.0 + 1.0


def _time_calls(call, calls: int, repeats: int) -> float:
    """Median microseconds per call; each repeat waits on its last result."""
    jax.block_until_ready(call())  # compile
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = None
        for i in range(calls):
            out = call()
            if i % 32 == 31:  # bound the calls in flight (DESIGN.md: CPU collectives)
                jax.block_until_ready(out)
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.device_count()} {jax.default_backend()} devices")
    print(f"{'devices':>7}  {'run us/call':>11}  {'jit us/call':>11}  {'ratio':>6}")
    for n in (1, 2, 8):
        strategy = phalanx.MirroredStrategy(jax.devices()[:n])
        batch = strategy.shard_batch(np.ones((8 * n, 16), np.float32))
        jitted = jax.jit(_fn)
        run_us = _time_calls(
            lambda s=strategy, b=batch: s.run(_fn, args=(b,)), args.calls, args.repeats
        )
        jit_us = _time_calls(lambda b=batch, f=jitted: f(b), args.calls, args.repeats)
        print(f"{n:>7}  {run_us:>11.1f}  {jit_us:>11.1f}  {run_us / jit_us:>6.2f}")


if __name__ == "__main__":
    main()
