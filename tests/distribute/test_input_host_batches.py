"""``InputOptions(experimental_fetch_to_device=False)``: one host value per replica, as TF.

TensorFlow 2.21, MirroredStrategy over 8 logical CPU devices,
``experimental_distribute_dataset(Dataset.range(20).batch(8),
InputOptions(experimental_fetch_to_device=False))`` (recorded here; TF is not imported):
every element is a ``PerReplica`` of 8 tensors, all on ``/device:CPU:0`` (the host), step 0
``[[0], [1], ..., [7]]``, step 1 ``[[8], ..., [15]]``; ``strategy.run(lambda v: v * 2)`` of
step 0 gives ``[[0], [2], ..., [14]]`` on the 8 devices; a dict element is a dict of
``PerReplica`` (``{"b": ones([16, 2])}`` batched by 16: 8 values of shape ``[2, 2]``);
OneDeviceStrategy yields the plain tensor ``[0, 1, 2, 3]``. TF's last batch of 4 rows over
8 replicas, ``[[16], [17], [18], [19], [], [], [], []]``, follows phalanx's
``partial_batch`` (see docs/names.md).
"""

import jax
import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.distribute import InputContext, InputOptions

HOST = InputOptions(experimental_fetch_to_device=False)


def _local(strategy, x):
    return [np.asarray(v) for v in strategy.experimental_local_results(x)]


def test_one_host_value_per_replica(mirrored8):
    dist = mirrored8.experimental_distribute_dataset(Dataset.range(16).batch(8), HOST)
    steps = list(dist)
    assert len(steps) == 2
    for k, x in enumerate(steps):
        assert isinstance(x, phalanx.PerReplica)
        assert isinstance(x.values, np.ndarray)  # never copied to a device
        parts = mirrored8.experimental_local_results(x)
        assert len(parts) == 8
        assert all(isinstance(p, np.ndarray) and p.dtype == np.int64 for p in parts)
        assert [p.tolist() for p in parts] == [[8 * k + i] for i in range(8)]
    doubled = mirrored8.run(lambda v: v * 2, args=(steps[0],))
    assert [p.tolist() for p in _local(mirrored8, doubled)] == [[2 * i] for i in range(8)]
    assert isinstance(doubled, phalanx.PerReplica)  # computed on the 8 devices, as TF's
    assert len(doubled.values.sharding.device_set) == 8


def test_same_values_as_fetched_batches(mirrored8):
    x = np.arange(64, dtype=np.float32).reshape(32, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(32, dtype=np.int32))).batch(16)
    host = list(mirrored8.experimental_distribute_dataset(ds, HOST))
    fetched = list(mirrored8.experimental_distribute_dataset(ds))
    for (hx, hy), (fx, fy) in zip(host, fetched, strict=True):
        for h, f in ((hx, fx), (hy, fy)):
            got, want = _local(mirrored8, h), _local(mirrored8, f)
            assert len(got) == len(want) == 8
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and g.shape == w.shape == (2, *w.shape[1:])
                np.testing.assert_array_equal(g, w)
    out = mirrored8.run(lambda a, b: a.sum() + b.sum(), args=host[0])
    want = mirrored8.run(lambda a, b: a.sum() + b.sum(), args=fetched[0])
    np.testing.assert_array_equal(_local(mirrored8, out), _local(mirrored8, want))


def test_dict_elements_are_dicts_of_per_replica(mirrored8):
    ds = Dataset.from_tensor_slices({"a": np.arange(16), "b": np.ones([16, 2], np.float32)})
    x = next(iter(mirrored8.experimental_distribute_dataset(ds.batch(16), HOST)))
    assert isinstance(x, dict) and sorted(x) == ["a", "b"]
    assert isinstance(x["a"], phalanx.PerReplica)
    assert [p.shape for p in _local(mirrored8, x["b"])] == [(2, 2)] * 8
    assert [p.tolist() for p in _local(mirrored8, x["a"])] == [[2 * i, 2 * i + 1] for i in range(8)]


