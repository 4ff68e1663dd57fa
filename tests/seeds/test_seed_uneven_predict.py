"""``predict`` with a global batch that does not split over the replicas, as TF 2.21 runs it.

On 3 replicas, TensorFlow 2.21's ``fit`` and ``evaluate`` fail on Keras's default batch of
32 (an ``InvalidArgumentError`` from ``AddN``): phalanx's ``BatchNotDivisibleError``, which
names the nearest valid sizes, is the better answer there. ``predict`` works in TensorFlow
(each replica takes its share of the 32, the outputs come back in order); phalanx refuses
it. Padding every batch to a multiple of the replicas and dropping the padding, as
phalanx already does for a short last batch, would give TensorFlow's result exactly.
xfail: the batch check lives in ``src/phalanx/train/_adapter.py``, which another engineer
is editing.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import phalanx


@pytest.mark.xfail(
    strict=True,
    reason="predict refuses a global batch that does not split over the replicas "
    "(TF 2.21 predicts); the fix belongs in train/_adapter.py, being edited by another "
    "engineer",
)
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


def test_fit_with_the_default_batch_on_three_replicas_names_the_valid_sizes():
    strategy = phalanx.distribute.MirroredStrategy(devices=jax.devices()[:3])
    rng = np.random.default_rng(0)
    x, y = rng.random((100, 8), dtype=np.float32), rng.integers(0, 3, 100)
    with strategy.scope():
        model = phalanx.Sequential([phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3)])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(
        phalanx.errors.BatchNotDivisibleError, match=r"32 does not split .*30 and 33"
    ):
        model.fit(x, y, verbose=0)
