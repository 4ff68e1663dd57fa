"""Child script: per-process inputs of unequal lengths; ``uneven.py OUT_DIR``.

Process 0's share has 5 batches per epoch, process 1's 4: fit must stop every
process after 4 steps (and say so) instead of leaving process 0 waiting in a
collective that process 1 never starts.
"""

import logging
import os
import sys

import jax
import numpy as np

import phalanx
from phalanx import layers


def main(out_dir: str) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    strategy = phalanx.MultiWorkerMirroredStrategy()
    per_process = 4 * jax.local_device_count()

    def dataset_fn(ctx):
        batches = 5 if ctx.input_pipeline_id == 0 else 4
        rng = np.random.default_rng(ctx.input_pipeline_id)
        x = rng.normal(size=(batches * per_process, 3)).astype(np.float32)
        # Per-replica batches of 4 (TensorFlow's contract): one per local replica per step.
        return phalanx.data.Dataset.from_tensor_slices((x, x.sum(1))).batch(4)

    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
    model.fit(strategy.distribute_datasets_from_function(dataset_fn), epochs=2, verbose=0)
    steps = int(np.asarray(model._state.step.addressable_data(0)))
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), steps=steps)


if __name__ == "__main__":
    main(sys.argv[1])
