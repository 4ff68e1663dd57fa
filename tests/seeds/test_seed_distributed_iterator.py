"""The distributed-input guide's iterator loop, ported with ``tf.distribute`` -> ``phalanx``:
``distributed_iterator.element_spec`` and ``get_next_as_optional()`` (``has_value()``,
``get_value()``) to stop at the end of the data without ``StopIteration`` (AttributeError
before). TensorFlow 2.21 on 2 replicas: 4 steps over 64 examples in batches of 16.
"""

from __future__ import annotations

import jax
import numpy as np

import phalanx


def test_get_next_as_optional_loop_and_element_spec():
    mirrored_strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    dataset = phalanx.data.Dataset.from_tensors(([1.0], [1.0])).repeat(64).batch(16)

    def train_step(inputs):
        features, labels = inputs
        return labels - 0.3 * features

    dist_dataset = mirrored_strategy.experimental_distribute_dataset(dataset)
    distributed_iterator = iter(dist_dataset)
    assert distributed_iterator.element_spec == dist_dataset.element_spec
    assert distributed_iterator.element_spec[0] == phalanx.data.TensorSpec((None, 1), np.float32)
    steps, total = 0, 0.0
    while True:
        optional_data = distributed_iterator.get_next_as_optional()
        if not optional_data.has_value():
            break
        per_replica_results = mirrored_strategy.run(train_step, args=(optional_data.get_value(),))
        total += float(mirrored_strategy.reduce("SUM", per_replica_results, axis=0).sum())
        steps += 1
    assert steps == 4
    np.testing.assert_allclose(total, 64 * 0.7, rtol=1e-6)
    empty = distributed_iterator.get_next_as_optional()
    assert not empty.has_value()
    try:
        empty.get_value()
    except phalanx.errors.DistributedValueError as error:
        assert "has no value" in str(error)
    else:
        raise AssertionError("get_value() of an empty optional returned")
