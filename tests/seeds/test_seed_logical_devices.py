"""``MirroredStrategy(tf.config.list_logical_devices("GPU"))``: TensorFlow's strategies and
``tf.device`` take the ``LogicalDevice`` objects ``list_logical_devices`` returns, not only
their names. Ported with ``tf`` -> ``phalanx`` (README's name table), phalanx refused them
(DistributeArgumentError: 'got LogicalDevice'). TF 2.21 on 4 logical CPUs: 2 replicas on
CPU:0 and CPU:1; ``OneDeviceStrategy(devices[1])`` and ``tf.device(devices[1])`` on CPU:1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx


def test_strategies_and_device_take_logical_devices():
    devices = phalanx.config.list_logical_devices("CPU")
    strategy = phalanx.MirroredStrategy(devices[:2])
    assert strategy.num_replicas_in_sync == 2
    assert list(strategy.devices) == jax.devices()[:2]
    by_keyword = phalanx.distribute.MirroredStrategy(devices=devices[2:4])
    assert list(by_keyword.devices) == jax.devices()[2:4]
    one = phalanx.OneDeviceStrategy(devices[1])
    assert list(one.devices) == [jax.devices()[1]]
    single = phalanx.MirroredStrategy(devices[3])  # one device, not a list: as a name would be
    assert list(single.devices) == [jax.devices()[3]]
    with phalanx.device(devices[1]):
        c = jnp.ones(2) * 2
    assert c.devices() == {jax.devices()[1]}
    x, y = np.ones((8, 3), np.float32), np.arange(8)
    with strategy.scope():
        model = phalanx.Sequential([phalanx.layers.Dense(2, input_shape=(3,))])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(x, y % 2, batch_size=4, epochs=1, verbose=0)


def test_a_device_named_twice_or_a_wrong_object_still_refused():
    devices = phalanx.config.list_logical_devices("CPU")
    with pytest.raises(phalanx.errors.DistributeArgumentError, match="Each device may appear once"):
        phalanx.MirroredStrategy([devices[0], "/cpu:0"])
    with pytest.raises(phalanx.errors.DistributeArgumentError, match="got tuple"):
        phalanx.MirroredStrategy([("/cpu:0", "CPU")])
