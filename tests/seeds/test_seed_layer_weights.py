"""Keras's weight attributes on the seeds' layers: ``model.layers[0].kernel``, ``.bias``,
BatchNormalization's ``moving_variance``, Embedding's ``embeddings``, as a reader inspects the
seeds' models after ``fit``. phalanx had ``weights``/``get_weights()`` only (AttributeError).
Expected values from TensorFlow 2.21 (Keras 3).
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx


def test_weight_attributes_are_live_views():
    strategy = phalanx.MirroredStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                phalanx.layers.Input((4,)),
                phalanx.layers.Dense(3),
                phalanx.layers.BatchNormalization(),
            ]
        )
        model.compile(optimizer="adam", loss="mse")
    dense, norm = model.layers
    assert dense.kernel.shape == (4, 3) and dense.kernel.name == "kernel"
    np.testing.assert_array_equal(dense.bias.numpy(), np.zeros(3))
    np.testing.assert_array_equal(norm.moving_variance.numpy(), np.ones(3))
    before = dense.kernel.numpy().copy()
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 4)), rng.random((64, 3)), batch_size=32, verbose=0)
    np.testing.assert_array_equal(dense.kernel.numpy(), model.get_weights()[0])
    assert not np.array_equal(dense.kernel.numpy(), before)  # the trained values
    dense.bias.assign(np.ones(3, np.float32))
    np.testing.assert_array_equal(dense.get_weights()[1], np.ones(3))
    with pytest.raises(AttributeError, match="'Dense' object has no attribute 'gamma'"):
        _ = dense.gamma
    conv = phalanx.Sequential([phalanx.layers.Input((8, 8, 1)), phalanx.layers.Conv2D(2, 3)])
    assert conv.layers[0].kernel.shape == (3, 3, 1, 2)
    embed = phalanx.Sequential(
        [phalanx.layers.Input((3,), dtype="int32"), phalanx.layers.Embedding(5, 2)]
    )
    assert embed.layers[0].embeddings.shape == (5, 2)


def test_unbuilt_layer_says_build_first():
    layer = phalanx.layers.Dense(3)
    with pytest.raises(AttributeError, match="build the layer before accessing `kernel`"):
        _ = layer.kernel
    assert not hasattr(layer, "bias")
    with pytest.raises(AttributeError, match="'Dense' object has no attribute 'nope'"):
        _ = layer.nope
