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


def test_metrics_names_of_two_outputs_as_keras_3():
    """TF 2.21: each output's loss is listed once fit or evaluate computed it."""
    a, b = phalanx.Input(shape=(4,)), phalanx.Input(shape=(2,))
    h = phalanx.layers.Concatenate()([a, b])
    out1 = phalanx.layers.Dense(1)(h)
    out2 = phalanx.layers.Dense(3, activation="softmax")(h)
    model = phalanx.Model([a, b], [out1, out2])
    x = [np.ones((16, 4), np.float32), np.ones((16, 2), np.float32)]
    y = [np.ones((16, 1), np.float32), np.zeros(16)]
    model.compile("adam", ["mse", "sparse_categorical_crossentropy"])
    assert model.metrics_names == ["loss"]
    model.evaluate(x, y, verbose=0)
    assert model.metrics_names == ["loss", "dense_loss", "dense_1_loss"]
    model.compile("adam", ["mse", "sparse_categorical_crossentropy"], metrics=[[], ["accuracy"]])
    model.predict(x, verbose=0)
    assert model.metrics_names == ["loss", "compile_metrics"]
    model.fit(x, y, verbose=0)
    assert model.metrics_names == ["loss", "compile_metrics", "dense_loss", "dense_1_loss"]
