"""``model.metrics_names`` as TensorFlow 2.21 (Keras 3) gives it around seed 000's model:
``[]`` before compile (and after a predict), ``['loss']``, then ``['loss', 'compile_metrics']``
with ``metrics=['accuracy']`` (AttributeError in phalanx before)."""

from __future__ import annotations

import numpy as np

import phalanx


def _seed_000_model():
    return phalanx.models.Sequential(
        [
            phalanx.layers.Dense(16, activation="relu", input_shape=(784,)),
            phalanx.layers.Dense(10, activation="softmax"),
        ]
    )


def test_metrics_names_as_keras_3():
    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    with strategy.scope():
        model = _seed_000_model()
        assert model.metrics_names == []
        model.predict(np.zeros((8, 784), np.float32), verbose=0)
        assert model.metrics_names == []
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        assert model.metrics_names == ["loss"]
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
        )
    assert model.metrics_names == ["loss", "compile_metrics"]
    x, y = np.random.rand(64, 784), np.random.randint(0, 10, 64)
    results = model.evaluate(x, y, verbose=0)
    assert len(results) == len(model.metrics_names)  # as Keras 3, one metric: aligned
