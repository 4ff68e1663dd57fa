"""One process with 2 devices against 2 processes with 1 device each.

The same 2 replicas either way; what differs is the path of the gradient
all-reduce: within one process (XLA's in-process CPU collectives) or between
two processes over gloo on loopback (``phalanx launch``). Prints:

- examples/s of ``Model.fit`` on the seeds' MLP (784-128-10, relu then
  softmax, Adam, sparse categorical cross-entropy), random float32 data,
  global batch 1024, ``steps_per_execution`` 20 (median over timed epochs,
  after one epoch that compiles);
- milliseconds per cross-replica all-reduce of a parameter-sized array
  (101,770 float32, the MLP's weights): ``strategy.run`` of a ``psum``,
  waiting on each result;

with the ratios 2 x 1 / 1 x 2.

    python bench/scaling.py [--epochs 3] [--steps 40] [--calls 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

D, H, C, BATCH, SPE = 784, 128, 10, 1024, 20
PARAMS = D * H + H + H * C + C  # 101,770


def _fit_examples_per_s(strategy, epochs: int, steps: int) -> float:
    import numpy as np

    import phalanx
    from phalanx import layers

    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * BATCH, D)).astype(np.float32)
    y = rng.integers(0, C, steps * BATCH).astype(np.int32)
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Dense(H, activation="relu"), layers.Dense(C, activation="softmax")]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=SPE,
        )
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # compiles
    rates = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
        rates.append(len(x) / (time.perf_counter() - start))
    return statistics.median(rates)


def _all_reduce_ms(strategy, calls: int) -> float:
    import jax
    import numpy as np

    import phalanx

    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: np.full(PARAMS, ctx.replica_id_in_sync_group + 1.0, np.float32)
    )

    def psum(v):
        return phalanx.get_replica_context().all_reduce("SUM", v)

    jax.block_until_ready(strategy.run(psum, args=(values,)))  # compiles
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(strategy.run(psum, args=(values,)))
    return (time.perf_counter() - start) / calls * 1e3


def child(args) -> None:
    import jax

    import phalanx

    strategy = phalanx.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 2, strategy
    result = {
        "examples_per_s": _fit_examples_per_s(strategy, args.epochs, args.steps),
        "all_reduce_ms": _all_reduce_ms(strategy, args.calls),
    }
    if jax.process_index() == 0:
        print("RESULT " + json.dumps(result), flush=True)


def _run(command: list[str], env: dict) -> dict:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    for line in done.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError(
        f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs")
    parser.add_argument("--steps", type=int, default=40, help="steps per epoch")
    parser.add_argument("--calls", type=int, default=50, help="timed all-reduces")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "TF_CONFIG"))}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS="")
    me = [os.path.abspath(__file__), "--child", f"--epochs={args.epochs}"]
    me += [f"--steps={args.steps}", f"--calls={args.calls}"]
    one = _run([sys.executable, *me], {**env, "PHALANX_CPU_DEVICES": "2"})
    launch = [sys.executable, "-m", "phalanx.cli", "launch", "-n", "2"]
    two = _run([*launch, "--devices-per-process", "1", "--timeout", "500", "--", *me], env)
    print(f"MLP {D}-{H}-{C}, Adam, global batch {BATCH}, steps_per_execution {SPE}, 2 replicas")
    print(f"{'':34}{'1 process x 2':>15}{'2 processes x 1':>17}{'ratio':>8}")
    for key, label, fmt in (
        ("examples_per_s", "fit examples/s", "{:,.0f}"),
        ("all_reduce_ms", f"all-reduce of {PARAMS:,} float32, ms", "{:.2f}"),
    ):
        a, b = one[key], two[key]
        print(f"{label:34}{fmt.format(a):>15}{fmt.format(b):>17}{b / a:>8.2f}")


if __name__ == "__main__":
    main()
