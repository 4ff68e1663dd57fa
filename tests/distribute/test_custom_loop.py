"""A custom training loop written the TensorFlow way trains exactly like one device."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx

GLOBAL_BATCH = 64


def _init_params(seed=0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return {
        "w1": jax.random.normal(k1, (20, 32)) * 0.2,
        "b1": jnp.zeros(32),
        "w2": jax.random.normal(k2, (32, 5)) * 0.2,
        "b2": jnp.zeros(5),
    }


def _per_example_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y)


def _train(strategy, steps=5, sample_weight=False):
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(steps, GLOBAL_BATCH, 20)).astype(np.float32)
    ys = rng.integers(0, 5, size=(steps, GLOBAL_BATCH)).astype(np.int32)
    ws = rng.uniform(size=(steps, GLOBAL_BATCH)).astype(np.float32)
    optimizer = optax.adam(1e-2)
    with strategy.scope():
        params = strategy.replicate(_init_params())
        opt_state = strategy.replicate(optimizer.init(params))

    def train_step(params, opt_state, x, y, w):
        def loss_fn(p):
            per_example = _per_example_loss(p, x, y)
            return phalanx.compute_average_loss(
                per_example,
                global_batch_size=GLOBAL_BATCH,
                sample_weight=w if sample_weight else None,
            )

        loss, grads = jax.value_and_grad(loss_fn)(params)
        # No all_reduce: gradients of replicated parameters are already summed.
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for i in range(steps):
        batch = strategy.shard_batch((xs[i], ys[i], ws[i]))
        params, opt_state, per_replica_loss = strategy.run(
            train_step, args=(params, opt_state, *batch)
        )
        losses.append(float(strategy.reduce("SUM", per_replica_loss, axis=None)))
    return params, losses


@pytest.mark.parametrize("sample_weight", [False, True])
def test_mirrored_8_equals_one_device(sample_weight):
    one_params, one_losses = _train(phalanx.OneDeviceStrategy(), sample_weight=sample_weight)
    m_params, m_losses = _train(phalanx.MirroredStrategy(), sample_weight=sample_weight)
    np.testing.assert_allclose(m_losses, one_losses, rtol=1e-5, atol=1e-6)
    for k in one_params:
        np.testing.assert_allclose(m_params[k], one_params[k], atol=1e-5)
    # And the run actually trained.
    assert one_losses[-1] < one_losses[0]


def test_parameters_stay_replicated():
    strategy = phalanx.MirroredStrategy()
    params, _ = _train(strategy, steps=1)
    for leaf in jax.tree.leaves(params):
        assert not isinstance(leaf, phalanx.PerReplica)
        assert leaf.sharding.is_equivalent_to(strategy.replicated_sharding, leaf.ndim)


def test_compute_average_loss_semantics():
    s = phalanx.MirroredStrategy(jax.devices()[:2])
    per_example = np.arange(8, dtype=np.float32)

    def fn(x):
        return phalanx.compute_average_loss(x), phalanx.compute_average_loss(x, sample_weight=2.0)

    plain, weighted = s.run(fn, args=(s.shard_batch(per_example),))
    # Each replica divides its sum by the global batch (4 per replica x 2 replicas).
    np.testing.assert_allclose(s.reduce("SUM", plain), per_example.mean())
    np.testing.assert_allclose(s.reduce("SUM", weighted), 2 * per_example.mean())
    got = phalanx.compute_average_loss(
        np.ones((4, 3), np.float32), global_batch_size=8, sample_weight=np.arange(4.0)
    )
    np.testing.assert_allclose(got, 3 * (0 + 1 + 2 + 3) / 8)


def test_compute_average_loss_errors():
    with pytest.raises(ValueError, match="rank >= 1"):
        phalanx.compute_average_loss(np.float32(1.0))
    with pytest.raises(ValueError, match="must be positive"):
        phalanx.compute_average_loss(np.ones(3), global_batch_size=0)
    with pytest.raises(TypeError, match="positive int"):
        phalanx.compute_average_loss(np.ones(3), global_batch_size=2.5)
