"""``predict`` with a global batch that does not split over the replicas, as TF 2.21 runs it.

TF 2.21 predicts with Keras's default batch of 32 on 3 replicas (each replica takes its
share of the 32, the outputs come back in order). phalanx pads each global batch to a
multiple of the replicas with masked rows (33: 11 per replica) and drops the padding from
the outputs, as it does for a short last batch. TF's ``fit`` and ``evaluate`` fail there
(an ``InvalidArgumentError`` from ``AddN``); phalanx's masked padding gives one device's
loss, metrics and gradients, so it runs them too (tests/train/test_uneven_global_batch.py).
"""

from __future__ import annotations

import jax
import numpy as np

import phalanx


def test_predict_with_the_default_batch_on_three_replicas():
    strategy = phalanx.distribute.MirroredStrategy(devices=jax.devices()[:3])
    x = np.random.default_rng(0).random((100, 8), dtype=np.float32)
    with strategy.scope():
        model = phalanx.Sequential(
            [phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3, activation="softmax")]
        )
    one_device = phalanx.Sequential(
        [phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3, activation="softmax")]
    )
    one_device.set_weights(model.get_weights())
    want = one_device.predict(x, verbose=0)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, batch_size=10, verbose=0), want, atol=1e-6)


def test_fit_with_the_default_batch_on_three_replicas_trains_as_one_device():
    strategy = phalanx.distribute.MirroredStrategy(devices=jax.devices()[:3])
    rng = np.random.default_rng(0)
    x, y = rng.random((100, 8), dtype=np.float32), rng.integers(0, 3, 100)

    def build():
        model = phalanx.Sequential([phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3)])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        return model

    with strategy.scope():
        model = build()
    one_device = build()
    one_device.set_weights(model.get_weights())
    got = model.fit(x, y, epochs=2, shuffle=False, verbose=0).history["loss"]
    want = one_device.fit(x, y, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, atol=1e-5)
    for a, b in zip(model.get_weights(), one_device.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
