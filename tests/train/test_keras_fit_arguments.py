"""fit's arguments as Keras takes them with datasets: batch_size is ignored (Keras 3 does)."""

import numpy as np
import pytest

import phalanx
from phalanx import layers


def _model():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 3)).astype(np.float32), rng.integers(0, 2, 40)


def test_batch_size_with_dataset_and_validation_dataset_is_ignored_as_keras():
    x, y = _data()
    train = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(8)
    val = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(10)
    w0 = _model().get_weights()
    runs = []
    for kwargs in ({}, {"batch_size": 32, "validation_batch_size": 16}):
        model = _model()
        model.set_weights(w0)
        history = model.fit(train, validation_data=val, epochs=2, verbose=0, **kwargs)
        runs.append((history.history, model.get_weights()))
    assert runs[0][0] == runs[1][0]  # the dataset's own batches, both times
    assert set(runs[0][0]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_batch_size_with_a_generator_is_ignored_and_y_still_refused():
    x, y = _data()
    model = _model()

    def batches():
        for i in range(0, 40, 8):
            yield x[i : i + 8], y[i : i + 8]

    model.fit(batches(), batch_size=999, verbose=0)
    assert model.evaluate(batches(), batch_size=3, verbose=0, return_dict=True)["loss"] > 0
    with pytest.raises(ValueError, match="pass y and sample_weight inside its batches"):
        model.fit(phalanx.data.Dataset.from_tensor_slices(x).batch(8), y, verbose=0)
