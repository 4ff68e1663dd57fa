"""Examples/s of phalanx.data pipelines on MNIST-shaped arrays, against plain numpy indexing.

Data: 60000 x 784 float32 images and int64 labels in memory, batches of 1024.

* numpy: the reference; a permutation per epoch and ``x[idx], y[idx]`` per batch.
* vectorized: ``from_tensor_slices((x, y)).cache().shuffle(60000).repeat().batch(1024,
  drop_remainder=True)`` (phalanx gathers whole batches by index).
* vectorized+map: the same, with a ``map`` over each batch (scale to [0, 1]).
* per-element map: ``from_tensor_slices((x, y)).map(scale).batch(1024)``: Python per element,
  sequential and with ``num_parallel_calls=2``.

Prints the median of several runs for each, and the ratio to numpy.

Usage: python bench/data_pipeline.py [--runs 5] [--batches 120]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from phalanx.data import Dataset

N, D, BATCH = 60000, 784, 1024


def _time(make_iter, batches: int) -> float:
    it = make_iter()
    next(it)  # warm up (the first shuffle order, thread start)
    start = time.perf_counter()
    for _ in range(batches):
        b = next(it)
    elapsed = time.perf_counter() - start
    assert b[0].shape == (BATCH, D)
    return batches * BATCH / elapsed


def numpy_reference(x, y):
    def gen():
        rng = np.random.default_rng(0)
        while True:
            perm = rng.permutation(N)
            for s in range(0, N - BATCH + 1, BATCH):
                idx = perm[s : s + BATCH]
                yield x[idx], y[idx]

    return gen()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batches", type=int, default=120)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((N, D), dtype=np.float32)
    y = rng.integers(0, 10, N).astype(np.int64)

    def scale(a, b):
        return a * np.float32(1 / 255), b

    base = Dataset.from_tensor_slices((x, y)).cache().shuffle(N, seed=0).repeat()
    cases = {
        "numpy indexing (reference)": (lambda: numpy_reference(x, y), args.batches),
        "vectorized shuffle+repeat+batch": (
            lambda: iter(base.batch(BATCH, drop_remainder=True)),
            args.batches,
        ),
        "vectorized + map over batches": (
            lambda: iter(base.batch(BATCH, drop_remainder=True).map(scale)),
            args.batches,
        ),
        "per-element map, sequential": (
            lambda: iter(Dataset.from_tensor_slices((x, y)).repeat().map(scale).batch(BATCH)),
            max(args.batches // 20, 3),
        ),
        "per-element map, 2 threads": (
            lambda: iter(
                Dataset.from_tensor_slices((x, y))
                .repeat()
                .map(scale, num_parallel_calls=2)
                .batch(BATCH)
            ),
            max(args.batches // 20, 3),
        ),
    }
    results = {}
    for name, (make, batches) in cases.items():
        runs = [_time(make, batches) for _ in range(args.runs)]
        results[name] = statistics.median(runs)
    ref = results["numpy indexing (reference)"]
    print(
        f"MNIST-shaped batches: {N}x{D} float32 + int64 labels, batch {BATCH}, median of {args.runs} runs"
    )
    for name, rate in results.items():
        print(f"{name:34s} {rate / 1e6:8.3f} M examples/s   {rate / ref:6.2f}x numpy")


if __name__ == "__main__":
    main()
