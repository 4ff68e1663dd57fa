"""Seed 001's report line, ``optimizer.iterations.numpy()``, on ``model.optimizer`` after
``fit`` (and ``learning_rate.numpy()``), as TensorFlow 2.21 prints them.

Keras's readings are variables; phalanx's were plain ``int``/``float`` (no ``numpy()``:
AttributeError). Values from TF 2.21 for the same program: ``4`` and
``0.0010000000474974513`` (float32's 1e-3).
"""

from __future__ import annotations

import numpy as np

import phalanx


def test_seed_001_report_line_after_fit():
    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64)
    with strategy.scope():
        model = phalanx.Sequential(
            [phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3, activation="softmax")]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["sparse_categorical_accuracy"],
        )
    optimizer = model.optimizer
    assert optimizer.iterations.numpy() == 0
    history = model.fit(x, y, batch_size=16, verbose=0)
    line = "Current step: {}, training loss: {}, accuracy: {}%".format(
        optimizer.iterations.numpy(),
        round(float(history.history["loss"][-1]), 4),
        round(float(history.history["sparse_categorical_accuracy"][-1]) * 100, 2),
    )
    assert line.startswith("Current step: 4, training loss: ")
    step = optimizer.iterations.numpy()
    assert isinstance(step, np.int64) and step == 4
    rate = optimizer.learning_rate.numpy()
    assert isinstance(rate, np.float32)
    assert float(optimizer.learning_rate) == 0.0010000000474974513  # TF 2.21's reading
    optimizer.learning_rate = 0.01
    assert optimizer.learning_rate.numpy() == np.float32(0.01)
    # Still plain numbers: arithmetic and formatting as before.
    assert optimizer.iterations + 1 == 5 and f"{optimizer.iterations:03d}" == "004"
