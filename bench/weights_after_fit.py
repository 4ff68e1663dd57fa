"""Time ``model.get_weights()`` and ``model(x)`` after ``fit`` on a ~100M-parameter MLP.

The model is ``--layers`` ``Dense(--width)`` layers over ``--width`` inputs
(6 x 4096: 100.7M parameters, 403 MB of float32), compiled with Adam and fit
for one epoch of ``--steps`` steps of batch ``--batch``. Then, each timed
``--runs`` times (the median printed, and the first call apart, since it
traces the eager ops):

* ``model(x)``: one eager call on a batch of ``--batch`` after ``fit``;
* ``model.get_weights()``: every weight as numpy (a copy to the host is its job);
* ``model.layers[0].get_weights()``: one layer's weights.

After each it prints the process's peak resident memory so far, which a host
copy of the whole model raises.

With ``--devices N`` (N simulated CPU devices) and ``--strategy mirrored`` the
model is built and trained under ``MirroredStrategy``; ``--strategy sharded``
uses ``MirroredStrategy(shard_parameters=True)``.

Usage: python bench/weights_after_fit.py [--width 4096] [--layers 6] [--runs 5]
       [--devices 1] [--strategy default|mirrored|sharded]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import time


def _setup(devices: int) -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = f"--xla_force_host_platform_device_count={devices}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def _timed(fn, runs: int) -> tuple[float, float]:
    """(first call, median of the next ``runs``) in milliseconds, each result made ready."""
    import jax

    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append((time.perf_counter() - start) * 1e3)
    return times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", choices=("default", "mirrored", "sharded"), default="default")
    args = parser.parse_args()
    _setup(args.devices)

    import numpy as np

    import phalanx
    from phalanx import layers

    if args.strategy == "default":
        scope = contextlib.nullcontext()
    else:
        scope = phalanx.MirroredStrategy(shard_parameters=args.strategy == "sharded").scope()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch * args.steps, args.width)).astype(np.float32)
    y = rng.standard_normal((args.batch * args.steps, args.width)).astype(np.float32)
    with scope:
        model = phalanx.Sequential(
            [layers.Input(shape=(args.width,))]
            + [layers.Dense(args.width) for _ in range(args.layers)]
        )
        model.compile(optimizer="adam", loss="mse")
    start = time.perf_counter()
    model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0)
    fit_s = time.perf_counter() - start
    params = model.count_params()
    print(
        f"model: {args.layers} x Dense({args.width}), {params / 1e6:.1f}M parameters "
        f"({params * 4 / 1e6:.0f} MB float32), strategy {args.strategy}, "
        f"{args.devices} device(s); fit {fit_s:.1f} s"
    )
    batch = x[: args.batch]
    rows = [
        ("model(x)", lambda: model(batch)),
        ("model.get_weights()", model.get_weights),
        ("model.layers[0].get_weights()", model.layers[0].get_weights),
    ]
    for name, fn in rows:
        first, median = _timed(fn, args.runs)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{name:30s} first {first:8.1f} ms  median of {args.runs} {median:8.1f} ms  "
            f"peak RSS so far {peak:.0f} MiB"
        )


if __name__ == "__main__":
    main()
