"""Bad input gets a message that says what was expected, what was given, what to do."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx.errors import (
    BatchNotDivisibleError,
    DeviceNotFoundError,
    DistributedValueError,
    RunCompilationError,
)


def test_batch_not_divisible_by_replicas(mirrored8):
    with pytest.raises(
        BatchNotDivisibleError, match=r"global batch of 10 .* 8 replicas.* 8 and 16"
    ):
        mirrored8.shard_batch(np.ones((10, 3)))


def test_unknown_reduce_op(mirrored8):
    value = phalanx.PerReplica(np.ones((8, 2)))
    with pytest.raises(DistributedValueError, match=r"Unknown reduce op 'MAX'.*SUM.*MEAN"):
        mirrored8.reduce("MAX", value)
    with pytest.raises(DistributedValueError, match="Unknown reduce op"):
        phalanx.get_replica_context().all_reduce(3, 1.0)


@pytest.mark.parametrize("spec", ["/gpu:0", "GPU:1", "/device:TPU:0", "cpu:99"])
def test_device_string_matching_nothing(spec, monkeypatch):
    # No TPU, not even simulated: a TPUStrategy(experimental_simulate_on_cpu=True) made by an
    # earlier test makes TPU names resolve to its cores for the rest of the process.
    monkeypatch.setattr("phalanx.cluster._devices._simulated_tpu", ())
    with pytest.raises(DeviceNotFoundError, match=r"No device matches .*8 cpu \(cpu:0..cpu:7\)"):
        phalanx.MirroredStrategy([spec])


def test_unreadable_device_string():
    with pytest.raises(DeviceNotFoundError, match=r"Cannot read the device string 'banana'"):
        phalanx.OneDeviceStrategy("banana")
    with pytest.raises(DeviceNotFoundError, match="out of range"):
        phalanx.OneDeviceStrategy(42)
    with pytest.raises(TypeError, match="got float"):
        phalanx.OneDeviceStrategy(1.5)


def test_repeated_device():
    with pytest.raises(ValueError, match="Each device may appear once"):
        phalanx.MirroredStrategy(["cpu:0", 0])


def test_reduce_axis_that_does_not_exist(mirrored8):
    value = phalanx.PerReplica(np.ones((8, 2)))
    with pytest.raises(DistributedValueError, match=r"axis=3 does not exist.*shape \(2,\)"):
        mirrored8.reduce("SUM", value, axis=3)
    with pytest.raises(DistributedValueError, match=r"axis=2 does not exist.*shape \(3, 4\)"):
        mirrored8.reduce("MEAN", np.ones((3, 4)), axis=2)


def test_reduce_sum_of_plain_value(mirrored8):
    with pytest.raises(DistributedValueError, match=r"not per-replica.*8 replicas"):
        mirrored8.reduce("SUM", np.ones(3))
    np.testing.assert_allclose(mirrored8.reduce("MEAN", np.ones(3)), np.ones(3))


def test_non_jittable_fn(mirrored8):
    def fn(x):
        if x.sum() > 0:  # Python control flow on a traced value
            return x
        return -x

    batch = mirrored8.shard_batch(np.ones((8, 2)))
    with pytest.raises(RunCompilationError, match=r"strategy.run compiles `.*fn` with jax.jit"):
        mirrored8.run(fn, args=(batch,))
    with pytest.raises(RunCompilationError, match="jnp.where"):
        mirrored8.run(lambda x: float(x.sum()), args=(batch,))


def test_run_argument_errors(mirrored8):
    with pytest.raises(TypeError, match=r"args=\(x,\)"):
        mirrored8.run(lambda x: x, args=jnp.ones(2))
    with pytest.raises(TypeError, match="expects a callable"):
        mirrored8.run(3)
    with pytest.raises(ValueError, match="leading replica axis of length 8"):
        mirrored8.run(lambda x: x, args=(phalanx.PerReplica(np.ones((4, 2))),))
    with pytest.raises(TypeError, match="must be arrays"):
        mirrored8.run(lambda x: x, args=(object(),))


def test_distribute_values_with_different_shapes(mirrored8):
    with pytest.raises(DistributedValueError, match="one structure and one shape"):
        mirrored8.experimental_distribute_values_from_function(
            lambda ctx: np.ones(ctx.replica_id_in_sync_group + 1)
        )


def test_cpu_device_count_after_start():
    jax.devices()
    with pytest.raises(RuntimeError, match="after JAX started"):
        phalanx.cluster.set_cpu_device_count(3)


def test_reduce_and_local_results_check_the_replica_axis(mirrored8):
    """A PerReplica for 3 replicas on 8 is refused, as strategy.run refuses it."""
    short = phalanx.PerReplica(np.ones((3, 2), np.float32))
    for call in (
        lambda: mirrored8.reduce("SUM", short),
        lambda: mirrored8.reduce("MEAN", short, axis=0),
        lambda: mirrored8.experimental_local_results(short),
        lambda: mirrored8.gather(short, axis=0),
        lambda: mirrored8.run(lambda v: v, args=(short,)),
    ):
        with pytest.raises(
            ValueError,
            match=r"8 replicas needs a leading replica axis of length 8.*got shape \(3, 2\)",
        ):
            call()
    with pytest.raises(ValueError, match=r"got a scalar"):
        mirrored8.reduce("SUM", phalanx.PerReplica(np.float32(1.0)))
