"""Custom loops: ``strategy.run`` back to back on simulated devices, and inside jit.

XLA:CPU's collectives deadlock (then abort the process) when many executions of
simulated devices are dispatched without waiting on any: ``run`` waits on the
result of step ``k - 2`` before returning step ``k``, as ``fit`` does.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from tests_support import child_xla_flags

MANY_STEPS = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    import phalanx

    strategy = phalanx.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 8, strategy
    with strategy.scope():
        w = strategy.replicate(jnp.zeros(16))
    batch = strategy.shard_batch(np.ones((64, 16), np.float32))

    def step(w, x):
        grad = phalanx.get_replica_context().all_reduce("SUM", x.sum(0))
        return w + 1e-3 * grad

    for _ in range(STEPS):  # never blocks on a result
        w = strategy.run(step, args=(w, batch))
    np.testing.assert_allclose(np.asarray(w), np.full(16, STEPS * 64e-3), rtol=1e-4)
    print("ok")
    """
)


def test_a_thousand_unblocked_run_steps_on_8_devices(tmp_path):
    # The suite's compile flags without its device count (PHALANX_CPU_DEVICES sets it).
    env = {**os.environ, "PHALANX_CPU_DEVICES": "8", "JAX_PLATFORMS": "cpu"}
    env["XLA_FLAGS"] = child_xla_flags()
    out = subprocess.run(
        [sys.executable, "-c", MANY_STEPS.replace("STEPS", "1000")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr[-3000:]


def _setup(n_devices):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    import phalanx

    strategy = phalanx.MirroredStrategy(jax.devices()[:n_devices])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6 * 32, 5)).astype(np.float32)
    y = (x @ np.arange(1.0, 6.0, dtype=np.float32) + 0.5).astype(np.float32)
    dataset = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(32)
    stacked = next(iter(strategy.experimental_distribute_dataset(dataset).stacked(6)))
    optimizer = optax.sgd(0.05)
    with strategy.scope():
        params = strategy.replicate({"w": jnp.zeros(5), "b": jnp.zeros(())})
        opt_state = strategy.replicate(optimizer.init(params))

    def step(params, opt_state, batch):
        xb, yb = batch

        def loss_fn(p):
            per_example = (xb @ p["w"] + p["b"] - yb) ** 2
            return phalanx.compute_average_loss(per_example, global_batch_size=32)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return strategy, stacked, params, opt_state, step


@pytest.mark.parametrize("n_devices", [1, 2, 8])
def test_run_inside_jit_scan_and_fori_loop_equals_stacked_batches(n_devices):
    """The seeds' tf.function + tf.range loop: run called inside one compiled loop."""
    import jax
    import numpy as np

    strategy, stacked, params, opt_state, step = _setup(n_devices)

    # The stacked-batches way: one run, lax.scan over the steps inside each replica.
    def steps_inside(params, opt_state, batches):
        def body(carry, batch):
            params, opt_state, loss = step(*carry, batch)
            return (params, opt_state), loss

        (params, opt_state), losses = jax.lax.scan(body, (params, opt_state), batches)
        return params, losses

    want_params, want_losses = strategy.run(steps_inside, args=(params, opt_state, stacked))
    want_losses = strategy.reduce("SUM", want_losses)

    # run inside a compiled function: lax.scan over the stacked batches ...
    @jax.jit
    def scan_of_runs(params, opt_state, batches):
        def body(carry, batch):
            params, opt_state, loss = strategy.run(step, args=(*carry, strategy.shard_batch(batch)))
            return (params, opt_state), strategy.reduce("SUM", loss)

        (params, _), losses = jax.lax.scan(body, (params, opt_state), batches)
        return params, losses

    got_params, got_losses = scan_of_runs(params, opt_state, stacked)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-6, atol=1e-6)
    for k in ("w", "b"):
        np.testing.assert_allclose(got_params[k], want_params[k], rtol=1e-6, atol=1e-6)

    # ... and lax.fori_loop indexing them.
    @jax.jit
    def fori_of_runs(params, opt_state, batches):
        def body(i, carry):
            batch = jax.tree.map(lambda a: a[i], batches)
            params, opt_state, _ = strategy.run(step, args=(*carry, strategy.shard_batch(batch)))
            return params, opt_state

        return jax.lax.fori_loop(0, 6, body, (params, opt_state))[0]

    got_params = fori_of_runs(params, opt_state, stacked)
    for k in ("w", "b"):
        np.testing.assert_allclose(got_params[k], want_params[k], rtol=1e-6, atol=1e-6)
