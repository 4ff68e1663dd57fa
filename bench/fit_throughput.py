"""Training throughput of ``Model.fit`` against a hand-written JAX loop.

The seeds' MLP (784-128-10, relu then softmax, Adam, sparse categorical
cross-entropy) on 60000x784 random float32, global batch 1024. Prints
steady-state examples/s (median over the epochs after the first, which
compiles) for:

- the reference: the same model and optax Adam written by hand in JAX,
  ``jit`` + ``lax.scan`` over each epoch's batches, data on the device;
- phalanx ``fit`` with steps_per_execution 1 and 50, numpy and ``Dataset``
  input, on one device and on MirroredStrategy over 2 simulated devices;

each with its ratio to the reference measured in the same process, per second
of wall time and of the process's CPU time (the steadier figure on a shared
machine), and the time from process start to the first finished training step.

    python bench/fit_throughput.py [--epochs 4] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

N, D, H, C, BATCH = 60000, 784, 128, 10, 1024


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.random((N, D), dtype=np.float32), rng.integers(0, C, N).astype(np.int32)


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return tuple(now - then for now, then in zip(_clocks(), start, strict=True))


def _rates(examples: int, times: list) -> list[float]:
    """Examples per second of wall time and of the process's CPU time (all threads: the
    steadier figure when other work shares the machine), median epoch after the first."""
    return [examples / statistics.median(t[k] for t in times[1:]) for k in (0, 1)]


def reference(epochs: int) -> list[float]:
    """Examples/s of the hand-written JAX loop (median epoch after the first)."""
    import jax
    import jax.numpy as jnp
    import optax

    x, y = _data()
    steps = N // BATCH
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(k1, (D, H)) * 0.05,
        "b1": jnp.zeros(H),
        "w2": jax.random.normal(k2, (H, C)) * 0.05,
        "b2": jnp.zeros(C),
    }
    tx = optax.adam(1e-3)
    opt = tx.init(params)
    xd, yd = jax.device_put(x), jax.device_put(y)

    def loss_fn(p, xb, yb):
        h = jax.nn.relu(xb @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    @jax.jit
    def epoch(p, o, perm):
        def step(carry, idx):
            p, o = carry
            xb, yb = jnp.take(xd, idx, axis=0), jnp.take(yd, idx, axis=0)
            loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
            u, o = tx.update(g, o, p)
            return (optax.apply_updates(p, u), o), loss

        (p, o), losses = jax.lax.scan(step, (p, o), perm[: steps * BATCH].reshape(steps, BATCH))
        return p, o, losses[-1]

    import numpy as np

    times = []
    for e in range(epochs):
        perm = jnp.asarray(np.random.default_rng(e).permutation(N).astype(np.int32))
        t = _clocks()
        params, opt, loss = epoch(params, opt, perm)
        loss.block_until_ready()
        times.append(_since(t))
    return _rates(steps * BATCH, times)


def phalanx_fit(epochs: int, devices: int, spe: int, source: str) -> list[float]:
    """Examples/s of ``fit`` (median epoch after the first)."""
    import jax

    import phalanx
    from phalanx import layers

    x, y = _data()
    strategy = (
        phalanx.OneDeviceStrategy()
        if devices == 1
        else phalanx.MirroredStrategy(jax.devices()[:devices])
    )
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(D,)),
                layers.Dense(H, activation="relu"),
                layers.Dense(C, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=spe
        )
    times: list = []

    class Timer(phalanx.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = _clocks()

        def on_epoch_end(self, epoch, logs=None):
            times.append(_since(self.t))

    steps = N // BATCH
    if source == "numpy":  # whole batches: steps_per_epoch would read on through the pass
        model.fit(  # (Keras 3: an epoch of 58 steps, then one of the pass's last step)
            x[: steps * BATCH],
            y[: steps * BATCH],
            batch_size=BATCH,
            epochs=epochs,
            verbose=0,
            callbacks=[Timer()],
        )
    else:
        ds = (
            phalanx.data.Dataset.from_tensor_slices((x, y))
            .shuffle(N, seed=0)
            .batch(BATCH, drop_remainder=True)
            .prefetch(2)
        )
        model.fit(ds, epochs=epochs, verbose=0, callbacks=[Timer()])
    return _rates(steps * BATCH, times)


def first_step_child() -> None:
    """Prints the seconds from interpreter start to the end of the first fit step."""
    import numpy as np

    import phalanx
    from phalanx import layers

    class Stop(phalanx.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            print(json.dumps({"first_step_s": time.time() - float(os.environ["BENCH_T0"])}))
            self.model.stop_training = True

    model = phalanx.Sequential(
        [
            layers.Input(shape=(D,)),
            layers.Dense(H, activation="relu"),
            layers.Dense(C, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = np.random.rand(BATCH * 2, D).astype(np.float32)
    model.fit(x, np.zeros(BATCH * 2, np.int32), batch_size=BATCH, verbose=0, callbacks=[Stop()])


def child(devices: int, epochs: int) -> None:
    """Runs the configurations of one device count; prints one JSON line."""
    out = {"reference": reference(epochs)}
    for source in ("numpy", "dataset"):
        for spe in (1, 50):
            out[f"fit spe={spe:<2} {source:<7} {devices} dev"] = phalanx_fit(
                epochs, devices, spe, source
            )
    print(json.dumps(out))


def _spawn(args: list[str], devices: int) -> dict:
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        BENCH_T0=repr(time.time()),
    )
    done = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--first-step", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_step:
        return first_step_child()
    if args.child is not None:
        return child(args.child, args.epochs)
    print(f"MLP {D}-{H}-{C}, Adam, {N} examples, global batch {BATCH}; examples/s")
    print(f"{'':<28} {'per second of wall time':>24} {'per second of CPU time':>24}")
    print(f"{'configuration':<28} {'examples':>11} {'vs ref':>12} {'examples':>11} {'vs ref':>12}")
    for devices in (1, 2):
        res = _spawn(["--child", str(devices), "--epochs", str(args.epochs)], devices)
        ref = res.pop("reference")
        res = {f"reference JAX ({devices} dev process)": ref, **res}
        for name, value in res.items():
            cells = "".join(f" {v:>11,.0f} {v / r:>12.2f}" for v, r in zip(value, ref, strict=True))
            print(f"{name:<28}{cells}")
    starts = [_spawn(["--first-step"], 1)["first_step_s"] for _ in range(3)]
    print(f"start-up to first finished step: {statistics.median(starts):.2f} s (median of 3)")


if __name__ == "__main__":
    main()
