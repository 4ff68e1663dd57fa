"""strategy.run, reduce, gather and the replica context, against numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx.distribute import ReduceOp


def _local(strategy, value):
    return np.stack([np.asarray(v) for v in strategy.experimental_local_results(value)])


def test_replica_ids(strategy):
    n = strategy.num_replicas_in_sync
    out = strategy.run(lambda: phalanx.get_replica_context().replica_id_in_sync_group)
    assert _local(strategy, out).tolist() == list(range(n))


def test_batch_is_split_per_replica(strategy):
    n = strategy.num_replicas_in_sync
    batch = np.arange(4 * n * 3, dtype=np.float32).reshape(4 * n, 3)
    out = strategy.run(lambda x: x * 2.0, args=(strategy.shard_batch(batch),))
    parts = strategy.experimental_local_results(out)
    assert len(parts) == n
    for i, part in enumerate(parts):
        np.testing.assert_array_equal(part, batch[4 * i : 4 * (i + 1)] * 2)
    np.testing.assert_array_equal(strategy.gather(out, axis=0), batch * 2)


def test_replicated_args_and_python_scalars(strategy):
    n = strategy.num_replicas_in_sync
    w = {"a": np.ones(3, np.float32), "b": (np.float32(2.0),)}
    out = strategy.run(lambda w, k: w["a"] * w["b"][0] * k, args=(w, 3))
    # A function of replicated values only is itself replicated.
    assert not isinstance(out, phalanx.PerReplica)
    np.testing.assert_array_equal(out, np.full(3, 6.0))
    assert out.sharding.is_equivalent_to(strategy.replicated_sharding, 1)
    assert len(strategy.experimental_local_results(out)) == n


def test_per_replica_args(strategy):
    n = strategy.num_replicas_in_sync
    v = strategy.experimental_distribute_values_from_function(
        lambda ctx: np.full((2,), ctx.replica_id_in_sync_group, np.float32)
    )
    assert isinstance(v, phalanx.PerReplica)
    out = strategy.run(lambda x: x + 1.0, args=(v,))
    np.testing.assert_array_equal(_local(strategy, out), np.arange(n)[:, None] + np.ones((n, 2)))


def test_kwargs_and_pytree_outputs(strategy):
    batch = strategy.shard_batch(np.ones((2 * strategy.num_replicas_in_sync, 2), np.float32))

    def fn(x, *, scale):
        return {"sum": x.sum() * scale, "pair": (x, scale)}

    out = strategy.run(fn, args=(batch,), kwargs={"scale": 2.0})
    assert isinstance(out["sum"], phalanx.PerReplica)
    assert isinstance(out["pair"][0], phalanx.PerReplica)
    assert float(out["pair"][1]) == 2.0


@pytest.mark.parametrize("op", ["SUM", "MEAN", ReduceOp.SUM, ReduceOp.MEAN, "sum"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_reduce_matches_numpy(strategy, op, axis):
    n = strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    data = rng.normal(size=(n, 3, 4)).astype(np.float32)
    value = strategy.experimental_distribute_values_from_function(
        lambda ctx: data[ctx.replica_id_in_sync_group]
    )
    got = strategy.reduce(op, value, axis=axis)
    is_sum = ReduceOp.from_any(op) is ReduceOp.SUM
    if axis is None:
        want = data.sum(0) if is_sum else data.mean(0)
    else:
        concat = np.concatenate(list(data), axis=axis)
        want = concat.sum(axis) if is_sum else concat.mean(axis)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reduce_of_distributed_batch(strategy):
    n = strategy.num_replicas_in_sync
    batch = np.arange(2 * n, dtype=np.float32)
    out = strategy.run(lambda x: x, args=(strategy.shard_batch(batch),))
    np.testing.assert_allclose(strategy.reduce("SUM", out, axis=0), batch.sum())
    np.testing.assert_allclose(strategy.reduce("MEAN", out, axis=0), batch.mean())
    # axis=None sums the replicas' slices element by element.
    np.testing.assert_allclose(strategy.reduce("SUM", out), batch.reshape(n, 2).sum(0))


def test_reduce_mirrored_counts_every_copy(strategy):
    n = strategy.num_replicas_in_sync
    value = phalanx.Mirrored(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(strategy.reduce("SUM", value), [n * 1.0, n * 2.0])
    np.testing.assert_allclose(strategy.reduce("MEAN", value), [1.0, 2.0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_matches_numpy(strategy, axis):
    n = strategy.num_replicas_in_sync
    data = np.arange(n * 2 * 3, dtype=np.float32).reshape(n, 2, 3)
    value = strategy.experimental_distribute_values_from_function(
        lambda ctx: data[ctx.replica_id_in_sync_group]
    )
    np.testing.assert_array_equal(
        strategy.gather(value, axis), np.concatenate(list(data), axis=axis)
    )


def test_all_reduce_and_all_gather(strategy):
    n = strategy.num_replicas_in_sync
    batch = np.arange(2 * n, dtype=np.float32).reshape(n * 2, 1)

    def fn(x):
        ctx = phalanx.get_replica_context()
        return {
            "sum": ctx.all_reduce(ReduceOp.SUM, x.sum()),
            "mean": ctx.all_reduce("mean", {"m": x.mean()}),
            "gathered": ctx.all_gather(x, axis=0),
        }

    out = strategy.run(fn, args=(strategy.shard_batch(batch),))
    # Cross-replica reductions come back replicated, not per replica.
    assert not isinstance(out["sum"], phalanx.PerReplica)
    np.testing.assert_allclose(out["sum"], batch.sum())
    np.testing.assert_allclose(out["mean"]["m"], batch.reshape(n, 2).mean(1).mean())
    for part in strategy.experimental_local_results(out["gathered"]):
        np.testing.assert_array_equal(part, batch)


def test_num_replicas_and_mesh(strategy):
    assert strategy.mesh.axis_names == ("replica",)
    assert strategy.mesh.size == strategy.num_replicas_in_sync == len(strategy.devices)
    inside = strategy.run(lambda: jnp.asarray(phalanx.get_replica_context().num_replicas_in_sync))
    assert int(inside) == strategy.num_replicas_in_sync


def test_no_recompilation_on_second_call(strategy):
    traces = []

    def fn(x, w):
        traces.append(1)
        return x @ w

    batch = strategy.shard_batch(np.ones((strategy.num_replicas_in_sync * 2, 3), np.float32))
    w = np.ones((3, 2), np.float32)
    strategy.run(fn, args=(batch, w))
    program = next(iter(strategy._runs._programs.values()))
    strategy.run(fn, args=(batch, w * 2))
    strategy.run(fn, args=(strategy.shard_batch(np.asarray(batch) + 1), w))
    assert len(traces) == 2  # one abstract trace (output kinds) + one compile trace
    assert program.jitted._cache_size() == 1
    assert len(strategy._runs) == 1
    # A new shape is a new program.
    strategy.run(fn, args=(batch, np.ones((3, 4), np.float32)))
    assert len(strategy._runs) == 2


def test_local_results_of_plain_value(strategy):
    assert strategy.experimental_local_results(3) == (3,)


def test_run_inside_jit_free_numpy_output_types(strategy):
    out = strategy.run(lambda: {"a": 1.0, "b": jnp.int32(2)})
    assert float(out["a"]) == 1.0 and int(out["b"]) == 2


def test_device_context_places_computation():
    with phalanx.device("/cpu:3") as d:
        x = jnp.ones(2) + 1
    assert d == jax.devices()[3]
    assert x.devices() == {d}
    with phalanx.device("/job:localhost/replica:0/task:0/device:CPU:1") as d:
        assert d == jax.devices()[1]


def test_reduce_sum_of_a_run_output_that_every_replica_returns(strategy):
    """TensorFlow: ``reduce(SUM, run(fn))`` counts every replica's copy, varying or not."""
    n = strategy.num_replicas_in_sync
    x = jnp.arange(3.0)
    same = strategy.run(lambda v: v * 2.0, args=(x,))
    np.testing.assert_allclose(strategy.reduce("SUM", same), n * 2.0 * np.arange(3.0))
    np.testing.assert_allclose(strategy.reduce("MEAN", same), 2.0 * np.arange(3.0))
    np.testing.assert_allclose(strategy.reduce("SUM", same, axis=0), n * 6.0)

    def total(v):
        ctx = phalanx.get_replica_context()
        return ctx.all_reduce("SUM", v.sum())

    batch = strategy.shard_batch(np.ones((2 * n, 2), np.float32))
    np.testing.assert_allclose(
        strategy.reduce("SUM", strategy.run(total, args=(batch,))), n * 4 * n
    )
