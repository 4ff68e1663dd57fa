"""Keras's other names for the layers the guides' models use (``keras.layers.MaxPool2D`` is
``MaxPooling2D``, ``GlobalAvgPool2D`` is ``GlobalAveragePooling2D`` ...): the same classes
in phalanx, so a model written with them trains as the one written with the long names.
"""

from __future__ import annotations

import numpy as np

import phalanx
from phalanx import layers


def test_aliases_are_the_same_classes():
    assert layers.MaxPool2D is layers.MaxPooling2D
    assert layers.AvgPool2D is layers.AveragePooling2D
    assert layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D
    assert layers.GlobalMaxPool2D is layers.GlobalMaxPooling2D
    assert layers.GlobalAvgPool1D is layers.GlobalAveragePooling1D
    assert layers.GlobalMaxPool1D is layers.GlobalMaxPooling1D
    assert layers.Convolution2D is layers.Conv2D and layers.Convolution1D is layers.Conv1D


def test_a_model_written_with_the_short_names_trains():
    strategy = phalanx.MirroredStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Convolution2D(4, 3, activation="relu", input_shape=(12, 12, 1)),
                layers.MaxPool2D(),
                layers.GlobalAvgPool2D(),
                layers.Dense(10),
            ]
        )
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 12, 12, 1), dtype=np.float32), rng.integers(0, 10, 64)
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]
    assert model.output_shape == (None, 10)
