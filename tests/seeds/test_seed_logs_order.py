"""The order of the names in ``history.history``, the epoch logs callbacks get, and
``evaluate(..., return_dict=True)``, as TensorFlow 2.21 (Keras 3) gives them: sorted, the
validation names after the training ones; ``evaluate``'s list keeps ``compile``'s order.
A reader who prints them (seed 001's ``validation_data`` run) sees what TF prints."""

from __future__ import annotations

import numpy as np

import phalanx

TRAIN = ["accuracy", "loss", "sparse_categorical_accuracy"]


def test_logs_in_keras_order():
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64)
    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    with strategy.scope():
        model = phalanx.Sequential(
            [phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3, activation="softmax")]
        )
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["sparse_categorical_accuracy", "accuracy"],
        )
    seen = {}
    record = phalanx.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: seen.setdefault("epoch", list(logs))
    )
    history = model.fit(
        x, y, epochs=1, batch_size=16, validation_data=(x, y), callbacks=[record], verbose=0
    )
    everything = TRAIN + [f"val_{name}" for name in TRAIN]
    assert list(history.history) == everything  # TF 2.21's order
    assert seen["epoch"] == everything
    as_dict = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(as_dict) == TRAIN
    as_list = model.evaluate(x, y, verbose=0)  # compile's order: loss, then the metrics
    assert as_list == [
        as_dict["loss"],
        as_dict["sparse_categorical_accuracy"],
        as_dict["accuracy"],
    ]
    assert list(model.test_on_batch(x[:16], y[:16], return_dict=True)) == TRAIN
