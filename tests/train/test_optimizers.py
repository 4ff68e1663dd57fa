"""Optimizers: Keras defaults and update math, clipping, schedules, learning rate in the state."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from phalanx import optimizers
from phalanx.errors import LearningRateError
from phalanx.optimizers import schedules

GRADS = [np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.3, -0.2]), np.array([-1.0, 0.0, 1e-4])]
W0 = np.array([1.0, -2.0, 0.5])


def keras_reference(name, steps, lr, **h):
    """Keras 3's update_step formulas, transcribed in numpy (float64)."""
    w = W0.copy()
    m = np.zeros(3)
    v = np.full(3, h.get("initial_accumulator_value", 0.0))
    for t, g in enumerate(GRADS[:steps], start=1):
        if h.get("weight_decay"):
            w = w - w * h["weight_decay"] * lr
        if name in ("adam", "adamw"):
            b1, b2, eps = 0.9, 0.999, 1e-7
            alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
            m += (g - m) * (1 - b1)
            v += (g * g - v) * (1 - b2)
            w = w - m * alpha / (np.sqrt(v) + eps)
        elif name == "sgd":
            mom = h.get("momentum", 0.0)
            if mom:
                m = mom * m - lr * g
                w = w + (mom * m - lr * g if h.get("nesterov") else m)
            else:
                w = w - lr * g
        elif name == "rmsprop":
            v = 0.9 * v + 0.1 * g * g
            inc = lr * g / np.sqrt(v + 1e-7)
            if h.get("momentum"):
                m = h["momentum"] * m + inc
                w = w - m
            else:
                w = w - inc
        elif name == "adagrad":
            v = v + g * g
            w = w - lr * g / np.sqrt(v + 1e-7)
    return w


def run(tx, steps):
    params = jnp.asarray(W0, jnp.float32)
    state = tx.init(params)
    for g in GRADS[:steps]:
        updates, state = tx.update(jnp.asarray(g, jnp.float32), state, params)
        params = optax.apply_updates(params, updates)
    return np.asarray(params), state


@pytest.mark.parametrize(
    ("identifier", "name", "lr", "hyper"),
    [
        ("adam", "adam", 0.001, {}),
        ("adamw", "adamw", 0.001, {"weight_decay": 0.004}),
        ("sgd", "sgd", 0.01, {}),
        ("rmsprop", "rmsprop", 0.001, {}),
        ("adagrad", "adagrad", 0.001, {"initial_accumulator_value": 0.1}),
        (optimizers.Adam(learning_rate=0.3), "adam", 0.3, {}),
        (optimizers.SGD(0.1, momentum=0.9), "sgd", 0.1, {"momentum": 0.9}),
        (optimizers.SGD(0.1, 0.9, nesterov=True), "sgd", 0.1, {"momentum": 0.9, "nesterov": True}),
        (optimizers.RMSprop(0.01, momentum=0.5), "rmsprop", 0.01, {"momentum": 0.5}),
        (optimizers.SGD(0.1, weight_decay=0.1), "sgd", 0.1, {"weight_decay": 0.1}),
    ],
)
def test_updates_match_keras_math(identifier, name, lr, hyper):
    tx = optimizers.get(identifier).to_optax()
    params, _ = run(tx, 3)
    np.testing.assert_allclose(params, keras_reference(name, 3, lr, **hyper), rtol=1e-5, atol=2e-5)


def test_keras_default_hyperparameters():
    adam = optimizers.get("Adam")
    assert (adam.learning_rate, adam.beta_1, adam.beta_2, adam.epsilon) == (0.001, 0.9, 0.999, 1e-7)
    sgd = optimizers.get("sgd")
    assert (sgd.learning_rate, sgd.momentum, sgd.nesterov) == (0.01, 0.0, False)
    rms = optimizers.get("rmsprop")
    assert (rms.learning_rate, rms.rho, rms.momentum, rms.epsilon) == (0.001, 0.9, 0.0, 1e-7)
    adamw = optimizers.get("adamw")
    assert (adamw.learning_rate, adamw.weight_decay, adamw.epsilon) == (0.001, 0.004, 1e-7)
    ada = optimizers.get("adagrad")
    assert (ada.learning_rate, ada.initial_accumulator_value, ada.epsilon) == (0.001, 0.1, 1e-7)


def test_keras_adam_epsilon_differs_from_optax_in_first_steps():
    # With tiny gradients the epsilon placement matters: Keras's matches the reference.
    params = jnp.zeros(1)
    g = jnp.full(1, 1e-6)
    ours = optimizers.Adam(1.0).to_optax()
    upd, _ = ours.update(g, ours.init(params), params)
    alpha = np.sqrt(1 - 0.999) / (1 - 0.9)
    expected = -alpha * 0.1e-6 / (np.sqrt(0.001 * 1e-12) + 1e-7)
    assert float(upd[0]) == pytest.approx(expected, rel=1e-4)
    plain = optax.adam(1.0, eps=1e-7)
    upd_optax, _ = plain.update(g, plain.init(params), params)
    assert abs(float(upd_optax[0]) - expected) > 1e-3


