"""A model called on symbolic tensors is a layer of another model (transfer learning)."""

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import KerasFileError


def _base():
    inputs = phalanx.Input(shape=(6,))
    hidden = layers.Dense(8, activation="relu")(inputs)
    return phalanx.Model(inputs, layers.Dense(4, activation="relu")(hidden), name="base")


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(32, 6)).astype(np.float32), rng.integers(0, 3, 32)


def test_a_frozen_base_model_under_a_new_head():
    x, y = _data()
    base = _base()
    base.trainable = False  # Keras's transfer-learning recipe
    inputs = phalanx.Input(shape=(6,))
    features = base(inputs, training=False)
    model = phalanx.Model(inputs, layers.Dense(3, activation="softmax")(features))
    assert [layer.name for layer in model.layers] == ["input_layer", "base", "dense"]
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = base.get_weights()
    head = model.get_layer("dense").get_weights()[0]
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    for a, b in zip(before, base.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)  # the base is frozen
    assert not np.allclose(head, model.get_layer("dense").get_weights()[0])
    lines = []
    model.summary(print_fn=lines.append)
    assert "base (NestedModel)" in lines[0] and "Non-trainable params: 92" in lines[0]
    np.testing.assert_allclose(
        model.predict(x, verbose=0),
        model.get_layer("dense").activation_fn(
            base.predict(x, verbose=0) @ model.get_layer("dense").get_weights()[0]
            + model.get_layer("dense").get_weights()[1]
        ),
        rtol=1e-5,
        atol=1e-6,
    )


def test_a_model_called_twice_shares_its_weights_and_trains_in_mirrored():
    x, y = _data()
    with phalanx.MirroredStrategy().scope():
        encoder = _base()
        a, b = phalanx.Input(shape=(6,)), phalanx.Input(shape=(6,))
        joined = layers.Concatenate()([encoder(a), encoder(b)])
        model = phalanx.Model([a, b], layers.Dense(3, activation="softmax")(joined))
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = encoder.get_weights()
    model.fit([x, x[::-1]], y, batch_size=8, verbose=0)
    assert model.count_params() == encoder.count_params() + 8 * 3 + 3
    assert not np.allclose(before[0], encoder.get_weights()[0])  # trained through the outer
    with pytest.raises(KerasFileError, match="nested models"):
        model.save_weights("/tmp/never.weights.h5")
