"""The cost of regularizers in ``fit``: the seeds' MLP with and without penalties.

The MNIST-shaped MLP (784-128-10, Adam, batch 1024, ``steps_per_execution=50``,
one device) on random arrays, plain and with ``kernel_regularizer="l2"`` on both
layers and ``activity_regularizer="l1"`` on the hidden one. Alternates the two
``--runs`` times; each run prints the best of three 2-epoch ``fit`` calls
(after a warm-up), by wall clock and by this process's CPU time (examples per
CPU-second: less sensitive to other processes on a shared machine).

Usage: python bench/regularizers.py [--runs 2] [--examples 51200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import phalanx
from phalanx import layers


def throughput(x, y, regularized: bool) -> tuple[float, float]:
    """Examples per wall second and per CPU second, best of three 2-epoch fits."""
    hidden = dict(kernel_regularizer="l2", activity_regularizer="l1") if regularized else {}
    model = phalanx.Sequential(
        [
            layers.Input(shape=(784,)),
            layers.Dense(128, activation="relu", **hidden),
            layers.Dense(
                10, activation="softmax", kernel_regularizer="l2" if regularized else None
            ),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=50)
    model.fit(x, y, batch_size=1024, epochs=1, verbose=0)
    wall = cpu = 0.0
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        model.fit(x, y, batch_size=1024, epochs=2, verbose=0)
        wall = max(wall, 2 * len(x) / (time.perf_counter() - start))
        cpu = max(cpu, 2 * len(x) / (time.process_time() - start_cpu))
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--examples", type=int, default=51200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((args.examples, 784), dtype=np.float32)
    y = rng.integers(0, 10, args.examples)
    for _ in range(args.runs):
        for regularized in (False, True):
            label = "regularized" if regularized else "plain"
            wall, cpu = throughput(x, y, regularized)
            print(
                f"{label:<12} {wall:>10,.0f} examples/s  {cpu:>10,.0f} per CPU-second", flush=True
            )


if __name__ == "__main__":
    main()
