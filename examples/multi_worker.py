"""The seeds' MultiWorkerMirroredStrategy example, ported to phalanx.

Every process runs this same script. The strategy comes first (it connects
the processes); the model is built and compiled under its scope; ``fit``
splits each global batch over every replica of every process and sums the
gradients across them, so all processes end with the same weights.

    phalanx launch -n 2 --devices-per-process 2 -- examples/multi_worker.py
    python examples/multi_worker.py      # one process, its local devices

On real machines, start it once per machine with ``TF_CONFIG``, Slurm or
Kubernetes variables set (see the README's "Many machines"). The data are
the 8x8 digits shipped with phalanx, scaled up to MNIST's 28x28, so it runs offline.
"""

from __future__ import annotations

import jax
import numpy as np

import phalanx
from phalanx import layers
from phalanx.datasets import digits

EPOCHS = 5
BATCH_PER_REPLICA = 32


def mnist_shaped(x: np.ndarray) -> np.ndarray:
    """8x8 digits -> 28x28 images (each pixel 3x3, a 2-pixel border), flattened to 784."""
    images = np.kron(x.reshape(-1, 8, 8), np.ones((3, 3), np.float32))
    return np.pad(images, ((0, 0), (2, 2), (2, 2))).reshape(-1, 784)


def main() -> None:
    strategy = phalanx.MultiWorkerMirroredStrategy()
    (x_train, y_train), (x_test, y_test) = digits.load_data()
    x_train, x_test = mnist_shaped(x_train), mnist_shaped(x_test)

    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Dense(128, activation="relu", input_shape=(784,)),
                layers.Dense(10, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
        )

    global_batch = BATCH_PER_REPLICA * strategy.num_replicas_in_sync
    model.fit(x_train, y_train, epochs=EPOCHS, batch_size=global_batch, verbose=2)
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=global_batch, verbose=0)
    print(
        f"process {jax.process_index()} of {jax.process_count()}, "
        f"{strategy.num_replicas_in_sync} replicas: test loss {loss:.4f}, "
        f"test accuracy {accuracy:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
