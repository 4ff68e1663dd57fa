"""The distributed-training guide's ``MirroredStrategy(cross_device_ops=
tf.distribute.HierarchicalCopyAllReduce())`` (the seeds' README names that guide as the
public original), ported with ``tf.distribute`` -> ``phalanx.distribute``: AttributeError
and an unexpected keyword before. XLA chooses the all-reduce, so the choice is accepted and
changes nothing: the guide's Keras program trains as with the default, as in TensorFlow
(where it changes speed, not results).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import phalanx


def _train(strategy):
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
    model.fit(dataset, epochs=2, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize(
    "ops",
    [
        phalanx.distribute.HierarchicalCopyAllReduce(),
        phalanx.distribute.NcclAllReduce(num_packs=2),
        phalanx.distribute.ReductionToOneDevice(),
    ],
)
def test_guide_cross_device_ops_train_as_the_default(ops):
    devices = jax.devices()[:2]
    strategy = phalanx.distribute.MirroredStrategy(devices, cross_device_ops=ops)
    assert strategy.cross_device_ops is ops and strategy.num_replicas_in_sync == 2
    assert isinstance(ops, phalanx.distribute.CrossDeviceOps)
    default = phalanx.MirroredStrategy(devices=devices)
    assert default.cross_device_ops is None
    for got, want in zip(_train(strategy), _train(default), strict=True):
        np.testing.assert_array_equal(got, want)


def test_bad_cross_device_ops_are_refused():
    with pytest.raises(phalanx.errors.DistributeArgumentError, match="got str 'nccl'"):
        phalanx.MirroredStrategy(cross_device_ops="nccl")
    with pytest.raises(ValueError, match="requires num_packs >= 0, but -1 is specified"):
        phalanx.distribute.HierarchicalCopyAllReduce(num_packs=-1)
