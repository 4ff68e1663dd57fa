"""The distributed-training guide's ``tf.distribute.experimental.CentralStorageStrategy()``
(the seeds' README names that guide as a public original), ported with ``tf.distribute`` ->
``phalanx.distribute``: AttributeError before. Synchronous training on the compute devices,
the same updates as ``MirroredStrategy``; ``parameter_device`` is resolved and kept.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import phalanx


def _fit(strategy):
    with strategy.scope():
        model = phalanx.Sequential(
            [
                phalanx.layers.Dense(
                    1, input_shape=(1,), kernel_regularizer=phalanx.regularizers.L2(1e-4)
                )
            ]
        )
        model.set_weights([np.full((1, 1), 0.5, np.float32), np.zeros(1, np.float32)])
        model.compile(loss="mse", optimizer="sgd")
    dataset = phalanx.data.Dataset.from_tensors(([1.0], [1.0])).repeat(100).batch(10)
    history = model.fit(dataset, epochs=2, verbose=0)
    return history.history["loss"], model.get_weights()


def test_central_storage_trains_as_mirrored():
    central_storage_strategy = phalanx.distribute.experimental.CentralStorageStrategy()
    # TF 2.21 with 2 logical CPUs: CentralStorageStrategy() has 1 replica (CPU:0), where
    # MirroredStrategy() has 2 (issue 27 item 9); phalanx's MirroredStrategy() has all 8.
    assert central_storage_strategy.num_replicas_in_sync == 1
    assert central_storage_strategy.devices == tuple(jax.devices()[:1])
    assert phalanx.MirroredStrategy().num_replicas_in_sync == jax.local_device_count()
    assert isinstance(central_storage_strategy, phalanx.MirroredStrategy)
    two = phalanx.distribute.experimental.CentralStorageStrategy(
        compute_devices=["/cpu:0", "/cpu:1"], parameter_device="/cpu:0"
    )
    assert two.num_replicas_in_sync == 2 and two.parameter_device == jax.devices()[0]
    loss, weights = _fit(two)
    want_loss, want = _fit(phalanx.MirroredStrategy(devices=jax.devices()[:2]))
    np.testing.assert_array_equal(loss, want_loss)
    for got, expected in zip(weights, want, strict=True):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(phalanx.errors.DeviceNotFoundError, match="No device matches '/gpu:0'"):
        phalanx.distribute.experimental.CentralStorageStrategy(parameter_device="/gpu:0")
