"""Repeats the seed-002 fit many times in one process and counts the distinct results.

The seeds' ``fit(dataset, epochs=4)`` (an unshuffled ``Dataset.from_tensor_slices
((x, y)).batch(64)``, int64 labels, Adam) under ``MirroredStrategy`` on N
simulated devices, from the same initial weights, R times: prints each run's
largest loss and weight difference from one device, and the number of
distinct results (1 when streamed input is deterministic).

    python bench/repeat_fits.py [--devices 8] [--repeats 50] [--steps-per-execution 1]
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--steps-per-execution", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"

    import numpy as np

    import phalanx
    from phalanx import layers

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024, 20)).astype(np.float32)
    y = rng.integers(0, 10, size=1024)  # int64, as numpy makes them

    def build():
        model = phalanx.Sequential([layers.Dense(64, activation="relu"), layers.Dense(10)])
        model.build((20,))
        return model

    init = build().get_weights()

    def run(strategy):
        with strategy.scope():
            model = build()
            model.set_weights(init)
            model.compile(
                optimizer="adam",
                loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"],
                steps_per_execution=args.steps_per_execution,
            )
        ds = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(64)
        history = model.fit(ds, epochs=4, verbose=0)
        return np.array(history.history["loss"]), model.get_weights()

    ref_loss, ref_weights = run(phalanx.OneDeviceStrategy("/cpu:0"))
    diffs = []
    for _ in range(args.repeats):
        loss, weights = run(phalanx.MirroredStrategy())
        dw = max(float(np.abs(a - b).max()) for a, b in zip(weights, ref_weights, strict=True))
        diffs.append((float(np.abs(loss - ref_loss).max()), dw))
    print(
        f"{args.repeats} fits on {args.devices} devices; max |loss - 1 device| / max |weights - 1 device|:"
    )
    print(" ".join(f"{dl:.1e}/{dw:.1e}" for dl, dw in diffs))
    print("distinct results:", len(set(diffs)))


if __name__ == "__main__":
    main()
