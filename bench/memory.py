"""Bytes per device with replicated vs sharded parameters, and the step-time cost of sharding.

For each model (MLPs of several sizes and small transformers: embedding,
``MultiHeadAttention``, feed-forward, ``LayerNormalization``), Adam, on
``--devices`` simulated CPU devices (default 8), it compiles ``fit``'s
training program under ``MirroredStrategy()`` and under
``MirroredStrategy(shard_parameters=True)`` and prints, per device:

* ``state``: parameters + optimizer state as stored between steps, the bytes
  of each array's shard on device 0 (what ``shard_parameters`` divides);
* XLA's compiled memory analysis of the training program
  (``jitted.lower(...).compile().memory_analysis()``): ``args`` (the state
  and the batch, per device), ``temp`` (activations, gradients, gathered
  parameters, per device);
* ``ratio``: sharded / replicated state bytes, against the target ``1/N``;
* the median time of a training step in ``fit`` (one ``fit`` of 2
  executions of ``steps_per_execution=4`` steps, timed ``--runs`` times,
  replicated and sharded alternating), and the cost of sharding
  (sharded / replicated).

Then, for a per-device memory budget (``--budget-mib``, default 64 MiB), the
largest small transformer of a ladder (embedding, ``MultiHeadAttention``,
feed-forward ``Dense``, ``LayerNormalization``; a functional model) whose
training step fits the budget, replicated and sharded. "Fits" reads XLA's
memory analysis of the compiled step (compiled only, nothing runs):
``peak = args + outputs - aliased + temp`` bytes per device, the most the
program holds at once on one device. The largest transformer that fits
sharded is then trained both ways and timed.

Usage: python bench/memory.py [--devices 8] [--runs 3] [--budget-mib 64] [--quick]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys

from _compiled_step import BATCH, SPE, analysis, arrays, build, compile_under, state_bytes


def _setup(devices: int) -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = f"--xla_force_host_platform_device_count={devices}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


def mlp(width: int, depth: int):
    import phalanx
    from phalanx import layers

    model = phalanx.Sequential(
        [layers.Input(shape=(784,))]
        + [layers.Dense(width, activation="relu") for _ in range(depth)]
        + [layers.Dense(16)]
    )
    data = (784, "float")
    return model, data


def transformer(d_model: int, layers_n: int, seq: int = 32, vocab: int = 4096):
    import phalanx
    from phalanx import layers

    tokens = phalanx.Input(shape=(seq,), dtype="int32")
    x = layers.Embedding(vocab, d_model)(tokens)
    for _ in range(layers_n):
        attended = layers.MultiHeadAttention(num_heads=8, key_dim=d_model // 8)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attended]))
        ff = layers.Dense(4 * d_model, activation="relu")(x)
        ff = layers.Dense(d_model)(ff)
        x = layers.LayerNormalization()(layers.Add()([x, ff]))
    outputs = layers.Dense(16)(layers.GlobalAveragePooling1D()(x))
    return phalanx.Model(tokens, outputs), (seq, "int", vocab)


def compiled_only(make, sharded: bool, devices: int) -> dict:
    """Per-device bytes of one model's training step, compiled but never run."""
    import jax

    import phalanx

    strategy = phalanx.MirroredStrategy(jax.devices()[:devices], shard_parameters=sharded)
    model, data = compile_under(strategy, make)
    model._init_state()  # the training state, placed as fit places it (no step runs)
    a = analysis(model, *arrays(data, BATCH))
    peak = (
        a.argument_size_in_bytes
        + a.output_size_in_bytes
        - a.alias_size_in_bytes
        + a.temp_size_in_bytes
    )
    return {"params": model.count_params(), "state": state_bytes(model)[0], "peak": peak}


#: The transformers the budget search climbs, smallest first: (d_model, blocks).
LADDER = ((128, 2), (256, 2), (256, 4), (384, 4), (512, 4), (512, 6), (768, 6))


