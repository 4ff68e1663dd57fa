"""Child script: ``strategy.run``/``reduce``/``gather`` and a 5-step custom training loop.

``strategy_ops.py OUT_DIR``: under ``phalanx launch`` each process builds a
``MultiWorkerMirroredStrategy`` and writes what it computed to
``OUT_DIR/<process>.npz``. The test imports ``compute`` and runs it on one
process's 4 devices for the reference.
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

import phalanx

GLOBAL_BATCH = 64
STEPS = 5


def _replica_ops(strategy) -> dict[str, np.ndarray]:
    n = strategy.num_replicas_in_sync
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: np.full((3,), ctx.replica_id_in_sync_group + 1.0, np.float32)
    )

    def fn(v, x):
        ctx = phalanx.get_replica_context()
        total = ctx.all_reduce("SUM", jnp.sum(x))
        return v * 2.0 + ctx.replica_id_in_sync_group, x * 10.0, total

    batch = strategy.shard_batch(np.arange(n * 2 * 3, dtype=np.float32).reshape(n * 2, 3))
    per_replica, scaled, total = strategy.run(fn, args=(values, batch))
    return {
        "reduce_sum": strategy.reduce("SUM", per_replica, axis=None),
        "reduce_mean_axis0": strategy.reduce("MEAN", per_replica, axis=0),
        "gather": strategy.gather(per_replica, axis=0),
        "gather_batch": strategy.gather(scaled, axis=0),
        "reduce_batch": strategy.reduce("SUM", scaled, axis=0),
        "all_reduce": total,
    }


def _init_params(seed=0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return {
        "w1": jax.random.normal(k1, (20, 32)) * 0.2,
        "b1": jnp.zeros(32),
        "w2": jax.random.normal(k2, (32, 5)) * 0.2,
        "b2": jnp.zeros(5),
    }


def _custom_loop(strategy) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(STEPS, GLOBAL_BATCH, 20)).astype(np.float32)
    ys = rng.integers(0, 5, size=(STEPS, GLOBAL_BATCH)).astype(np.int32)
    optimizer = optax.adam(1e-2)
    with strategy.scope():
        params = strategy.replicate(jax.device_get(_init_params()))
        opt_state = strategy.replicate(jax.device_get(optimizer.init(_init_params())))

    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            h = jax.nn.relu(x @ p["w1"] + p["b1"])
            logits = h @ p["w2"] + p["b2"]
            per_example = optax.softmax_cross_entropy_with_integer_labels(logits, y)
            return phalanx.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for i in range(STEPS):
        x, y = strategy.shard_batch((xs[i], ys[i]))
        params, opt_state, loss = strategy.run(train_step, args=(params, opt_state, x, y))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    out = {f"param_{k}": v for k, v in params.items()}
    out["losses"] = np.array(losses)
    return out


def compute(strategy) -> dict[str, np.ndarray]:
    """What the test compares: replica ops and the custom loop's parameters and losses."""
    out = {**_replica_ops(strategy), **_custom_loop(strategy)}
    return {k: np.asarray(jax.device_get(v)) for k, v in out.items()}


if __name__ == "__main__":
    strategy = phalanx.MultiWorkerMirroredStrategy()
    results = compute(strategy)
    np.savez(os.path.join(sys.argv[1], f"{jax.process_index()}.npz"), **results)
    print(f"process {jax.process_index()} of {jax.process_count()}: done", flush=True)
