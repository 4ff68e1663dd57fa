"""Keras's introspection: model.layers, get_layer, weights, trainable, layer get/set_weights."""

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.layers import BatchNormalization, Dense  # the module import a Keras user writes


def _data(n=64, features=5, classes=3):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, features)).astype(np.float32), rng.integers(0, classes, n)


def _model():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(5,)),
            Dense(8, activation="relu", name="hidden"),
            BatchNormalization(),
            Dense(3, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def test_from_phalanx_layers_import_dense():
    import phalanx.layers as keras_layers

    assert keras_layers.Dense is phalanx.layers.Dense is phalanx.layers.Dense
    assert "Dense" in keras_layers.__all__


def test_layers_are_named_indexable_and_found_by_name():
    model = _model()
    assert [layer.name for layer in model.layers] == ["hidden", "batch_normalization", "dense"]
    assert model.layers[0] is model.get_layer("hidden")
    assert model.get_layer(index=-1).name == "dense"
    with pytest.raises(ValueError, match=r"No such layer: 'nope'.*\['hidden', "):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="has 3 layers"):
        model.get_layer(index=7)


def test_weights_trainable_and_non_trainable_variables():
    model = _model()
    paths = [w.path for w in model.weights]
    assert paths == [
        "hidden/kernel",
        "hidden/bias",
        "batch_normalization/gamma",
        "batch_normalization/beta",
        "dense/kernel",
        "dense/bias",
        "batch_normalization/moving_mean",
        "batch_normalization/moving_variance",
    ]
    assert [w.path for w in model.trainable_variables] == paths[:6]
    assert [w.path for w in model.non_trainable_variables] == paths[6:]
    assert model.weights[0].shape == (5, 8) and model.weights[0].name == "kernel"
    assert sum(np.size(w.numpy()) for w in model.weights) == model.count_params()


def test_weights_read_the_trained_values_and_layer_set_weights_reaches_the_next_step():
    x, y = _data()
    model = _model()
    hidden = model.get_layer("hidden")
    before = hidden.get_weights()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    after = hidden.get_weights()
    assert not np.allclose(before[0], after[0])
    np.testing.assert_array_equal(model.weights[0].numpy(), after[0])
    # set_weights on a layer of a compiled, trained model: predict sees it at once.
    hidden.set_weights([np.zeros_like(after[0]), np.zeros_like(after[1])])
    np.testing.assert_array_equal(model.get_layer("hidden").get_weights()[0], 0.0)
    out = model.predict(x[:4], verbose=0)
    np.testing.assert_allclose(out, np.broadcast_to(out[0], out.shape), rtol=1e-6)
    with pytest.raises(ValueError, match="expected a list of 2 arrays"):
        hidden.set_weights([np.zeros((5, 8))])


def _opt_leaves(model):
    return [np.asarray(a) for a in jax.tree.leaves(jax.device_get(model._state.opt_state))]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_frozen_layer_gets_no_update_and_no_optimizer_state(optimizer):
    x, y = _data()
    model = _model()
    hidden = model.get_layer("hidden")
    hidden.trainable = False
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")  # as Keras
    frozen = hidden.get_weights()
    other = model.get_layer("dense").get_weights()
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    for a, b in zip(frozen, hidden.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(other[0], model.get_layer("dense").get_weights()[0])
    assert "hidden/kernel" in [w.path for w in model.non_trainable_weights]
    assert "hidden/kernel" not in [w.path for w in model.trainable_weights]
    # The optimizer holds no state for the frozen weights (the (5, 8) kernel's moments).
    assert (5, 8) not in [a.shape for a in _opt_leaves(model)]
    assert (5, 8) in [a.shape for a in _opt_leaves(_trained_unfrozen(optimizer, x, y))] or (
        optimizer == "sgd"
    )


def _trained_unfrozen(optimizer, x, y):
    model = _model()
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return model


def test_model_trainable_false_freezes_everything_and_summary_counts_it():
    x, y = _data()
    model = _model()
    model.trainable = False
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = model.get_weights()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    after = model.get_weights()
    kernels = [0, 1, 2, 3, 6, 7]  # every Param (BatchNorm's moving stats still move)
    for i in kernels:
        np.testing.assert_array_equal(before[i], after[i])
    assert model.trainable_weights == []
    lines = []
    model.summary(print_fn=lines.append)
    assert "Trainable params: 0 " in lines[0]


def test_weight_assign_writes_the_model_state():
    x, y = _data()
    model = _model()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    bias = model.get_layer("dense").weights[1]
    assert bias.path == "dense/bias"
    bias.assign(np.full(3, 7.0))
    np.testing.assert_array_equal(model.get_weights()[7], 7.0)
    with pytest.raises(ValueError, match=r"has shape \(3,\)"):
        bias.assign(np.zeros(4))