def budget_search(devices: int, budget: int, runs: int, measured: dict) -> None:
    """Prints the largest transformer of ``LADDER`` whose step fits ``budget`` bytes per
    device, replicated and sharded, then trains the sharded one's model both ways
    (``measured``: step times already taken, by model name, are reused)."""
    print(
        f"\nPer-device budget {_mb(budget)} MiB; peak = XLA's args + outputs - aliased + temp "
        "of the compiled training step (compiled only)"
    )
    print("| transformer | params | replicated peak MiB | sharded peak MiB | fits |")
    print("|---|---|---|---|---|")
    largest: dict = {}
    for d, blocks in LADDER:
        name = f"d={d} x{blocks}"
        make = functools.partial(transformer, d, blocks)
        rep = compiled_only(make, False, devices)
        sh = compiled_only(make, True, devices)
        fits = [label for label, r in (("replicated", rep), ("sharded", sh)) if r["peak"] <= budget]
        for label in fits:
            largest[label] = (name, make, rep if label == "replicated" else sh)
        print(
            f"| {name} | {rep['params']:,} | {_mb(rep['peak'])} | {_mb(sh['peak'])} "
            f"| {', '.join(fits) or 'neither'} |",
            flush=True,
        )
        if not fits:
            break  # the ladder only grows from here
    for label in ("replicated", "sharded"):
        name, _, r = largest.get(label, ("none", None, None))
        params = f"{r['params']:,} parameters" if r else "-"
        print(f"largest that fits {label}: transformer {name} ({params})")
    if "sharded" not in largest:
        return
    name, make, _ = largest["sharded"]
    rep, sh = measured.get(f"transformer {name}") or measure(make, devices, runs)
    cost = sh["step_s"] / rep["step_s"]
    print(
        f"transformer {name} trained: replicated {rep['step_s']:.4f} s/step, sharded "
        f"{sh['step_s']:.4f} s/step (median of {runs}); sharding costs {cost:.2f}x",
        flush=True,
    )


def measure(make, devices: int, runs: int) -> tuple[dict, dict]:
    """Replicated and sharded figures; step times from alternating rounds (medians)."""
    import jax

    import phalanx

    rep, sh = (
        build(phalanx.MirroredStrategy(jax.devices()[:devices], shard_parameters=sharded), make)
        for sharded in (False, True)
    )
    times: dict = {"rep": [], "sh": []}
    for _ in range(runs):
        times["rep"].append(rep["time"]())
        times["sh"].append(sh["time"]())
    rep["step_s"], sh["step_s"] = (statistics.median(times[k]) for k in ("rep", "sh"))
    return rep, sh


def _mb(n: int) -> str:
    return f"{n / 2**20:,.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget-mib", type=float, default=64.0, help="per-device budget")
    parser.add_argument("--quick", action="store_true", help="the two smallest models only")
    parser.add_argument("--budget-only", action="store_true", help="the budget search only")
    args = parser.parse_args(argv)
    _setup(args.devices)
    import jax

    if jax.device_count() < args.devices:
        print(f"JAX sees {jax.device_count()} devices; start a fresh process.", file=sys.stderr)
        return 1
    models = [
        ("MLP 784-512x2-16", lambda: mlp(512, 2)),
        ("transformer d=128 x2", lambda: transformer(128, 2)),
        ("MLP 784-2048x4-16", lambda: mlp(2048, 4)),
        ("transformer d=256 x4", lambda: transformer(256, 4)),
        ("MLP 784-4096x3-16", lambda: mlp(4096, 3)),
    ]
    if args.quick:
        models = models[:2]
    if args.budget_only:
        models = []
    n = args.devices
    print(
        f"{n} simulated CPU devices, Adam, global batch {BATCH}, steps_per_execution {SPE}; "
        "MiB per device (XLA memory analysis for args/temp); step = median seconds"
    )
    header = (
        "| model | params | layout | state MiB | args MiB | temp MiB | state ratio (1/N = "
        f"{1 / n:.3f}) | step s | step cost |"
    )
    print(header)
    print("|---|---|---|---|---|---|---|---|---|")
    measured = {}
    for name, make in models:
        rep, sh = measured[name] = measure(make, n, args.runs)
        for label, r in (("replicated", rep), ("sharded", sh)):
            ratio = r["state"] / rep["state"]
            cost = r["step_s"] / rep["step_s"]
            print(
                f"| {name} | {r['params']:,} | {label} | {_mb(r['state'])} | {_mb(r['args'])} "
                f"| {_mb(r['temp'])} | {ratio:.3f} | {r['step_s']:.4f} | {cost:.2f}x |",
                flush=True,
            )
    if not args.quick:
        budget_search(n, int(args.budget_mib * 2**20), args.runs, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
