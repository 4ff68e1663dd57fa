"""Checkpoints of a custom training loop: ``Checkpoint(model=params, optimizer=opt_state)``
with any pytree of arrays, optax state or a ``flax.nnx`` module by name, as the
custom-training tutorial's ``tf.train.Checkpoint(optimizer=optimizer, model=model)`` with a
``CheckpointManager``; ``restore(manager.latest_checkpoint)`` resumes exactly (TF's resumed
run equals its uninterrupted one, which this checks of phalanx's).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import phalanx
from phalanx.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from phalanx.errors import CheckpointError, CheckpointMismatchError

_rng = np.random.default_rng(0)
XS = _rng.normal(size=(6, 16, 4)).astype(np.float32)
YS = _rng.integers(0, 3, size=(6, 16)).astype(np.int32)
OPT = optax.adam(1e-2)


def _init(strategy):
    k1 = jax.random.key(0)
    params = {"w": jax.random.normal(k1, (4, 3)) * 0.5, "b": jnp.zeros(3)}
    with strategy.scope():
        params = strategy.replicate(params)
        return params, strategy.replicate(OPT.init(params))


def _step(params, opt_state, x, y):
    def loss_fn(p):
        logits = x @ p["w"] + p["b"]
        per_example = optax.softmax_cross_entropy_with_integer_labels(logits, y)
        return phalanx.compute_average_loss(per_example, global_batch_size=16)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def _train(strategy, params, opt_state, steps):
    losses = []
    for i in steps:
        x, y = strategy.shard_batch((XS[i], YS[i]))
        params, opt_state, loss = strategy.run(_step, args=(params, opt_state, x, y))
        losses.append(float(strategy.reduce("SUM", loss, axis=None)))
    return params, opt_state, losses


def test_custom_loop_resumes_from_manager_latest_checkpoint(tmp_path):
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:2])
    params, opt_state = _init(strategy)
    checkpoint = Checkpoint(optimizer=opt_state, model=params)
    manager = CheckpointManager(checkpoint, str(tmp_path), max_to_keep=2)
    params, opt_state, first = _train(strategy, params, opt_state, range(3))
    checkpoint.model, checkpoint.optimizer = params, opt_state
    path = manager.save()
    _, _, rest = _train(strategy, params, opt_state, range(3, 6))
    manager.close()

    fresh_params, fresh_opt = _init(strategy)
    restored = Checkpoint(optimizer=fresh_opt, model=fresh_params)
    assert latest_checkpoint(str(tmp_path)) == path
    restored.restore(latest_checkpoint(str(tmp_path))).assert_consumed()
    params2, opt2 = restored.model, restored.optimizer
    assert isinstance(opt2[0], optax.ScaleByAdamState) and int(opt2[0].count) == 3
    for leaf in jax.tree.leaves((params2, opt2)):
        assert leaf.sharding.is_equivalent_to(strategy.replicated_sharding, leaf.ndim)
    for a, b in zip(jax.tree.leaves(params2), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(a, b)
    _, _, resumed = _train(strategy, params2, opt2, range(3, 6))
    assert resumed == rest  # bit-identical to the run that went on
    assert first[-1] > rest[-1]


def test_nnx_module_and_scalars_restore_in_place(tmp_path):
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    ckpt = Checkpoint(net=model, step={"n": 7}, key=jax.random.key(5))
    path = ckpt.save(str(tmp_path / "ckpt"))
    kernel = np.asarray(model.kernel[...])
    model.kernel[...] = jnp.zeros((3, 2))
    other = Checkpoint(net=model, step={"n": 0}, key=jax.random.key(0))
    other.restore(path)
    assert other.net is model
    np.testing.assert_array_equal(model.kernel[...], kernel)
    assert other.step == {"n": 7} and isinstance(other.step["n"], int)
    np.testing.assert_array_equal(
        jax.random.key_data(other.key), jax.random.key_data(jax.random.key(5))
    )


def test_mismatched_tree_is_refused_naming_the_leaf(tmp_path):
    path = Checkpoint(params={"w": jnp.ones((4, 3))}).save(str(tmp_path / "c"))
    with pytest.raises(CheckpointMismatchError, match=r"\['w'\]: checkpoint shape \(4, 3\)"):
        Checkpoint(params={"w": jnp.ones((4, 2))}).restore(path)


def test_objects_without_arrays_are_refused():
    with pytest.raises(
        CheckpointError, match=r"leaf \['f'\] is a builtin_function_or_method, not an array"
    ):
        Checkpoint(model={"f": len})
    with pytest.raises(CheckpointError, match=r"got str, .*not an array"):
        Checkpoint(model="weights")
    with pytest.raises(CheckpointError, match=r"got int, .*not an array: pass jnp.asarray"):
        Checkpoint(step=3)
    ckpt = Checkpoint(params={"w": jnp.ones(2)}, it=iter(phalanx.data.Dataset.range(3)))
    with pytest.raises(CheckpointError, match="holds a state; got a tree"):
        ckpt.it = {"w": jnp.ones(2)}
