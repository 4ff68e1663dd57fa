"""``strategy.reduce``/``gather``/``experimental_local_results`` of a container of per-replica
values (``{"loss": per_replica_loss, "correct": per_replica_correct}``, as a custom loop's
step returns), compared with TensorFlow 2.21 on 4 replicas.

Each replica ``r`` holds ``[0, 1, 2] + 10 r``. TensorFlow reduces each value of the
container (SUM -> ``[60, 64, 68]``, MEAN -> ``[15, 16, 17]``) and gives one container per
replica for the local results. phalanx returned a ``PerReplica`` of shape ``[1, 3]``
inside the dict. (TensorFlow 2.21's ``gather`` of a dict keeps replica 0's value only, and
its ``MEAN`` with an axis over a container raises: phalanx does for the container what it
does for each value.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import phalanx


def _strategy_and_value():
    strategy = phalanx.distribute.MirroredStrategy(devices=jax.devices()[:4])

    def value_fn(ctx):
        return jnp.arange(3, dtype=jnp.float32) + 10 * ctx.replica_id_in_sync_group

    return strategy, strategy.experimental_distribute_values_from_function(value_fn)


def test_reduce_a_dict_of_per_replica_values():
    strategy, v = _strategy_and_value()
    total = strategy.reduce(phalanx.distribute.ReduceOp.SUM, {"a": v}, axis=None)
    assert isinstance(total["a"], jax.Array)
    np.testing.assert_array_equal(total["a"], [60.0, 64.0, 68.0])
    mean = strategy.reduce("MEAN", (v, {"b": v}), axis=None)
    np.testing.assert_array_equal(mean[1]["b"], [15.0, 16.0, 17.0])
    np.testing.assert_array_equal(mean[0], [15.0, 16.0, 17.0])
    per_example = strategy.reduce("MEAN", {"a": v}, axis=0)["a"]
    np.testing.assert_allclose(per_example, strategy.reduce("MEAN", v, axis=0))


def test_gather_and_local_results_of_a_dict():
    strategy, v = _strategy_and_value()
    gathered = strategy.gather({"a": v}, axis=0)["a"]
    np.testing.assert_array_equal(gathered, strategy.gather(v, axis=0))
    assert gathered.shape == (12,)
    local = strategy.experimental_local_results({"a": v, "c": (v,)})
    assert len(local) == 4 and all(set(part) == {"a", "c"} for part in local)
    np.testing.assert_array_equal(local[1]["a"], [10.0, 11.0, 12.0])
    np.testing.assert_array_equal(local[2]["c"][0], [20.0, 21.0, 22.0])
