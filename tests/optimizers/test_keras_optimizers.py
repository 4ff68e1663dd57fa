"""Every optimizer and option against Keras 3 itself, over several steps (as Keras's
``optimizers/*_test.py`` check golden values): the same gradients applied to the same
weights give the same weights, moving averages and learning rates."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from phalanx import optimizers
from phalanx.optimizers import _options, schedules

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)
W0 = {
    "kernel": RNG.normal(size=(2, 3)).astype("float32"),
    "bias": RNG.normal(size=3).astype("float32"),
}
GRADS = [
    {
        "kernel": RNG.normal(size=(2, 3)).astype("float32"),
        "bias": RNG.normal(size=3).astype("float32"),
    }
    for _ in range(5)
]
NAMES = ("kernel", "bias")
STEPS = len(GRADS)


def keras_run(opt, steps=STEPS):
    """Keras's own ``stateless_apply`` (its JAX trainer's path), compiled once per run."""
    variables = [keras.Variable(W0[n], name=n) for n in NAMES]
    opt.build(variables)
    apply = jax.jit(opt.stateless_apply)
    values = [v.value for v in variables]
    state = [v.value for v in opt.variables]
    for g in GRADS[:steps]:
        values, state = apply(state, [jnp.asarray(g[n]) for n in NAMES], values)
    for v, value in zip(opt.variables, state, strict=True):
        v.assign(value)
    weights = {n: np.asarray(v) for n, v in zip(NAMES, values, strict=True)}
    average = None
    if opt.use_ema:
        average = {
            n: np.asarray(v)
            for n, v in zip(NAMES, opt._model_variables_moving_average, strict=True)
        }
    return weights, average


def phalanx_run(opt, steps=STEPS):
    tx = opt.to_optax()
    params = {n: jnp.asarray(W0[n]) for n in NAMES}
    state = tx.init(params)
    for g in GRADS[:steps]:
        updates, state = tx.update({n: jnp.asarray(g[n]) for n in NAMES}, state, params)
        params = optax.apply_updates(params, updates)
    average = _options.moving_average_of(state)
    if average is not None:
        average = {n: np.asarray(v) for n, v in average.items()}
    return {n: np.asarray(v) for n, v in params.items()}, average


def assert_same(ours, theirs, tol=1e-5):
    for n in NAMES:
        np.testing.assert_allclose(ours[n], theirs[n], rtol=tol, atol=tol, err_msg=n)


CASES = [
    ("SGD", {}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"learning_rate": 0.1, "amsgrad": True}),
    ("AdamW", {"learning_rate": 0.1}),
    ("RMSprop", {"learning_rate": 0.1, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"learning_rate": 0.1}),
    ("Nadam", {}),
    ("Nadam", {"learning_rate": 0.1, "beta_1": 0.8}),
    ("Adamax", {}),
    ("Adamax", {"learning_rate": 0.1, "beta_2": 0.9}),
    ("Adadelta", {}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    ("Ftrl", {}),
    (
        "Ftrl",
        {
            "learning_rate": 0.5,
            "learning_rate_power": -0.3,
            "l1_regularization_strength": 0.01,
            "l2_regularization_strength": 0.02,
            "l2_shrinkage_regularization_strength": 0.03,
            "beta": 0.1,
        },
    ),
    ("Lion", {}),
    ("Lion", {"learning_rate": 0.1, "beta_1": 0.5}),
    ("Lamb", {}),
    ("Lamb", {"learning_rate": 0.1, "weight_decay": 0.1}),
    ("Adafactor", {}),
    ("Adafactor", {"learning_rate": 0.5, "clip_threshold": 0.5, "epsilon_2": 0.1}),
    # the options every optimizer takes
    ("Adam", {"learning_rate": 0.1, "clipnorm": 0.5}),
    ("Adam", {"learning_rate": 0.1, "clipvalue": 0.2}),
    ("SGD", {"learning_rate": 0.1, "global_clipnorm": 0.5}),
    ("Adam", {"learning_rate": 0.1, "weight_decay": 0.2}),
    ("Adam", {"learning_rate": 0.1, "use_ema": True}),
    ("SGD", {"learning_rate": 0.5, "use_ema": True, "ema_momentum": 0.5}),
    ("SGD", {"learning_rate": 0.5, "use_ema": True, "ema_overwrite_frequency": 2}),
    ("Adam", {"learning_rate": 0.1, "gradient_accumulation_steps": 2}),
    ("Nadam", {"learning_rate": 0.1, "gradient_accumulation_steps": 2, "clipnorm": 0.5}),
    (
        "SGD",
        {"learning_rate": 0.5, "momentum": 0.5, "gradient_accumulation_steps": 2, "use_ema": True},
    ),
]


@pytest.mark.parametrize(("cls", "kwargs"), CASES, ids=lambda c: str(c)[:60])
def test_steps_equal_keras(cls, kwargs):
    ours, our_average = phalanx_run(getattr(optimizers, cls)(**kwargs))
    theirs, their_average = keras_run(getattr(keras.optimizers, cls)(**kwargs))
    assert_same(ours, theirs)
    if their_average is not None:
        assert_same(our_average, their_average)


@pytest.mark.parametrize("var_names", [["bias"], ["ker", "nothing"]])
def test_exclude_from_weight_decay_equals_keras(var_names):
    ours = optimizers.AdamW(learning_rate=0.1, weight_decay=0.3)
    theirs = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.3)
    ours.exclude_from_weight_decay(var_names=var_names)
    theirs.exclude_from_weight_decay(var_names=var_names)
    assert_same(phalanx_run(ours)[0], keras_run(theirs)[0])


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.ExponentialDecay(0.5, decay_steps=2, decay_rate=0.5),
        lambda m: m.PiecewiseConstantDecay([1, 3], [0.5, 0.1, 0.01]),
    ],
)
@pytest.mark.parametrize("accumulate", [None, 2])
def test_schedules_see_every_step_as_keras(make, accumulate):
    # With accumulation, Keras's schedules read the steps (not the updates).
    ours = optimizers.SGD(make(schedules), gradient_accumulation_steps=accumulate)
    theirs = keras.optimizers.SGD(
        make(keras.optimizers.schedules), gradient_accumulation_steps=accumulate
    )
    assert_same(phalanx_run(ours)[0], keras_run(theirs)[0])


def test_callable_learning_rate_is_called_without_arguments():
    calls = []

    def rate():
        calls.append(1)
        return 0.25

    ours = phalanx_run(optimizers.SGD(learning_rate=rate))[0]
    theirs = keras_run(keras.optimizers.SGD(learning_rate=lambda: 0.25))[0]
    assert_same(ours, theirs)
    assert calls and optimizers.SGD(learning_rate=rate).learning_rate_at(7) == 0.25


def test_names_are_unique_per_class_as_keras():
    names = [optimizers.Adam().name, optimizers.Adam().name]
    assert names[1] == names[0] + "_1" or names[1].startswith("adam_")
    assert optimizers.Adam(name="mine").name == "mine"
    keras_names = {c: getattr(keras.optimizers, c)().name.rsplit("_", 1)[0] for c in ("AdamW",)}
    assert optimizers.AdamW().name.startswith(keras_names["AdamW"])  # "adam_w", as Keras
    assert optimizers.RMSprop().name.startswith("rm_sprop")


@pytest.mark.parametrize(
    "cls",
    [
        "SGD",
        "Adam",
        "AdamW",
        "RMSprop",
        "Adagrad",
        "Nadam",
        "Adamax",
        "Adadelta",
        "Ftrl",
        "Lion",
        "Lamb",
        "Adafactor",
    ],
)
def test_config_keys_and_defaults_equal_keras(cls):
    ours = getattr(optimizers, cls)().get_config()
    theirs = getattr(keras.optimizers, cls)().get_config()
    ours.pop("name"), theirs.pop("name")
    assert ours == pytest.approx(theirs)
    again = getattr(optimizers, cls).from_config(ours | {"use_ema": True, "clipnorm": 2.0})
    assert again.use_ema and again.clipnorm == 2.0


def test_from_config_rebuilds_a_schedule_and_get_takes_config_dicts():
    config = keras.optimizers.serialize(
        keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5))
    )
    opt = optimizers.get(config)
    assert isinstance(opt, optimizers.Adam)
    assert isinstance(opt.learning_rate, schedules.ExponentialDecay)
    assert float(opt.learning_rate(10)) == pytest.approx(0.05)
    assert (
        optimizers.get({"class_name": "nadam", "config": {"learning_rate": 0.5}}).learning_rate
        == 0.5
    )
    assert optimizers.get(None) is None and keras.optimizers.get(None) is None
    assert isinstance(optimizers.get("lion"), optimizers.Lion)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda m: m.Adam(gradient_accumulation_steps=1), "must be an integer >= 2"),
        (lambda m: m.Adam(use_ema=True, ema_momentum=1.5), r"must be in the range \[0, 1\]"),
        (lambda m: m.Adam(use_ema=True, ema_overwrite_frequency=-1), "integer >= 1 or None"),
        (lambda m: m.Adam(clipnorm=1.0, clipvalue=1.0), "Only one of"),
        (lambda m: m.Ftrl(learning_rate_power=0.5), "needs to be negative or zero"),
        (lambda m: m.Ftrl(initial_accumulator_value=-1.0), "needs to be positive or zero"),
        (lambda m: m.Lion(beta_1=0.0), "must be in the"),
        (lambda m: m.Adam(foo=1), "not recognized"),
    ],
)
def test_refused_arguments_raise_as_keras(make, match):
    with pytest.raises(ValueError, match=match):
        make(keras.optimizers)
    with pytest.raises(ValueError, match=match):
        make(optimizers)


def test_loss_scale_factor_and_var_list_are_refused_by_name():
    with pytest.raises(ValueError, match="loss_scale_factor"):
        optimizers.Adam(loss_scale_factor=128.0)
    with pytest.raises(ValueError, match="var_names"):
        optimizers.AdamW().exclude_from_weight_decay(var_list=[object()])
