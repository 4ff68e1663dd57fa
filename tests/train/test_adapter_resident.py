"""Resident data placed through reused host buffers (``_placement.put_resident``).

On CPU devices ``fit`` copies its arrays into a host buffer kept from call to
call, which JAX aliases: a second ``fit`` pays a copy, not the page faults of
fresh memory. What must not change: each call reads the arrays as they are
when it starts, and a buffer is never refilled while an array still reads it.
"""

import gc

import jax
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import phalanx
from phalanx import layers
from phalanx.distribute import _placement

ROWS, FEATURES, CLASSES = 2048, 128, 4  # 1 MiB of features: staged


def _model(weights=None, devices=1):
    strategy = (
        phalanx.OneDeviceStrategy(jax.devices()[0])
        if devices == 1
        else phalanx.MirroredStrategy(jax.devices()[:devices])
    )
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
        model.build()
        if weights is not None:
            model.set_weights(weights)
        model.compile(
            optimizer="sgd",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=4,
        )
    return model


@pytest.mark.parametrize("devices", [1, 2])
def test_each_fit_reads_the_arrays_as_they_are_when_it_starts(devices):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, ROWS)
    weights = _model().get_weights()
    first = _model(weights, devices)
    first.fit(x, y, batch_size=256, epochs=1, verbose=0)
    other = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    x[...] = other  # written in place between two calls
    again = _model(weights, devices)
    h_again = again.fit(x, y, batch_size=256, epochs=1, verbose=0)
    fresh = _model(weights, devices)
    h_fresh = fresh.fit(other.copy(), y, batch_size=256, epochs=1, verbose=0)
    assert h_again.history == h_fresh.history
    for a, b in zip(again.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    before = first.predict(other, batch_size=512, verbose=0)
    assert not np.allclose(before, again.predict(other, batch_size=512, verbose=0))


def test_a_buffer_is_reused_only_once_nothing_reads_it():
    sharding = NamedSharding(jax.sharding.Mesh(jax.devices()[:2], ("replica",)), P())
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(ROWS, FEATURES)).astype(np.float32) for _ in range(3)]
    a = _placement.put_resident(values[0], sharding)
    where_a = a.addressable_shards[0].data.unsafe_buffer_pointer()
    b = _placement.put_resident(values[1], sharding)  # a still reads its buffer: another one
    assert b.addressable_shards[0].data.unsafe_buffer_pointer() != where_a
    np.testing.assert_array_equal(np.asarray(a), values[0])
    shard = a.addressable_shards[1].data
    del a
    gc.collect()
    c = _placement.put_resident(values[2], sharding)  # one device buffer of a still reads it
    assert c.addressable_shards[0].data.unsafe_buffer_pointer() != where_a
    np.testing.assert_array_equal(np.asarray(shard), values[0])
    del shard, c
    gc.collect()
    d = _placement.put_resident(values[2], sharding)  # now free: reused, no fresh memory
    assert d.addressable_shards[0].data.unsafe_buffer_pointer() == where_a
    np.testing.assert_array_equal(np.asarray(b), values[1])
    np.testing.assert_array_equal(np.asarray(d), values[2])


def test_a_streamed_buffer_set_is_lent_again_only_once_jax_lets_go():
    from phalanx.train.data_adapters import _adapter

    sharding = NamedSharding(jax.sharding.Mesh(jax.devices()[:1], ("replica",)), P(None, "replica"))
    spec = (jax.ShapeDtypeStruct((3, 64, 1024), np.float32),)
    pool = _adapter._BufferPool()
    lent = pool.take(spec)
    lent.buffers[0][...] = 1.0
    placed = _placement.put(lent.buffers[0].view(), sharding, copy=False, alias=True)
    pool.lender(lent)()  # the execution finished; the device array is still alive
    again = pool.take(spec)
    assert again.buffers[0].ctypes.data != lent.buffers[0].ctypes.data
    again.buffers[0][...] = 2.0
    np.testing.assert_array_equal(np.asarray(placed), 1.0)
    pool.lender(again)()
    del placed
    gc.collect()
    reused = {pool.take(spec).buffers[0].ctypes.data for _ in range(2)}
    assert lent.buffers[0].ctypes.data in reused  # mapped memory, no fresh pages
