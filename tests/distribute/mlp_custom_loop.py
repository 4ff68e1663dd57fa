"""A two-layer MLP's custom training loop through ``strategy.run``, for the tests that
compare a strategy's variable layout (``shard_parameters``, a layout map) with one device.

The parameters are a dict (``w1``, ``b1``, ``w2``, ``b2``) placed with
``strategy.distribute_variables``; Adam from optax; 4 steps of global batch 64.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import phalanx


def init_params():
    k1, k2 = jax.random.split(jax.random.key(0))
    return {
        "w1": jax.random.normal(k1, (20, 128)) * 0.2,  # split on 128
        "b1": jnp.zeros(128),  # whole
        "w2": jax.random.normal(k2, (128, 16)) * 0.2,  # split on 128
        "b2": jnp.zeros(16),
    }


def custom_loop(strategy, steps=4):
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(steps, 64, 20)).astype(np.float32)
    ys = rng.integers(0, 16, size=(steps, 64)).astype(np.int32)
    optimizer = optax.adam(1e-2)
    with strategy.scope():
        params = strategy.distribute_variables(init_params())
        opt_state = strategy.distribute_variables(optimizer.init(params))

    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            h = jax.nn.relu(x @ p["w1"] + p["b1"])
            per_example = optax.softmax_cross_entropy_with_integer_labels(h @ p["w2"] + p["b2"], y)
            return phalanx.compute_average_loss(per_example, global_batch_size=64)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for i in range(steps):
        batch = strategy.shard_batch((xs[i], ys[i]))
        params, opt_state, loss = strategy.run(train_step, args=(params, opt_state, *batch))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    return params, opt_state, losses
