"""Bytes per device and step time of 2-D layouts (ModelParallelStrategy) vs replicated/sharded.

For an MLP and a small transformer on 8 simulated CPU devices, trains under

* ``replicated``: ``MirroredStrategy()`` (8 replicas, every parameter whole);
* ``sharded``: ``MirroredStrategy(shard_parameters=True)`` (ZeRO-3 over the 8 replicas);
* ``2-D (d, m)``: ``ModelParallelStrategy`` on a ``(d, m)`` mesh ``("data", "model")``,
  attention heads and MLP units split over ``"model"`` (Megatron's column/row split);
* ``2-D (d, m) + data``: the same specs, each also split over ``"data"`` (ZeRO-3 within the
  map),

and prints per device: ``state`` (parameters + optimizer state: each array's shard on
device 0), XLA's memory analysis of ``fit``'s compiled training program (``args``: the state
and one execution's batches; ``temp``: activations, gradients, gathered parameters), and the
median time of a training step (one ``fit`` of 2 executions of ``steps_per_execution=4``
steps, ``--runs`` times, the layouts alternating).

Usage: python bench/model_parallel.py [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from _compiled_step import BATCH, SPE, build

DEVICES = 8


def _setup() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    flag = f"--xla_force_host_platform_device_count={DEVICES}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()


MLP_SPECS = {
    "col_\\d+/kernel": (None, "model"),
    "col_\\d+/bias": ("model",),
    "row_\\d+/kernel": ("model", None),
}
TRANSFORMER_SPECS = {
    "attention_\\d+/(query|key|value)/kernel": (None, "model", None),
    "attention_\\d+/(query|key|value)/bias": ("model", None),
    "attention_\\d+/attention_output/kernel": ("model", None, None),
    "ff_in_\\d+/kernel": (None, "model"),
    "ff_in_\\d+/bias": ("model",),
    "ff_out_\\d+/kernel": ("model", None),
    "embedding/embeddings": (None, "model"),
}


def mlp(width: int, pairs: int):
    import phalanx
    from phalanx import layers

    stack = [layers.Input(shape=(784,))]
    for i in range(pairs):  # column-split then row-split: one all-reduce per pair
        stack.append(layers.Dense(width, activation="relu", name=f"col_{i}"))
        stack.append(layers.Dense(width, activation="relu", name=f"row_{i}"))
    stack.append(layers.Dense(16, name="logits"))
    return phalanx.Sequential(stack), (784, "float")


def transformer(d_model: int, layers_n: int, seq: int = 32, vocab: int = 4096):
    import phalanx
    from phalanx import layers

    tokens = phalanx.Input(shape=(seq,), dtype="int32")
    x = layers.Embedding(vocab, d_model, name="embedding")(tokens)
    for i in range(layers_n):
        attention = layers.MultiHeadAttention(
            num_heads=8, key_dim=d_model // 8, name=f"attention_{i}"
        )
        x = layers.LayerNormalization()(layers.Add()([x, attention(x, x)]))
        ff = layers.Dense(4 * d_model, activation="relu", name=f"ff_in_{i}")(x)
        ff = layers.Dense(d_model, name=f"ff_out_{i}")(ff)
        x = layers.LayerNormalization()(layers.Add()([x, ff]))
    outputs = layers.Dense(16, name="logits")(layers.GlobalAveragePooling1D()(x))
    return phalanx.Model(tokens, outputs), (seq, "int", vocab)


def _strategy(layout: tuple, specs: dict):
    import phalanx
    from phalanx.distribute import DeviceMesh, LayoutMap, ModelParallelStrategy

    kind = layout[0]
    if kind in ("replicated", "sharded"):
        return phalanx.MirroredStrategy(shard_parameters=kind == "sharded")
    shape, with_data = layout[1], kind == "2-D + data"
    layout_map = LayoutMap(DeviceMesh(shape, ("data", "model")))
    for key, spec in specs.items():
        if with_data:  # the first whole axis split over "data" too
            spec = tuple(spec)
            first = spec.index(None) if None in spec else None
            if first is not None:
                spec = spec[:first] + ("data",) + spec[first + 1 :]
        layout_map[key] = spec
    return ModelParallelStrategy(layout_map, batch_dim_name="data")


def _name(layout: tuple) -> str:
    return layout[0] if len(layout) == 1 else f"{layout[0]} {layout[1]}"


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="the two small models only")
    args = parser.parse_args(argv)
    _setup()
    import functools

    models = [
        ("MLP 784-(1024x2)x2-16", functools.partial(mlp, 1024, 2), MLP_SPECS),
        ("transformer d=256 x2", functools.partial(transformer, 256, 2), TRANSFORMER_SPECS),
    ]
    if not args.quick:
        models.append(("MLP 784-(2048x2)x2-16", functools.partial(mlp, 2048, 2), MLP_SPECS))
    layouts = [
        ("replicated",),
        ("sharded",),
        ("2-D", (4, 2)),
        ("2-D", (2, 4)),
        ("2-D", (1, 8)),
        ("2-D + data", (2, 4)),
    ]
    print(f"{DEVICES} simulated CPU devices, Adam, global batch {BATCH}, spe {SPE}")
    print("| model | params | layout | state MiB | args MiB | temp MiB | state ratio | step s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, make, specs in models:
        built = {_name(layout): build(_strategy(layout, specs), make) for layout in layouts}
        times: dict = {k: [] for k in built}
        for _ in range(args.runs):
            for k, b in built.items():
                times[k].append(b["time"]())
        whole = built["replicated"]["state"]
        for k, b in built.items():
            print(
                f"| {name} | {b['params']:,} | {k} | {_mib(b['state'])} | {_mib(b['args'])} | "
                f"{_mib(b['temp'])} | {b['state'] / whole:.3f} | "
                f"{statistics.median(times[k]):.4f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
