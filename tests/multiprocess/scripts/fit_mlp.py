"""Child script: ``fit`` of the seeds' model from numpy arrays and from a Dataset.

Under ``phalanx launch`` each process builds a ``MultiWorkerMirroredStrategy``,
fits the seeds' MLP (``Dense(128, relu)``, ``Dense(10, softmax)``, adam, sparse
categorical cross-entropy, accuracy) on tiny MNIST-shaped data, and writes its
weights, history, evaluation and predictions to ``OUT_DIR/<process>.npz``;
every process calls ``save_weights(OUT_DIR/weights.npz)`` (process 0 writes).
The test imports ``train`` for the one-process reference.
"""

import os
import sys

import jax
import numpy as np

import phalanx
from phalanx import layers

EXAMPLES, FEATURES, CLASSES, BATCH = 256, 784, 10, 64


def data() -> tuple[np.ndarray, np.ndarray]:
    """The same examples on every process: an MNIST-shaped, learnable toy set."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(CLASSES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, EXAMPLES).astype(np.int32)
    x = centers[y] + rng.normal(size=(EXAMPLES, FEATURES)).astype(np.float32)
    return x, y


def off_dataset(x, y) -> phalanx.data.Dataset:
    """``batch(BATCH)`` under ``AutoShardPolicy.OFF``: TF's global batch, BATCH / 2 rows on each
    of 2 processes, the same rows on both. One process (the reference) reads what each such
    global batch holds twice: ``batch(BATCH // 2)``, the same mean loss and gradient."""
    ds = phalanx.data.Dataset.from_tensor_slices((x, y))
    if jax.process_count() == 1:
        return ds.batch(BATCH // 2)
    options = phalanx.data.Options()
    options.experimental_distribute.auto_shard_policy = phalanx.data.AutoShardPolicy.OFF
    return ds.batch(BATCH).with_options(options)


def train(strategy, kind: str, weights_path: str | None = None) -> dict[str, np.ndarray]:
    """Fits for 2 epochs from ``kind`` input; returns what the test compares."""
    x, y = data()
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Dense(128, activation="relu"), layers.Dense(CLASSES, activation="softmax")]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=2,
        )
    if kind == "numpy":
        history = model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, shuffle=True)
    elif kind == "dataset_off":  # multi_worker_with_keras: AutoShardPolicy.OFF
        history = model.fit(off_dataset(x, y), epochs=2, verbose=0)
    else:
        ds = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
        history = model.fit(ds, epochs=2, verbose=0)
    loss, accuracy = model.evaluate(x[:100], y[:100], batch_size=BATCH, verbose=0)
    predictions = model.predict(x[:100], batch_size=BATCH, verbose=0)
    ds_predictions = model.predict(
        phalanx.data.Dataset.from_tensor_slices(x[:100]).batch(BATCH), verbose=0
    )
    if weights_path is not None:
        model.save_weights(weights_path)
    out = {f"weight_{i}": w for i, w in enumerate(model.get_weights())}
    out.update({f"history_{k}": np.array(v) for k, v in history.history.items()})
    out.update(eval=np.array([loss, accuracy]), predictions=predictions)
    out.update(ds_predictions=ds_predictions)
    return out


if __name__ == "__main__":
    out_dir = sys.argv[1]
    strategy = phalanx.MultiWorkerMirroredStrategy()
    results = {}
    for kind in ("numpy", "dataset", "dataset_off"):
        path = os.path.join(out_dir, f"weights_{kind}.npz")
        results.update({f"{kind}/{k}": v for k, v in train(strategy, kind, path).items()})
        print(
            f"process {jax.process_index()}: {kind} loss {results[f'{kind}/history_loss'][-1]:.4f}"
        )
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), **results)
