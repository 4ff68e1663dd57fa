"""``fit`` on real models against a hand-written flax.nnx + optax ``jit`` step (issue 24).

Workloads (each in its own child process, phalanx and the flax step side by
side in that process, their order alternating between rounds so both see the
same load):

- ``conv``: the "Use TPUs" guide's ``create_model`` on 28x28x1 inputs:
  Conv2D(256, 3, relu) -> Conv2D(256, 3, relu) -> Flatten -> Dense(256, relu)
  -> Dense(128, relu) -> Dense(10), L2(1e-5) on every kernel, Adam,
  SparseCategoricalCrossentropy(from_logits=True); batch 32 and 256,
  steps_per_execution 1 and 32;
- ``transformer``: a 2-block encoder (MultiHeadAttention 4 heads x 32, model
  width 128, feed-forward 256, sequence 128, post-LayerNorm), mean pooled,
  Dense(10); batch 64;
- ``tfrecord``: the seeds' MLP (784-128-10) fed from 4 TFRecord files through
  the README's ``list_files -> interleave -> batch -> map(parse_example) ->
  prefetch``, steps_per_execution 50 (the flax step reads the same examples
  from memory);
- ``ladder``: the seeds' MLP on numpy arrays, steps_per_execution 1, batch 64,
  256, 1024, 4096.

For each it prints examples/s (wall time), examples per CPU-second (the
process's CPU time, all threads: the steadier figure on a shared machine),
the wall and CPU seconds from building the model to the first finished execution (compile
included; at steps_per_execution N that execution is N steps), the seconds JAX reports
lowering and compiling programs in the whole part (its ``jax.monitoring`` events; not
tracing, whose events nest: the compile cost, whatever the steps per execution), the
peak RSS of that part (``/proc/self/clear_refs`` resets the high-water mark between the
parts) and phalanx / flax per CPU-second. The
steady figures are the median epoch after the first, then the median over
``--rounds`` rounds.

    python bench/models.py [--rounds 3] [--only conv,ladder] [--quick]

``--quick`` runs every workload at tiny sizes (a smoke test:
``tests/bench/test_models_bench.py``); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

L2 = 1e-5


def _cases(quick: bool) -> list[dict]:
    """The workloads: name, model, batch, steps_per_execution, steps per epoch."""
    if quick:
        conv = {"filters": 4, "dense": 8, "image": 8}
        tr = {"seq": 8, "d": 16, "heads": 2, "key": 8, "ff": 16}
        return [
            {"name": "conv b4 spe1", "model": "conv", "batch": 4, "spe": 1, "steps": 2, **conv},
            {"name": "conv b4 spe2", "model": "conv", "batch": 4, "spe": 2, "steps": 2, **conv},
            {"name": "transformer b4", "model": "transformer", "batch": 4, "spe": 1, "steps": 2}
            | tr,
            {"name": "mlp tfrecord spe2", "model": "tfrecord", "batch": 8, "spe": 2, "steps": 2},
            {"name": "mlp numpy b8", "model": "mlp", "batch": 8, "spe": 1, "steps": 2},
        ]
    conv = {"filters": 256, "dense": 256, "image": 28}
    tr = {"seq": 128, "d": 128, "heads": 4, "key": 32, "ff": 256}
    out = [
        {"name": f"conv b{b} spe{s}", "model": "conv", "batch": b, "spe": s, "steps": 32, **conv}
        for b in (32, 256)
        for s in (1, 32)
    ]
    out.append(
        {"name": "transformer b64", "model": "transformer", "batch": 64, "spe": 1, "steps": 16} | tr
    )
    out.append({"name": "mlp tfrecord spe50", "model": "tfrecord", "batch": 1024, "spe": 50})
    out[-1]["steps"] = 50
    out += [
        {"name": f"mlp numpy b{b}", "model": "mlp", "batch": b, "spe": 1, "steps": 65536 // b}
        for b in (64, 256, 1024, 4096)
    ]
    return out


# ----------------------------------------------------------------------------- measurement


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


# jax's phases of making a program after tracing: lowering to StableHLO and XLA's compile
# (the trace events nest: a jit traced inside another's trace reports its own duration too)
_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
_compile_seconds = [0.0]
_counting: list[bool] = []


def _count_compiles() -> None:
    """Sums the seconds JAX reports lowering and compiling programs (``jax.monitoring``),
    from the first call on (later calls do nothing)."""
    import jax

    if _counting:
        return
    _counting.append(True)

    def listen(event, duration, **kwargs):
        if event in _COMPILE_EVENTS:
            _compile_seconds[0] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)


def _reset_peak_rss() -> None:
    try:  # Linux: "5" resets the peak resident set size (VmHWM)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Epochs:
    """Wall and CPU seconds of each epoch, and the time of the first finished execution."""

    def __init__(self, start: float):
        self.start, self.times, self.first = start, [], None
        self.cpu_start, self.first_cpu = time.process_time(), None
        _count_compiles()
        self.compile_start = _compile_seconds[0]

    def begin(self) -> None:
        self.t = _clocks()

    def end(self) -> None:
        self.times.append(tuple(a - b for a, b in zip(_clocks(), self.t, strict=True)))

    def step_done(self) -> None:
        if self.first is None:
            self.first = time.perf_counter() - self.start
            self.first_cpu = time.process_time() - self.cpu_start

    def result(self, examples: int) -> dict:
        steady = self.times[1:] or self.times
        return {
            "wall": examples / statistics.median(t[0] for t in steady),
            "cpu": examples / statistics.median(t[1] for t in steady),
            "first_s": self.first,
            "first_cpu_s": self.first_cpu,
            "compile_s": _compile_seconds[0] - self.compile_start,
            "rss_mb": _peak_rss_mb(),
        }


def _data(case: dict):
    import numpy as np

    rng = np.random.default_rng(0)
    n = case["batch"] * case["steps"]
    if case["model"] == "conv":
        x = rng.random((n, case["image"], case["image"], 1), dtype=np.float32)
    elif case["model"] == "transformer":
        x = rng.standard_normal((n, case["seq"], case["d"]), dtype=np.float32)
    else:
        x = rng.random((n, 784), dtype=np.float32)
    return x, rng.integers(0, 10, n).astype(np.int32)


# ----------------------------------------------------------------------------- phalanx


def _phalanx_model(case: dict):
    import phalanx
    from phalanx import layers

    reg = phalanx.regularizers.L2(L2)
    if case["model"] == "conv":
        f, i = case["filters"], case["image"]
        return phalanx.Sequential(
            [
                layers.Input(shape=(i, i, 1)),
                layers.Conv2D(f, 3, activation="relu", kernel_regularizer=reg),
                layers.Conv2D(f, 3, activation="relu", kernel_regularizer=reg),
                layers.Flatten(),
                layers.Dense(case["dense"], activation="relu", kernel_regularizer=reg),
                layers.Dense(128, activation="relu", kernel_regularizer=reg),
                layers.Dense(10, kernel_regularizer=reg),
            ]
        )
    if case["model"] == "transformer":
        inputs = layers.Input(shape=(case["seq"], case["d"]))
        x = inputs
        for _ in range(2):
            att = layers.MultiHeadAttention(num_heads=case["heads"], key_dim=case["key"])(x, x)
            x = layers.LayerNormalization()(layers.Add()([x, att]))
            ff = layers.Dense(case["ff"], activation="relu")(x)
            ff = layers.Dense(case["d"])(ff)
            x = layers.LayerNormalization()(layers.Add()([x, ff]))
        x = layers.GlobalAveragePooling1D()(x)
        return phalanx.Model(inputs, layers.Dense(10)(x))
    return phalanx.Sequential(
        [
            layers.Input(shape=(784,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(10),
        ]
    )


def _tfrecord_files(folder: str, x, y) -> str:
    import numpy as np

    from phalanx import data

    for shard in range(4):
        with data.TFRecordWriter(os.path.join(folder, f"train-{shard}.tfrecord")) as writer:
            for k in range(shard, len(x), 4):
                writer.write(data.serialize_example({"image": x[k], "label": np.int64(y[k])}))
    return os.path.join(folder, "train-*.tfrecord")


def run_phalanx(case: dict, epochs: int) -> dict:
    import numpy as np

    import phalanx
    from phalanx import data

    x, y = _data(case)
    folder = tempfile.mkdtemp() if case["model"] == "tfrecord" else None
    pattern = _tfrecord_files(folder, x, y) if folder else None
    _reset_peak_rss()
    timer = _Epochs(time.perf_counter())

    class Timer(phalanx.callbacks.Callback):
        batch_hooks_read_only_logs = True  # records only: fit stays asynchronous

        def on_epoch_begin(self, epoch, logs=None):
            timer.begin()

        def on_epoch_end(self, epoch, logs=None):
            timer.end()

        def on_train_batch_end(self, batch, logs=None):
            timer.step_done()

    model = _phalanx_model(case)
    model.compile(
        optimizer=phalanx.optimizers.Adam(1e-3),
        loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
        steps_per_execution=case["spe"],
    )
    if pattern is None:
        model.fit(x, y, batch_size=case["batch"], epochs=epochs, verbose=0, callbacks=[Timer()])
    else:
        spec = {
            "image": data.FixedLenFeature([784], np.float32),
            "label": data.FixedLenFeature([], np.int64),
        }
        ds = (
            data.Dataset.list_files(pattern, shuffle=False)
            .interleave(data.TFRecordDataset, cycle_length=4, block_length=1)
            .batch(case["batch"], drop_remainder=True)
            .map(lambda r: (lambda e: (e["image"], e["label"]))(data.parse_example(r, spec)))
            .prefetch(2)
        )
        model.fit(ds, epochs=epochs, verbose=0, callbacks=[Timer()])
    return timer.result(case["batch"] * case["steps"])


# ----------------------------------------------------------------------------- flax


def _flax_model(case: dict):
    import flax.nnx as nnx
    import jax

    rngs = nnx.Rngs(0)
    if case["model"] == "conv":
        f, i, d = case["filters"], case["image"], case["dense"]

        class Net(nnx.Module):
            def __init__(self):
                self.c1 = nnx.Conv(1, f, (3, 3), padding="VALID", rngs=rngs)
                self.c2 = nnx.Conv(f, f, (3, 3), padding="VALID", rngs=rngs)
                self.d1 = nnx.Linear((i - 4) ** 2 * f, d, rngs=rngs)
                self.d2 = nnx.Linear(d, 128, rngs=rngs)
                self.d3 = nnx.Linear(128, 10, rngs=rngs)

            def __call__(self, x):
                x = jax.nn.relu(self.c2(jax.nn.relu(self.c1(x))))
                x = jax.nn.relu(self.d1(x.reshape(x.shape[0], -1)))
                return self.d3(jax.nn.relu(self.d2(x)))

        return Net(), True
    if case["model"] == "transformer":
        d, h, k, ff = case["d"], case["heads"], case["key"], case["ff"]

        class Block(nnx.Module):
            def __init__(self):
                self.att = nnx.MultiHeadAttention(
                    h, d, qkv_features=h * k, out_features=d, decode=False, rngs=rngs
                )
                self.n1 = nnx.LayerNorm(d, epsilon=1e-3, rngs=rngs)
                self.f1 = nnx.Linear(d, ff, rngs=rngs)
                self.f2 = nnx.Linear(ff, d, rngs=rngs)
                self.n2 = nnx.LayerNorm(d, epsilon=1e-3, rngs=rngs)

            def __call__(self, x):
                x = self.n1(x + self.att(x))
                return self.n2(x + self.f2(jax.nn.relu(self.f1(x))))

        class Encoder(nnx.Module):
            def __init__(self):
                self.b1, self.b2 = Block(), Block()
                self.out = nnx.Linear(d, 10, rngs=rngs)

            def __call__(self, x):
                return self.out(self.b2(self.b1(x)).mean(axis=1))

        return Encoder(), False

    class MLP(nnx.Module):
        def __init__(self):
            self.d1 = nnx.Linear(784, 128, rngs=rngs)
            self.d2 = nnx.Linear(128, 10, rngs=rngs)

        def __call__(self, x):
            return self.d2(jax.nn.relu(self.d1(x)))

    return MLP(), False


def flax_step(case: dict):
    """The hand-written step: ``nnx.split``, ``jax.jit`` of value_and_grad + optax Adam.

    Returns ``(step, params, opt_state)``; ``step(params, opt_state, x, y)`` returns
    ``(params, opt_state, loss)``."""
    import flax.nnx as nnx
    import jax
    import jax.numpy as jnp
    import optax

    model, regularized = _flax_model(case)
    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adam(1e-3)

    def loss_fn(p, xb, yb):
        logits = nnx.merge(graphdef, p)(xb)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()
        if regularized:
            leaves = jax.tree_util.tree_leaves_with_path(p)
            kernels = [v for path, v in leaves if "kernel" in str(path)]
            loss = loss + L2 * sum(jnp.sum(jnp.square(k)) for k in kernels)
        return loss

    @jax.jit
    def step(p, o, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss

    return step, params, tx.init(params)


def run_flax(case: dict, epochs: int) -> dict:
    """``flax_step`` in a Python loop over numpy batches (each placed by the call, as
    ``fit`` does)."""
    x, y = _data(case)
    _reset_peak_rss()
    timer = _Epochs(time.perf_counter())
    step, params, opt = flax_step(case)
    b = case["batch"]
    for _ in range(epochs):
        timer.begin()
        for s in range(case["steps"]):
            params, opt, loss = step(params, opt, x[s * b : (s + 1) * b], y[s * b : (s + 1) * b])
            if timer.first is None:
                loss.block_until_ready()
                timer.step_done()
        float(loss)
        timer.end()
    return timer.result(b * case["steps"])


# ----------------------------------------------------------------------------- driver


def child(case: dict, epochs: int, flax_first: bool) -> None:
    runs = [("flax", run_flax), ("phalanx", run_phalanx)]
    out = {}
    for name, fn in runs if flax_first else runs[::-1]:
        out[name] = fn(case, epochs)
    print(json.dumps(out))


def _spawn(case: dict, epochs: int, flax_first: bool) -> dict:
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    args = ["--child", json.dumps(case), "--epochs", str(epochs)]
    if flax_first:
        args.append("--flax-first")
    done = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{case['name']}: the child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="per fit; the first is dropped")
    parser.add_argument("--only", default="", help="comma-separated substrings of case names")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    parser.add_argument("--json", default="", help="also write the medians to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--flax-first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return child(json.loads(args.child), args.epochs, args.flax_first)
    cases = _cases(args.quick)
    if args.only:
        keys = args.only.split(",")
        cases = [c for c in cases if any(k in c["name"] for k in keys)]
    header = (
        f"{'workload':<20} {'framework':<8} {'ex/s':>9} {'ex/CPU-s':>9} {'first s':>8} "
        f"{'1st CPU-s':>9} {'compile s':>9} {'RSS MB':>7} {'ph/flax':>8}"
    )
    print(f"medians of {args.rounds} rounds; ph/flax: examples per CPU-second")
    print(header)
    table = {}
    for case in cases:
        rounds = [_spawn(case, args.epochs, r % 2 == 0) for r in range(args.rounds)]
        med = {
            fw: {k: statistics.median(r[fw][k] for r in rounds) for k in rounds[0][fw]}
            for fw in ("flax", "phalanx")
        }
        ratio = statistics.median(r["phalanx"]["cpu"] / r["flax"]["cpu"] for r in rounds)
        table[case["name"]] = {**med, "ratio": ratio}
        for fw in ("flax", "phalanx"):
            m = med[fw]
            cell = f"{ratio:>8.2f}" if fw == "phalanx" else ""
            print(
                f"{case['name'] if fw == 'flax' else '':<20} {fw:<8} {m['wall']:>9,.0f} "
                f"{m['cpu']:>9,.0f} {m['first_s']:>8.2f} {m['first_cpu_s']:>9.2f} "
                f"{m['compile_s']:>9.2f} {m['rss_mb']:>7,.0f} {cell}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
