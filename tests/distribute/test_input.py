"""Distributed datasets: global batches split over replicas, partial batches, state."""

import jax
import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset
from phalanx.distribute import InputContext, InputOptions
from phalanx.errors import BatchNotDivisibleError


def _ds(n=32, batch=8, **kw):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.int32)
    return Dataset.from_tensor_slices((x, y)).batch(batch, **kw), x, y


def test_batches_are_global_arrays_split_over_replicas(strategy):
    n = strategy.num_replicas_in_sync
    ds, x, _y = _ds(batch=8 * n // n * n if n <= 8 else n)
    dist = strategy.experimental_distribute_dataset(ds)
    seen_x = []
    for bx, _by in dist:
        assert isinstance(bx, jax.Array)
        assert bx.sharding.is_equivalent_to(strategy.batch_sharding, bx.ndim)
        # Usable directly in run: each replica gets its slice.
        out = strategy.run(lambda a: a.sum(axis=0), args=(bx,))
        parts = strategy.experimental_local_results(out)
        assert len(parts) == n
        seen_x.append(np.asarray(bx))
    np.testing.assert_array_equal(np.concatenate(seen_x), x)


def test_alias_and_iter_get_next(mirrored8):
    ds, x, _ = _ds()
    it = iter(mirrored8.distribute_dataset(ds))
    first = it.get_next()
    np.testing.assert_array_equal(first[0], x[:8])


def test_partial_batch_error_drop_pad(mirrored8):
    ds, _x, y = _ds(n=20, batch=8)  # batches of 8, 8, 4
    with pytest.raises(BatchNotDivisibleError, match=r"partial batch of 4 .*batches of 8"):
        list(mirrored8.experimental_distribute_dataset(ds))
    dropped = list(
        mirrored8.experimental_distribute_dataset(ds, InputOptions(partial_batch="drop"))
    )
    assert len(dropped) == 2
    padded = list(mirrored8.experimental_distribute_dataset(ds, InputOptions(partial_batch="pad")))
    assert len(padded) == 3
    (last_x, _last_y), mask = padded[-1]
    assert last_x.shape == (8, 2)
    np.testing.assert_array_equal(mask, [1, 1, 1, 1, 0, 0, 0, 0])
    # Every example counted exactly once over the epoch.
    total = sum(float((np.asarray(b[1]) * np.asarray(m)).sum()) for (b, m) in padded)
    assert total == y.sum()


def test_global_batch_not_divisible_by_replicas(mirrored8):
    ds, _, _ = _ds(n=24, batch=12)
    with pytest.raises(BatchNotDivisibleError, match=r"batch of 12 .* 8 replicas.* 8 and 16"):
        next(iter(mirrored8.experimental_distribute_dataset(ds)))


def test_distribute_datasets_from_function_gives_each_replica_one_batch(strategy):
    """TensorFlow's contract: dataset_fn batches per replica; each replica takes one a step."""
    n = strategy.num_replicas_in_sync
    per_replica, steps = 3, 4
    x = np.arange(per_replica * n * steps * 2, dtype=np.float32).reshape(-1, 2)
    calls = []

    def dataset_fn(ctx: InputContext):
        calls.append(ctx)
        batch = ctx.get_per_replica_batch_size(per_replica * n)
        ds = Dataset.from_tensor_slices(x).shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.batch(batch)

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    assert calls == [InputContext(1, 0, n)]
    batches = list(dist)
    assert len(batches) == steps
    for k, b in enumerate(batches):
        assert b.shape == (per_replica * n, 2)  # the global batch: per-replica x replicas
        for i, part in enumerate(strategy.experimental_local_results(b)):
            first = (k * n + i) * per_replica  # replica i takes element k*n + i
            np.testing.assert_array_equal(part, x[first : first + per_replica])
    stacked = list(dist.stacked(3))
    assert [b.shape for b in stacked] == [(3, per_replica * n, 2), (1, per_replica * n, 2)]
    np.testing.assert_array_equal(
        np.concatenate([np.asarray(b) for b in stacked])[0], x[: per_replica * n]
    )


def test_distribute_datasets_from_function_state_and_partial_last_step(mirrored8):
    x = np.arange(8 * 3 * 2 + 5, dtype=np.float32)
    dist = mirrored8.distribute_datasets_from_function(
        lambda ctx: Dataset.from_tensor_slices(x).batch(3)
    )
    it = iter(dist)
    next(it)
    state = it.get_state()
    second = np.asarray(next(it))
    resumed = iter(dist)
    resumed.set_state(state)
    np.testing.assert_array_equal(np.asarray(next(resumed)), second)
    # 5 examples are left: fewer batches than replicas, refused with the numbers.
    with pytest.raises(
        BatchNotDivisibleError, match="partial batch of 5 examples after batches of 24"
    ):
        next(resumed)
    drop = InputOptions(partial_batch="drop")
    dist = mirrored8.distribute_datasets_from_function(
        lambda ctx: Dataset.from_tensor_slices(x).batch(3), options=drop
    )
    assert [b.shape for b in dist] == [(24,), (24,)]


def test_guide_dataset_fn_of_25_trains_with_global_batch_200_in_fit(mirrored8):
    """The guide's ``lambda _: get_dataset(25)`` on 8 replicas: fit's global batch is 200."""
    from phalanx import layers

    rng = np.random.default_rng(0)
    x = rng.normal(size=(800, 4)).astype(np.float32)
    y = (x @ np.arange(1.0, 5.0, dtype=np.float32)).astype(np.float32)

    def get_dataset(batch_size):
        return Dataset.from_tensor_slices((x, y)).batch(batch_size)

    def train(data):
        with mirrored8.scope():
            model = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
        model.set_weights([np.full((4, 1), 0.1, np.float32), np.zeros(1, np.float32)])
        history = model.fit(data, epochs=2, verbose=0)
        return model, history

    model, history = train(mirrored8.distribute_datasets_from_function(lambda _: get_dataset(25)))
    assert int(model._state.step) == 2 * 800 // 200
    reference, ref_history = train(get_dataset(200))
    np.testing.assert_allclose(history.history["loss"], ref_history.history["loss"], rtol=1e-5)
    for a, b in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_input_context_batch_size_errors():
    assert InputContext(1, 0, 4).get_per_replica_batch_size(32) == 8
    with pytest.raises(BatchNotDivisibleError, match=r"batch size of 30 .* 4 replicas.*28 and 32"):
        InputContext(1, 0, 4).get_per_replica_batch_size(30)


def test_input_options_validation():
    with pytest.raises(ValueError, match="partial_batch must be one of"):
        InputOptions(partial_batch="sometimes")
    with pytest.raises(ValueError, match=">= 1"):
        InputOptions(experimental_per_replica_buffer_size=0)
    with pytest.raises(ValueError, match="PER_REPLICA"):
        InputOptions(
            experimental_replication_mode=phalanx.distribute.InputReplicationMode.PER_REPLICA
        )


def test_host_batches_without_fetch_to_device(mirrored8):
    ds, _x, _ = _ds()
    dist = mirrored8.experimental_distribute_dataset(
        ds, InputOptions(experimental_fetch_to_device=False)
    )
    first = next(iter(dist))  # one host array per replica, as TF (test_input_host_batches.py)
    assert isinstance(first[0], phalanx.PerReplica) and isinstance(first[0].values, np.ndarray)


def test_iterator_state_resumes_exactly(mirrored8):
    ds = Dataset.from_tensor_slices(np.arange(64, dtype=np.float32)).shuffle(16, seed=3).batch(8)
    for k in range(8):
        it = iter(mirrored8.experimental_distribute_dataset(ds))
        for _ in range(k):
            next(it)
        state = it.get_state()
        expected = [np.asarray(b) for b in it]  # the uninterrupted rest
        resumed = iter(mirrored8.experimental_distribute_dataset(ds))
        resumed.set_state(state)
        rest = [np.asarray(b) for b in resumed]
        assert len(rest) == len(expected) == 8 - k
        for a, b in zip(rest, expected, strict=True):
            np.testing.assert_array_equal(a, b)


def test_producer_error_reaches_consumer(mirrored8):
    def gen():
        yield np.zeros((8, 2), np.float32)
        raise RuntimeError("disk on fire")

    dist = mirrored8.experimental_distribute_dataset(gen_iterable(gen))
    it = iter(dist)
    next(it)
    with pytest.raises(RuntimeError, match="disk on fire"):
        next(it)


class gen_iterable:
    def __init__(self, fn):
        self.fn = fn

    def __iter__(self):
        return self.fn()


def test_stacked_batches_for_several_steps_in_one_run(mirrored8):
    import jax.numpy as jnp

    x = np.arange(40 * 2, dtype=np.float32).reshape(40, 2)
    ds = Dataset.from_tensor_slices(x).batch(8)  # 5 batches
    groups = list(mirrored8.experimental_distribute_dataset(ds).stacked(2))
    assert [g.shape for g in groups] == [(2, 8, 2), (2, 8, 2), (1, 8, 2)]

    def several_steps(stack):  # each replica: [steps, 1, 2]
        def step(total, batch):
            return total + batch.sum(), None

        # The carry varies by replica (it sums this replica's data): start it so.
        total, _ = jax.lax.scan(step, jnp.zeros_like(stack[0, 0, 0]), stack)
        return phalanx.get_replica_context().all_reduce("sum", total)

    sums = [float(mirrored8.run(several_steps, args=(g,))) for g in groups]
    np.testing.assert_allclose(sum(sums), x.sum())
    np.testing.assert_allclose(sums[0], x[:16].sum())
    with pytest.raises(ValueError, match="positive int"):
        mirrored8.experimental_distribute_dataset(ds).stacked(0)


def test_set_state_after_reading_says_use_a_fresh_iterator(mirrored8):
    ds, _, _ = _ds()
    it = iter(mirrored8.experimental_distribute_dataset(ds))
    next(it)
    with pytest.raises(RuntimeError, match="fresh iterator"):
        it.set_state(it.get_state())