def test_one_device_yields_the_host_batch():
    s = phalanx.OneDeviceStrategy()
    x = next(iter(s.experimental_distribute_dataset(Dataset.range(4).batch(4), HOST)))
    assert isinstance(x, np.ndarray) and x.tolist() == [0, 1, 2, 3]


def test_partial_batches_follow_partial_batch(mirrored8):
    ds = Dataset.range(20).batch(8)
    drop = InputOptions(experimental_fetch_to_device=False, partial_batch="drop")
    assert len(list(mirrored8.experimental_distribute_dataset(ds, drop))) == 2
    pad = InputOptions(experimental_fetch_to_device=False, partial_batch="pad")
    last_x, last_mask = list(mirrored8.experimental_distribute_dataset(ds, pad))[-1]
    assert [p.tolist() for p in _local(mirrored8, last_x)] == ([[16], [17], [18], [19]] + [[0]] * 4)
    assert [p.tolist() for p in _local(mirrored8, last_mask)] == [[1.0]] * 4 + [[0.0]] * 4
    # 16 rows then a last batch of 8 over 8 replicas: one row each, as fetched
    short = list(mirrored8.experimental_distribute_dataset(Dataset.range(24).batch(16), HOST))
    assert [p.tolist() for p in _local(mirrored8, short[-1])] == [[16 + i] for i in range(8)]


def test_stacked_steps_split_on_the_batch_axis(mirrored8):
    dist = mirrored8.experimental_distribute_dataset(Dataset.range(32).batch(8), HOST)
    x = next(iter(dist.stacked(2)))
    parts = _local(mirrored8, x)
    assert [p.tolist() for p in parts] == [[[i], [8 + i]] for i in range(8)]
    whole = np.asarray(
        next(iter(mirrored8.experimental_distribute_dataset(Dataset.range(32).batch(8)).stacked(2)))
    )
    for i, g in enumerate(parts):  # replica i's rows of each step, as run splits axis 1
        np.testing.assert_array_equal(g, whole[:, i : i + 1])


def test_datasets_from_function_give_each_replica_its_own_batch(mirrored8):
    def fn(ctx: InputContext):
        return Dataset.range(64).batch(ctx.get_per_replica_batch_size(16))

    x = next(iter(mirrored8.distribute_datasets_from_function(fn, HOST)))
    assert [p.tolist() for p in _local(mirrored8, x)] == [[2 * i, 2 * i + 1] for i in range(8)]
    fetched = next(iter(mirrored8.distribute_datasets_from_function(fn)))
    for g, w in zip(_local(mirrored8, x), _local(mirrored8, fetched), strict=True):
        np.testing.assert_array_equal(g, w)


def test_state_resumes_with_host_batches(mirrored8):
    ds = Dataset.range(64).shuffle(16, seed=3).batch(8)
    it = iter(mirrored8.experimental_distribute_dataset(ds, HOST))
    next(it)
    state = it.get_state()
    rest = [np.asarray(x.values) for x in it]
    again = iter(mirrored8.experimental_distribute_dataset(ds, HOST))
    again.set_state(state)
    for g, w in zip([np.asarray(x.values) for x in again], rest, strict=True):
        np.testing.assert_array_equal(g, w)


def test_no_device_copy_is_made(mirrored8, monkeypatch):
    calls = []
    real = jax.device_put
    monkeypatch.setattr(jax, "device_put", lambda *a, **k: calls.append(1) or real(*a, **k))
    list(mirrored8.experimental_distribute_dataset(Dataset.range(16).batch(8), HOST))
    assert calls == []


def test_several_processes_are_refused_naming_the_option(mirrored8, monkeypatch):
    monkeypatch.setattr(mirrored8, "_num_processes", 2)
    from phalanx.distribute._input import DistributedDataset

    with pytest.raises(ValueError, match="experimental_fetch_to_device=False"):
        DistributedDataset(mirrored8, Dataset.range(4).batch(2), HOST, per_process_batch=None)
