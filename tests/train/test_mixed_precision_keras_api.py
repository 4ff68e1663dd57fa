"""Keras 3's mixed-precision API beyond the policy: layers' ``dtype_policy``,
``compute_dtype`` and ``variable_dtype``; ``model.optimizer`` is a
``LossScaleOptimizer`` under ``mixed_float16``; a ``LossScaleOptimizer`` in a custom
loop scales, unscales, skips and grows as Keras 3's does."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx as px
from phalanx.mixed_precision import LossScaleOptimizer

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")


@pytest.fixture(autouse=True)
def _float32_after():
    yield
    px.mixed_precision.set_global_policy("float32")
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("dtype", [None, "mixed_bfloat16", "float32"])
def test_layer_dtype_policy_as_keras(policy, dtype):
    px.mixed_precision.set_global_policy(policy)
    keras.mixed_precision.set_global_policy(policy)
    ours, theirs = px.layers.Dense(2, dtype=dtype), keras.layers.Dense(2, dtype=dtype)
    assert ours.dtype_policy.name == theirs.dtype_policy.name
    assert ours.compute_dtype == theirs.compute_dtype
    assert ours.variable_dtype == theirs.variable_dtype
    assert isinstance(ours.dtype_policy, px.mixed_precision.DTypePolicy)


def test_model_optimizer_is_a_loss_scale_optimizer_under_mixed_float16():
    px.mixed_precision.set_global_policy("mixed_float16")
    keras.mixed_precision.set_global_policy("mixed_float16")
    inner = px.optimizers.SGD(0.01)
    model = px.Sequential([px.layers.Input((3,)), px.layers.Dense(2)])
    model.compile(optimizer=inner, loss="mse")
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    theirs.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    assert isinstance(theirs.optimizer, keras.optimizers.LossScaleOptimizer)
    assert isinstance(model.optimizer, LossScaleOptimizer)
    assert model.optimizer.inner_optimizer is inner
    assert model.optimizer.dynamic_scale == theirs.optimizer.initial_scale == 2.0**15
    model.fit(np.ones((8, 3)), np.ones((8, 2)), batch_size=4, verbose=0)
    assert int(model.optimizer.iterations) == int(inner.iterations) == 2
    assert model.optimizer.learning_rate == pytest.approx(0.01)
    px.mixed_precision.set_global_policy("float32")
    model.compile(optimizer="sgd", loss="mse")
    assert not isinstance(model.optimizer, LossScaleOptimizer)


# Gradients of a scaled loss: finite, finite, one overflow, then finite again.
GRADS = [np.array([0.5, -1.0], np.float32) * 2.0**k for k in (3, 4)]
GRADS = [*GRADS, np.array([np.inf, 1.0], np.float32), np.array([2.0, 0.25], np.float32)] * 2


def test_custom_loop_steps_equal_keras():
    ours = LossScaleOptimizer(px.optimizers.SGD(0.1), initial_scale=4.0, dynamic_growth_steps=2)
    params = jnp.array([1.0, -2.0])
    state = ours.init(params)
    for g in GRADS:
        updates, state = ours.update(jnp.asarray(g), state, params)
        params = optax.apply_updates(params, updates)
    theirs = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.1), initial_scale=4.0, dynamic_growth_steps=2
    )
    variable = keras.Variable(np.array([1.0, -2.0], np.float32))
    theirs.build([variable])
    apply = jax.jit(theirs.stateless_apply)
    values, opt_vars = [variable.value], [v.value for v in theirs.variables]
    for g in GRADS:
        values, opt_vars = apply(opt_vars, [jnp.asarray(g)], values)
    for v, value in zip(theirs.variables, opt_vars, strict=True):
        v.assign(value)
    np.testing.assert_allclose(params, values[0], rtol=1e-6)
    assert float(ours.dynamic_scale(state)) == float(theirs.dynamic_scale)


def test_custom_loop_differentiates_the_scaled_loss():
    opt = LossScaleOptimizer(px.optimizers.SGD(0.5), initial_scale=2.0**10)
    params = {"w": jnp.array([1.0, 2.0])}
    state = opt.init(params)

    def loss(p):
        return jnp.sum(jnp.square(p["w"].astype(jnp.float16))).astype(jnp.float32)

    grads = jax.grad(lambda p: opt.scale_loss(loss(p), state))(params)
    updates, state = opt.update(grads, state, params)
    np.testing.assert_allclose(optax.apply_updates(params, updates)["w"], [0.0, 0.0], atol=1e-3)
    with pytest.raises(TypeError, match="pass the optimizer state"):
        opt.scale_loss(1.0)
