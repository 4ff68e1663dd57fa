"""Model API details: building, summary, shape mistakes before compiling, weights I/O."""

import flax.nnx as nnx
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import LayerShapeError


def _mlp():
    return phalanx.Sequential(
        [layers.Input(shape=(4,)), layers.Dense(3, activation="relu"), layers.Dense(2)]
    )


def test_sequential_with_input_is_built_at_once_and_summarized():
    model = _mlp()
    assert model.built
    assert model.count_params() == 4 * 3 + 3 + 3 * 2 + 2
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "dense (Dense)" in text and "dense_1 (Dense)" in text and "Total params: 23" in text


def test_wrong_input_shape_is_named_before_compiling():
    model = _mlp()
    model.compile(optimizer="adam", loss="mse")
    with pytest.raises(LayerShapeError, match=r"'dense' \(Dense\).*\(None, 4\), received \(4, 5\)"):
        model.fit(np.ones((8, 5), np.float32), np.ones((8, 2)), batch_size=4, verbose=0)


def test_wrong_target_shape_for_the_loss():
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"expects integer class indices.*\(4, 5\)"):
        model.fit(np.ones((8, 4), np.float32), np.ones((8, 5)), batch_size=4, verbose=0)


def test_unknown_names_list_the_known_ones():
    model = _mlp()
    with pytest.raises(ValueError, match="adam"):
        model.compile(optimizer="adamm", loss="mse")
    with pytest.raises(ValueError, match="mean_squared_error|mse"):
        model.compile(optimizer="adam", loss="mean_sqared_error")
    with pytest.raises(TypeError, match=r"metrics=\['accuracy'\]"):
        model.compile(optimizer="adam", loss="mse", metrics="accuracy")


def test_model_wraps_a_users_own_nnx_module():
    class TwoLayer(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(4, 8, rngs=rngs)
            self.b = nnx.Linear(8, 1, rngs=rngs)

        def __call__(self, x):
            return self.b(nnx.relu(self.a(x)))

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = phalanx.Model(TwoLayer(nnx.Rngs(0)))
    model.compile(optimizer=phalanx.optimizers.Adam(learning_rate=0.01), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=20, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    # The trained weights are in the module object too.
    np.testing.assert_allclose(model.module(x), model.predict(x, verbose=0), atol=1e-5)
    with pytest.raises(TypeError, match="flax.nnx.Module"):
        phalanx.Model(object())


def test_learning_rate_is_live_in_the_optimizer_state():
    model = _mlp()
    model.compile(optimizer=phalanx.optimizers.SGD(learning_rate=0.1), loss="mse")
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 2), np.float32)
    model.fit(x, y, batch_size=8, verbose=0)
    assert model.optimizer.learning_rate == pytest.approx(0.1)
    model.optimizer.learning_rate = 0.0
    before = model.get_weights()
    model.fit(x, y, batch_size=8, verbose=0)
    for a, b in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_weights_round_trip_and_mismatch(tmp_path):
    model = _mlp()
    path = tmp_path / "w.npz"
    model.save_weights(path)
    other = _mlp()
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    bigger = phalanx.Sequential([layers.Input(shape=(4,)), layers.Dense(5), layers.Dense(2)])
    with pytest.raises(ValueError, match="has shape"):
        bigger.load_weights(path)
    with pytest.raises(ValueError, match="expected a list of 4 arrays"):
        model.set_weights([np.zeros(1)])
    with pytest.raises(FileNotFoundError, match="No weights file"):
        model.load_weights(tmp_path / "missing.npz")


def test_keras_weight_order_for_batch_norm():
    model = phalanx.Sequential(
        [layers.Input(shape=(4,)), layers.Dense(3), layers.BatchNormalization(), layers.Dense(2)]
    )
    shapes = [w.shape for w in model.get_weights()]
    # kernel, bias; gamma, beta, moving_mean, moving_variance; kernel, bias
    assert shapes == [(4, 3), (3,), (3,), (3,), (3,), (3,), (3, 2), (2,)]
    gamma, beta, mean, var = model.get_weights()[2:6]
    np.testing.assert_array_equal(gamma, 1)
    np.testing.assert_array_equal(beta, 0)
    np.testing.assert_array_equal(mean, 0)
    np.testing.assert_array_equal(var, 1)
