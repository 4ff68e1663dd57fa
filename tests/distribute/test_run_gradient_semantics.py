"""One gradient semantics for ``strategy.run`` called from Python and inside ``jax.jit`` +
``lax.fori_loop`` (the guide's several steps in one ``tf.function``), with TF 2.21's numbers.

The program is the custom-training tutorial's shape on a linear model: ``train_step`` computes
per-example squared errors, ``compute_average_loss`` over the global batch 64, the gradient,
optionally ``replica_context.all_reduce(SUM)`` of it, and an SGD(0.1) update;
``distributed_train_step`` runs it under ``strategy.run`` and sums the losses; 4 steps, from
Python (one call a step) and inside one jitted ``fori_loop``.

TF 2.21 (``MirroredStrategy`` on 2 and 8 logical CPUs, ``w = tf.Variable(ones(3))``,
``tf.keras.optimizers.SGD(0.1).apply_gradients``, Keras 3.15; one ``tf.function`` step a batch,
and the 4 steps in one ``tf.function`` over a distributed iterator, which agree) gives
``_TF_WEIGHTS`` when the step hands its gradients to the optimizer, and ``_TF_REDUCED`` when it
all-reduces them first: Keras 3's ``apply_gradients`` all-reduces the gradients under a
strategy again (``_all_reduce_sum_gradients``; it has no ``experimental_aggregate_gradients``),
so the sum is counted N times. phalanx gives both: inside ``run`` the gradient of replicated
parameters is already what TF's optimizer applies (the sum over the replicas), on both paths,
and an explicit ``all_reduce`` of it counts it N times, as TF's optimizer does after one.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx

_TF_WEIGHTS = {  # the optimizer alone: SGD on the gradient summed over the replicas
    2: [0.37992969155311584, 0.449789822101593, 0.5016450881958008],
    8: [0.37992972135543823, 0.449789822101593, 0.5016450881958008],
}
_TF_LOSSES = {
    2: [3.9619128704071045, 2.4383132457733154, 1.7506654262542725, 1.4588820934295654],
    8: [3.9619128704071045, 2.4383132457733154, 1.750665307044983, 1.4588819742202759],
}
_TF_REDUCED = {  # all_reduce(SUM) in the step, then apply_gradients (which sums again)
    2: [0.08715442568063736, 0.22305205464363098, 0.2630068063735962],
    8: [0.060934871435165405, 0.16195562481880188, -0.009861409664154053],
}
_TF_REDUCED_LOSSES = {
    2: [3.9619128704071045, 1.631690502166748, 1.1571519374847412, 0.8941347599029541],
    8: [3.9619128704071045, 2.6176466941833496, 2.0107433795928955, 1.0530884265899658],
}

_rng = np.random.default_rng(0)
X = _rng.normal(size=(4, 64, 3)).astype(np.float32)
Y = _rng.normal(size=(4, 64)).astype(np.float32)


def _program(strategy, reduce, optimizer):
    """The tutorial's ``train_step`` and ``distributed_train_step``; the state ``(w, opt)``."""

    def train_step(state, x, y):
        w, opt_state = state

        def loss_fn(w):
            return phalanx.compute_average_loss((x @ w - y) ** 2, global_batch_size=64)

        loss, g = jax.value_and_grad(loss_fn)(w)
        if reduce:
            g = phalanx.get_replica_context().all_reduce("sum", g)
        if optimizer is None:
            return (w - 0.1 * g, opt_state), loss
        updates, opt_state = optimizer.update(g, opt_state, w)
        return (optax.apply_updates(w, updates), opt_state), loss

    def distributed_train_step(state, x, y):
        state, per_replica_losses = strategy.run(train_step, args=(state, x, y))
        return state, strategy.reduce(phalanx.ReduceOp.SUM, per_replica_losses, axis=None)

    with strategy.scope():
        w = jnp.ones(3)
        opt_state = () if optimizer is None else optimizer.init(w)
        state = strategy.replicate((w, opt_state))
    return distributed_train_step, state


def _python_loop(strategy, reduce, optimizer):
    step, state = _program(strategy, reduce, optimizer)
    losses = []
    for i in range(4):
        state, loss = step(state, *strategy.shard_batch((X[i], Y[i])))
        losses.append(float(loss))
    return state[0], losses


def _traced_loop(strategy, reduce, optimizer):
    step, state = _program(strategy, reduce, optimizer)

    @jax.jit
    def loop(state, xs, ys):
        def body(i, carry):
            state, losses = carry
            state, loss = step(state, *strategy.shard_batch((xs[i], ys[i])))
            return state, losses.at[i].set(loss)

        return jax.lax.fori_loop(0, 4, body, (state, jnp.zeros(4)))

    state, losses = loop(state, jnp.asarray(X), jnp.asarray(Y))
    return state[0], losses


@pytest.mark.parametrize("optimizer", ["by_hand", "phalanx_sgd"])
@pytest.mark.parametrize("reduce", [False, True], ids=["optimizer_sums", "all_reduce"])
@pytest.mark.parametrize("n", [2, 8])
def test_python_and_traced_paths_give_tfs_weights(n, reduce, optimizer):
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:n])
    opt = None if optimizer == "by_hand" else phalanx.optimizers.SGD(0.1)
    w_python, losses_python = _python_loop(strategy, reduce, opt)
    w_traced, losses_traced = _traced_loop(strategy, reduce, opt)
    assert not isinstance(w_python, phalanx.PerReplica)  # replicated, as a MirroredVariable
    want_w = (_TF_REDUCED if reduce else _TF_WEIGHTS)[n]
    want_losses = (_TF_REDUCED_LOSSES if reduce else _TF_LOSSES)[n]
    np.testing.assert_allclose(w_traced, w_python, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(losses_traced, losses_python, rtol=1e-6)
    np.testing.assert_allclose(w_python, want_w, rtol=2e-6, atol=5e-7)
    np.testing.assert_allclose(losses_python, want_losses, rtol=2e-6)


def test_the_explicit_all_reduce_counts_the_sum_n_times_as_tfs_optimizer_then_does():
    """What ``_TF_REDUCED`` is: SGD on N times the one-device gradient of the global batch."""
    for n in (2, 8):
        w = np.ones(3, np.float32)
        for i in range(4):
            w = w - 0.1 * n * (2 * X[i].T @ (X[i] @ w - Y[i]) / 64)
        np.testing.assert_allclose(w, _TF_REDUCED[n], rtol=1e-4, atol=1e-5)
