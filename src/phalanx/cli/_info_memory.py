"""``phalanx info --memory``: the devices' own memory counters, and one model's bytes per
device replicated vs sharded, from XLA's memory analysis of its compiled training step.

Offline and quick: the model is built on random inputs of its shape and its
training step is compiled, never run (``phalanx.models._memory``). Both
layouts use ``MirroredStrategy`` over this process's devices, with and without
``shard_parameters``.
"""

from __future__ import annotations

import jax
import numpy as np

import phalanx
from phalanx import layers
from phalanx.models import _memory
from phalanx.models._memory import readable_size

#: The models ``--model`` chooses from: what each is.
MODELS = {
    "demo": "phalanx demo's model on digits: Dense(128, relu) -> Dense(10, softmax), 64 inputs",
    "mlp": "TensorFlow's MNIST tutorial model: Dense(128, relu) -> Dense(10, softmax), 784 inputs",
    "transformer": "a small transformer: 2 blocks of d_model 128, 8 heads, 32 tokens of 4096",
}


def device_memory() -> list[dict]:
    """Per local device, what the platform reports (``Device.memory_stats()``; None on CPU)."""
    out = []
    for device in jax.local_devices():
        try:
            stats = device.memory_stats()
        except (NotImplementedError, RuntimeError):  # a platform without the call
            stats = None
        keep = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit", "bytes_reservable_limit")
        stats = {k: int(v) for k, v in (stats or {}).items() if k in keep} or None
        out.append({"device": str(device), "memory_stats": stats})
    return out


def _build(name: str):
    """The model (not compiled) and one random global batch maker ``batch(n) -> (x, y)``."""
    rng = np.random.default_rng(0)
    if name == "transformer":
        tokens = phalanx.Input(shape=(32,), dtype="int32")
        h = layers.Embedding(4096, 128)(tokens)
        for _ in range(2):
            attended = layers.MultiHeadAttention(num_heads=8, key_dim=16)(h, h)
            h = layers.LayerNormalization()(layers.Add()([h, attended]))
            ff = layers.Dense(128)(layers.Dense(512, activation="relu")(h))
            h = layers.LayerNormalization()(layers.Add()([h, ff]))
        model = phalanx.Model(tokens, layers.Dense(10)(layers.GlobalAveragePooling1D()(h)))
        return model, lambda n: (
            rng.integers(0, 4096, (n, 32)).astype(np.int32),
            np.zeros(n, np.int32),
        )
    inputs = 64 if name == "demo" else 784
    model = phalanx.Sequential(
        [
            layers.Input(shape=(inputs,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )
    return model, lambda n: (rng.random((n, inputs), np.float32), np.zeros(n, np.int32))


def model_memory(name: str, batch_size: int) -> list[dict]:
    """Bytes per device of ``name``'s training, replicated then sharded over the local devices.

    Args:
      name: a key of ``MODELS``.
      batch_size: the global batch; divides by the number of local devices.

    Returns:
      One dict per layout: ``layout``, ``devices``, ``params``, and bytes per device:
      ``parameters``, ``optimizer_state`` (from the placed arrays), ``arguments``,
      ``outputs``, ``aliased``, ``temporaries``, ``peak`` (XLA's memory analysis).
    """
    rows = []
    for sharded in (False, True):
        strategy = phalanx.MirroredStrategy(jax.local_devices(), shard_parameters=sharded)
        with strategy.scope():
            model, batch = _build(name)
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        _memory.prepare_step(model, batch(batch_size))
        v, step = _memory.variable_memory(model), _memory.step_memory(model)
        rows.append(
            {
                "layout": "sharded" if sharded else "replicated",
                "devices": strategy.num_replicas_in_sync,
                "params": model.count_params(),
                "parameters": v.weights,
                "optimizer_state": v.optimizer,
                "arguments": step.arguments if step else None,
                "outputs": step.outputs if step else None,
                "aliased": step.aliased if step else None,
                "temporaries": step.temporaries if step else None,
                "peak": step.peak if step else None,
            }
        )
    return rows


def print_memory(report: dict) -> None:
    """Prints ``--memory``'s part of ``phalanx info``."""
    print("\nmemory per device, as the platform reports it (Device.memory_stats()):")
    groups: dict[str, list[str]] = {}  # devices that report the same, on one line
    for entry in report["devices"]:
        stats = entry["memory_stats"]
        if stats is None:
            text = f"not reported by the platform ({jax.default_backend()}: memory_stats() is None)"
        else:
            text = ", ".join(f"{k} {readable_size(v)}" for k, v in stats.items())
        groups.setdefault(text, []).append(entry["device"])
    for text, names in groups.items():
        where = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]} ({len(names)})"
        print(f"  {where}: {text}")
    rows = report["model"]
    name = report["model_name"]
    print(
        f"\nmodel {name!r}: {MODELS[name]}; {rows[0]['params']:,} params, Adam, global batch "
        f"{report['batch_size']}, MirroredStrategy on {rows[0]['devices']} local device(s).\n"
        "Bytes per device: parameters and optimizer state from the placed arrays, the rest "
        "from XLA's memory analysis of the training step (compiled, not run):"
    )
    columns = ("parameters", "optimizer_state", "arguments", "temporaries", "peak")
    print("  " + "".join(f"{c:>17}" for c in ("layout", *columns)))
    for row in rows:
        cells = [row["layout"]] + [
            "-" if row[c] is None else readable_size(row[c]) for c in columns
        ]
        print("  " + "".join(f"{c:>17}" for c in cells))
