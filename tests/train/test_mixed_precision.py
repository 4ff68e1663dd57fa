"""Mixed precision: Keras's policies, float32 master weights, dynamic loss scaling."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx
from phalanx import layers
from phalanx.mixed_precision import LossScaleOptimizer, Policy


@pytest.fixture(autouse=True)
def _float32_after():
    yield
    phalanx.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="module")
def digits():
    return phalanx.datasets.digits.load_data()


def _digits_model(strategy=None, optimizer="adam"):
    strategy = strategy or phalanx.OneDeviceStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(64,)),
                layers.Dense(128, activation="relu"),
                layers.Dense(10, activation="softmax"),
            ]
        )
        model.compile(
            optimizer=optimizer,
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=4,
        )
    return model


def _train(policy, digits, **kwargs):
    phalanx.mixed_precision.set_global_policy(policy)
    (x, y), (xt, yt) = digits
    model = _digits_model(**kwargs)
    history = model.fit(x, y, batch_size=64, epochs=8, verbose=0)
    accuracy = model.evaluate(xt, yt, batch_size=64, verbose=0, return_dict=True)["accuracy"]
    return model, history.history, accuracy


def test_mixed_bfloat16_matches_float32_accuracy_on_digits(digits):
    f32, _, acc32 = _train("float32", digits)
    bf16, hist, acc16 = _train("mixed_bfloat16", digits)
    assert acc32 > 0.9
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
    # Master weights float32; the computation was not float32 (results differ slightly).
    assert all(w.dtype == np.float32 for w in bf16.get_weights())
    assert all(np.isfinite(v) and isinstance(v, float) for v in hist["loss"])
    differ = [
        not np.array_equal(a, b) for a, b in zip(f32.get_weights(), bf16.get_weights(), strict=True)
    ]
    assert any(differ)
    (_, _), (xt, _) = digits
    out = bf16.predict(xt[:64], verbose=0)
    assert out.dtype == np.float32


def test_mixed_bfloat16_computes_in_bfloat16():
    """The forward pass sees bfloat16: a sum that float32 keeps exactly, bfloat16 rounds."""
    phalanx.mixed_precision.set_global_policy("mixed_bfloat16")
    model = phalanx.Sequential([layers.Input(shape=(1,)), layers.Dense(1, use_bias=False)])
    model.compile(optimizer="sgd", loss="mse")
    model.set_weights([np.array([[1.0]], np.float32)])
    x = np.array([[1.0 + 2.0**-10]], np.float32)  # not a bfloat16 number (8-bit mantissa)
    assert model.predict(x, verbose=0)[0, 0] == 1.0
    phalanx.mixed_precision.set_global_policy("float32")
    again = phalanx.Sequential([layers.Input(shape=(1,)), layers.Dense(1, use_bias=False)])
    again.compile(optimizer="sgd", loss="mse")
    again.set_weights([np.array([[1.0]], np.float32)])
    assert again.predict(x, verbose=0)[0, 0] == np.float32(1.0 + 2.0**-10)


def test_mixed_float16_wraps_in_loss_scaling_and_trains(digits):
    model, hist, acc = _train("mixed_float16", digits)
    assert isinstance(model.optimizer._optimizer, LossScaleOptimizer)
    assert hist["loss"][-1] < hist["loss"][0]
    assert acc > 0.85
    assert all(w.dtype == np.float32 for w in model.get_weights())


def test_overflowing_steps_are_skipped_and_the_scale_halves(digits):
    (x, y), _ = digits
    phalanx.mixed_precision.set_global_policy("mixed_float16")
    model = _digits_model(optimizer=LossScaleOptimizer("sgd", initial_scale=2.0**30))
    model.build((64,))
    before = model.get_weights()
    model.train_on_batch(x[:64], y[:64])  # float16 gradients x 2**30 overflow: skipped
    for a, b in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    state = model._state.opt_state
    assert float(state.scale) == 2.0**29 and int(state.good_steps) == 0
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)  # the scale falls until steps apply
    scaled = model._state.opt_state
    assert float(scaled.scale) <= 2.0**24 and int(scaled.good_steps) > 0
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))


def test_loss_scale_grows_after_finite_steps():
    tx = LossScaleOptimizer(optax.sgd(0.1), initial_scale=4.0, dynamic_growth_steps=2).to_optax()
    params = {"w": jnp.ones(3)}
    state = tx.init(params)
    grads = {"w": jnp.full(3, 4.0)}  # the gradient of the scaled loss
    updates, state = tx.update(grads, state, params)
    np.testing.assert_allclose(updates["w"], -0.1)  # unscaled: 4 / 4 = 1
    assert float(state.scale) == 4.0 and int(state.good_steps) == 1
    _, state = tx.update(grads, state, params)
    assert float(state.scale) == 8.0 and int(state.good_steps) == 0


def test_sharded_parameters_with_mixed_float16_equal_replicated(digits):
    (x, y), _ = digits
    phalanx.mixed_precision.set_global_policy("mixed_float16")
    results = []
    for shard in (False, True):
        strategy = phalanx.MirroredStrategy(jax.devices()[:8], shard_parameters=shard)
        model = _digits_model(strategy)
        hist = model.fit(x[:1024], y[:1024], batch_size=64, epochs=2, verbose=0).history
        results.append((hist, model.get_weights()))
    np.testing.assert_allclose(results[0][0]["loss"], results[1][0]["loss"], rtol=1e-3)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-3)


def test_policy_names():
    assert Policy("mixed_float16").compute_dtype == "float16"
    assert Policy("float32").variable_dtype == "float32"
    assert phalanx.mixed_precision.global_policy() == Policy("float32")
    with pytest.raises(ValueError, match="Unknown dtype policy 'float16'.*mixed_float16"):
        Policy("float16")
    with pytest.raises(ValueError, match="Unknown dtype policy"):
        phalanx.mixed_precision.set_global_policy("fp8")
    with pytest.raises(ValueError, match="initial_scale must be a positive number"):
        LossScaleOptimizer("adam", initial_scale=0)


def test_per_layer_policy():
    """``dtype="mixed_bfloat16"`` on one layer: it computes in bfloat16, weights float32."""
    x = np.array([[1.0 + 2.0**-10]], np.float32)
    for dtype, expected in (("mixed_bfloat16", 1.0), (Policy("float32"), 1.0 + 2.0**-10)):
        model = phalanx.Sequential(
            [layers.Input(shape=(1,)), layers.Dense(1, use_bias=False, dtype=dtype)]
        )
        model.compile(optimizer="sgd", loss="mse")
        model.set_weights([np.array([[1.0]], np.float32)])
        assert model.get_weights()[0].dtype == np.float32
        assert model.predict(x, verbose=0)[0, 0] == np.float32(expected)
    with pytest.raises(TypeError):
        layers.Dense(1, dtype="mixed_int3")
