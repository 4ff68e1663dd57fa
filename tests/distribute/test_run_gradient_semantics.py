"""One gradient semantics for ``strategy.run`` called from Python and inside ``jax.jit`` +
``lax.fori_loop`` (the guide's several steps in one ``tf.function``), as TF 2.21's.

The program: the custom-training tutorial's step shape on a linear model, per-example
squared error, ``compute_average_loss`` over the global batch 64, SGD 0.1, 4 steps.
TF 2.21 (MirroredStrategy on 2 logical CPUs, equal initial weights ``ones(3)``) gives the same
weights whether ``optimizer.apply_gradients`` aggregates the per-replica gradients or the step
all-reduces them itself: ``_TF_WEIGHTS``. In phalanx the gradient of replicated parameters is
already that sum inside ``run``, on both paths (the README's "No apply_gradients all-reduce"),
so the optimizer pattern gives TF's weights from Python and from inside ``jax.jit``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx

_TF_WEIGHTS = np.array([0.3799297, 0.44978982, 0.5016451], np.float32)
_TF_LOSSES = [3.9619128704071045, 2.4383130073547363, 1.7506651878356934, 1.4588819742202759]

_rng = np.random.default_rng(0)
X = _rng.normal(size=(4, 64, 3)).astype(np.float32)
Y = _rng.normal(size=(4, 64)).astype(np.float32)


def _step(w, x, y, reduce):
    def loss_fn(w):
        return phalanx.compute_average_loss((x @ w - y) ** 2, global_batch_size=64)

    loss, g = jax.value_and_grad(loss_fn)(w)
    if reduce:
        g = phalanx.get_replica_context().all_reduce("sum", g)
    return w - 0.1 * g, loss


def _python_loop(strategy, reduce=False):
    with strategy.scope():
        w = strategy.replicate(jnp.ones(3))
    losses = []
    for i in range(4):
        x, y = strategy.shard_batch((X[i], Y[i]))
        w, loss = strategy.run(_step, args=(w, x, y, reduce))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    return w, losses


def _traced_loop(strategy, reduce=False):
    @jax.jit
    def loop(w, xs, ys):
        def body(i, w):
            x, y = strategy.shard_batch((xs[i], ys[i]))
            return strategy.run(_step, args=(w, x, y, reduce))[0]

        return jax.lax.fori_loop(0, 4, body, w)

    with strategy.scope():
        w = strategy.replicate(jnp.ones(3))
    return loop(w, jnp.asarray(X), jnp.asarray(Y))


@pytest.mark.parametrize("n", [2, 8])
def test_python_and_traced_paths_give_tfs_weights(n):
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:n])
    w_python, losses = _python_loop(strategy)
    w_traced = _traced_loop(strategy)
    assert not isinstance(w_python, phalanx.PerReplica)
    np.testing.assert_allclose(w_python, _TF_WEIGHTS, rtol=2e-6)
    np.testing.assert_allclose(w_traced, _TF_WEIGHTS, rtol=2e-6)
    np.testing.assert_allclose(losses, _TF_LOSSES, rtol=2e-6)


@pytest.mark.parametrize("n", [2, 8])
def test_explicit_all_reduce_of_gradients_is_the_same_on_both_paths(n):
    """The README's difference from TF ("No apply_gradients all-reduce"): the gradient is
    already the sum, so a second sum counts it ``n`` times, on both paths alike (TF 2.21's
    explicit all_reduce of per-replica gradients gives ``_TF_WEIGHTS``)."""
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:n])
    w_python, _ = _python_loop(strategy, reduce=True)
    w_traced = _traced_loop(strategy, reduce=True)
    np.testing.assert_allclose(w_traced, w_python, rtol=1e-5)
    w = np.ones(3, np.float32)  # SGD on n times the one-device gradient
    for i in range(4):
        g = 2 * X[i].T @ (X[i] @ w - Y[i]) / 64
        w = w - 0.1 * n * g
    np.testing.assert_allclose(w_python, w, rtol=1e-4)
    assert not np.allclose(w_python, _TF_WEIGHTS, rtol=1e-2)
