"""fit with layers that carry state or randomness: batch normalization, dropout, convolutions."""

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers


def _conv_model():
    return phalanx.Sequential(
        [
            layers.Input(shape=(8, 8, 1)),
            layers.Conv2D(8, 3, padding="same", activation="relu"),
            layers.BatchNormalization(),
            layers.MaxPooling2D(2),
            layers.Flatten(),
            layers.Dropout(0.2),
            layers.Dense(10, activation="softmax"),
        ]
    )


@pytest.mark.parametrize("replicas", [1, 4])
def test_batch_norm_and_dropout_train_and_stay_replicated(replicas):
    (x, y), _ = phalanx.datasets.digits.load_data()
    x = x.reshape(-1, 8, 8, 1)[:512]
    y = y[:512]
    strategy = phalanx.MirroredStrategy(jax.devices()[:replicas])
    with strategy.scope():
        model = _conv_model()
        model.compile(
            optimizer="adam",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=2,
        )
    history = model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    moving_mean, moving_var = model.get_weights()[4:6]  # after kernel, bias, gamma, beta
    assert not np.allclose(moving_mean, 0.0)  # the moving statistics were updated
    assert not np.allclose(moving_var, 1.0)
    for leaf in jax.tree.leaves(model._state.rest):
        assert leaf.sharding.is_equivalent_to(strategy.replicated_sharding, leaf.ndim)
    probabilities = model.predict(x[:7], verbose=0)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    # Inference is deterministic (no dropout outside training).
    np.testing.assert_array_equal(probabilities, model.predict(x[:7], verbose=0))