def test_clipping():
    g = {"a": jnp.array([3.0, 4.0]), "b": jnp.array([0.3, 0.4])}
    params = jax.tree.map(jnp.zeros_like, g)
    tx = optimizers.SGD(1.0, clipnorm=1.0).to_optax()
    upd, _ = tx.update(g, tx.init(params), params)
    np.testing.assert_allclose(upd["a"], [-0.6, -0.8], rtol=1e-6)  # clipped to norm 1
    np.testing.assert_allclose(upd["b"], [-0.3, -0.4], rtol=1e-6)  # already below
    tx = optimizers.SGD(1.0, global_clipnorm=1.0).to_optax()
    upd, _ = tx.update(g, tx.init(params), params)
    total = np.sqrt(25 + 0.25)
    np.testing.assert_allclose(upd["b"], [-0.3 / total, -0.4 / total], rtol=1e-5)
    tx = optimizers.SGD(1.0, clipvalue=0.5).to_optax()
    upd, _ = tx.update(g, tx.init(params), params)
    np.testing.assert_allclose(upd["a"], [-0.5, -0.5])
    with pytest.raises(ValueError, match="Only one of clipnorm, clipvalue and global_clipnorm"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)


def test_schedules_match_keras_formulas():
    e = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.96)
    assert float(e(25)) == pytest.approx(0.1 * 0.96**2.5, rel=1e-6)
    s = schedules.ExponentialDecay(0.1, 10, 0.96, staircase=True)
    assert float(s(25)) == pytest.approx(0.1 * 0.96**2, rel=1e-6)
    p = schedules.PiecewiseConstantDecay([100000, 110000], [1.0, 0.5, 0.1])
    assert [float(p(t)) for t in (0, 100000, 100001, 110000, 110001)] == pytest.approx(
        [1.0, 1.0, 0.5, 0.5, 0.1]
    )
    c = schedules.CosineDecay(0.1, 1000, alpha=0.1)
    assert float(c(500)) == pytest.approx(0.1 * (0.9 * 0.5 + 0.1), rel=1e-6)
    assert float(c(5000)) == pytest.approx(0.01, rel=1e-5)
    w = schedules.CosineDecay(0.0, 100, warmup_target=0.1, warmup_steps=10)
    assert float(w(5)) == pytest.approx(0.05) and float(w(10)) == pytest.approx(0.1)
    assert float(w(60)) == pytest.approx(0.05, rel=1e-5)
    assert float(schedules.InverseTimeDecay(0.1, 1, 0.5)(2)) == pytest.approx(0.05)
    assert float(jax.jit(e)(jnp.int32(25))) == pytest.approx(float(e(25)))


def test_learning_rate_read_and_set_without_recompiling():
    tx = optimizers.Adam(learning_rate=0.01).to_optax()
    params = jnp.ones(3)
    state = tx.init(params)
    assert optimizers.get_learning_rate(state) == pytest.approx(0.01)
    traces = []

    @jax.jit
    def step(params, state):
        traces.append(1)
        updates, state = tx.update(jnp.ones(3), state, params)
        return optax.apply_updates(params, updates), state

    p1, state = step(params, state)
    state = optimizers.set_learning_rate(state, 0.0)
    assert optimizers.get_learning_rate(state) == 0.0
    p2, state = step(p1, state)
    np.testing.assert_array_equal(p1, p2)  # lr 0: no change
    state = optimizers.set_learning_rate(state, 0.5)
    p3, _ = step(p2, state)
    assert not np.allclose(p2, p3)
    assert len(traces) == 1


def test_set_learning_rate_keeps_replicated_sharding():
    mesh = Mesh(np.array(jax.devices()[:2]), ("replica",))
    replicated = NamedSharding(mesh, P())
    tx = optimizers.SGD(0.1).to_optax()
    state = jax.device_put(tx.init(jnp.ones(4)), replicated)
    new = optimizers.set_learning_rate(state, 0.2)
    lr = new.hyperparams["learning_rate"]
    assert lr.sharding == replicated and lr.dtype == jnp.float32 and lr.shape == ()


def test_schedule_is_read_only_and_read_per_step():
    tx = optimizers.SGD(learning_rate=schedules.PiecewiseConstantDecay([1], [1.0, 0.1])).to_optax()
    params = jnp.zeros(1)
    state = tx.init(params)
    assert optimizers.learning_rate_is_schedule(state)
    assert optimizers.get_learning_rate(state) == 1.0
    upd, state = tx.update(jnp.ones(1), state, params)
    upd, state = tx.update(jnp.ones(1), state, params)
    upd, state = tx.update(jnp.ones(1), state, params)
    assert float(upd[0]) == pytest.approx(-0.1)
    assert optimizers.get_learning_rate(state) == pytest.approx(0.1)
    with pytest.raises(LearningRateError, match="comes from a schedule, which is read-only"):
        optimizers.set_learning_rate(state, 0.5)
    optax_schedule = optimizers.Adam(optax.linear_schedule(1.0, 0.0, 10)).to_optax()
    assert optimizers.learning_rate_is_schedule(optax_schedule.init(params))


def test_any_optax_transformation_accepted():
    plain = optax.sgd(0.1)
    assert optimizers.get(plain) is plain
    assert optimizers.get_learning_rate(plain.init(jnp.zeros(2))) is None
    with pytest.raises(LearningRateError, match="holds no learning rate"):
        optimizers.set_learning_rate(plain.init(jnp.zeros(2)), 0.1)
    injected = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    state = optimizers.set_learning_rate(injected.init(jnp.zeros(2)), 0.3)
    assert optimizers.get_learning_rate(state) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="Unknown optimizer 'adamm'"):
        optimizers.get("adamm")
    with pytest.raises(TypeError, match="as an optimizer"):
        optimizers.get(3)
