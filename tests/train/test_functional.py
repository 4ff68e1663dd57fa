"""Functional models: Input, layers on symbolic tensors, Model(inputs, outputs), merge layers."""

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import LayerShapeError, ModelStructureError


def _data(n=64):
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(n, 4)).astype(np.float32), "b": rng.normal(size=(n, 3))}
    x["b"] = x["b"].astype(np.float32)
    y = {"cls": rng.integers(0, 2, n), "reg": rng.normal(size=(n, 1)).astype(np.float32)}
    return x, y


def _two_in_two_out(dropout=0.0):
    a = phalanx.Input(shape=(4,), name="a")
    b = phalanx.Input(shape=(3,), name="b")
    shared = layers.Dense(6, activation="relu", name="shared")
    ha = shared(layers.Dense(3)(a))
    hb = shared(b)  # the same layer (one set of weights) on another input
    added = layers.Add()([ha, hb])
    joined = layers.Dropout(dropout)(layers.Concatenate()([ha, added]))
    cls = layers.Dense(2, activation="softmax", name="cls")(joined)
    reg = layers.Dense(1, name="reg")(layers.Multiply()([ha, hb]))
    return phalanx.Model(inputs={"a": a, "b": b}, outputs={"cls": cls, "reg": reg})


def _compile(model):
    model.compile(
        optimizer="adam",
        loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
        metrics={"cls": ["accuracy"]},
    )
    return model


def test_the_keras_functional_example():
    inputs = phalanx.Input(shape=(784,))
    x = layers.Dense(64, activation="relu")(inputs)
    x = layers.Dense(64, activation="relu")(x)
    outputs = layers.Dense(10)(x)
    model = phalanx.Model(inputs=inputs, outputs=outputs, name="mnist_model")
    assert inputs.shape == (None, 784) and outputs.shape == (None, 10)
    assert [layer.name for layer in model.layers] == ["input_layer", "dense", "dense_1", "dense_2"]
    assert model.count_params() == 784 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 784), np.float32), rng.integers(0, 10, 32)
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    assert model.predict(x, verbose=0).shape == (32, 10)


def test_dict_inputs_and_outputs_shared_layers_and_merge_layers_train():
    x, y = _data()
    model = _compile(_two_in_two_out())
    shared = model.get_layer("shared")
    assert shared.get_weights()[0].shape == (3, 6)  # built once, by its first call
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    # Keras's names, in Keras 3's order (sorted; TF 2.21 prints the same)
    assert list(history.history) == ["cls_accuracy", "cls_loss", "loss", "reg_loss"]
    h = history.history
    np.testing.assert_allclose(h["loss"], np.add(h["cls_loss"], h["reg_loss"]), rtol=1e-5)
    assert history.history["loss"][-1] < history.history["loss"][0]
    out = model.predict(x, verbose=0)
    assert set(out) == {"cls", "reg"} and out["cls"].shape == (64, 2)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "cls_loss", "reg_loss", "cls_accuracy"}


def test_list_inputs_and_outputs():
    a, b = phalanx.Input(shape=(2,)), phalanx.Input(shape=(2,))
    h = layers.Concatenate()([a, b])
    out1, out2 = layers.Dense(1)(h), layers.Dense(3, activation="softmax")(h)
    model = phalanx.Model([a, b], [out1, out2])
    rng = np.random.default_rng(1)
    xa, xb = rng.normal(size=(16, 2)), rng.normal(size=(16, 2))
    y1, y2 = rng.normal(size=(16, 1)), rng.integers(0, 3, 16)
    model.compile(
        optimizer="sgd", loss=["mse", "sparse_categorical_crossentropy"], metrics=[[], ["accuracy"]]
    )
    history = model.fit([xa, xb], [y1, y2], batch_size=8, verbose=0)
    # Keras names list outputs after the layers that make them.
    assert list(history.history) == ["dense_1_accuracy", "dense_1_loss", "dense_loss", "loss"]
    p1, p2 = model.predict([xa, xb], verbose=0)
    assert p1.shape == (16, 1) and p2.shape == (16, 3)
    # A list of inputs also takes a dict keyed by the Input names, as Keras.
    named = model.predict({"input_layer": xa, "input_layer_1": xb}, verbose=0)
    np.testing.assert_allclose(named[0], p1, rtol=1e-6)


def test_summary_shows_the_connections():
    lines = []
    _two_in_two_out().summary(print_fn=lines.append)
    text = lines[0]
    assert "Connected to" in text
    row = next(line for line in text.splitlines() if line.startswith("│ add (Add)"))
    assert "shared[0][0]" in row and "shared[1][0]" in row
    assert "b (InputLayer)" in text


def _weights_of(model):
    return [np.asarray(w) for w in model.get_weights()]


def _fit_under(strategy, w0, x, y, **compile_kwargs):
    with strategy.scope():
        model = _two_in_two_out(dropout=0.0)
        model.set_weights(w0)
        _compile(model)
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return model, history.history


def test_mirrored_8_replicas_equal_one_device():
    x, y = _data()
    w0 = _two_in_two_out().get_weights()
    one, h1 = _fit_under(phalanx.OneDeviceStrategy("/cpu:0"), w0, x, y)
    eight, h8 = _fit_under(phalanx.MirroredStrategy(), w0, x, y)
    assert eight.distribute_strategy.num_replicas_in_sync == 8
    for a, b in zip(_weights_of(one), _weights_of(eight), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(h1["loss"], h8["loss"], rtol=1e-5)
    p1, p8 = one.predict(x, verbose=0), eight.predict(x, verbose=0)
    np.testing.assert_allclose(p1["cls"], p8["cls"], atol=1e-5)


def test_custom_loop_with_strategy_run_equals_one_device():
    x, y = _data(32)
    w0 = _two_in_two_out().get_weights()
    results = []
    for strategy in (phalanx.OneDeviceStrategy("/cpu:0"), phalanx.MirroredStrategy()):
        model = _two_in_two_out()
        model.set_weights(w0)
        graphdef, params, rest = nnx.split(model.module, nnx.Param, ...)
        tx = optax.sgd(0.1)
        with strategy.scope():
            params, rest = strategy.replicate(params), strategy.replicate(rest)
            opt_state = strategy.replicate(tx.init(params))

        def step(params, opt_state, rest, xb, yb, graphdef=graphdef, tx=tx):
            def loss_fn(p):
                out = nnx.merge(graphdef, p, rest)(xb, training=True)
                per_example = optax.softmax_cross_entropy_with_integer_labels(
                    jnp.log(out["cls"]), yb
                )
                return phalanx.compute_average_loss(per_example, global_batch_size=32)

            grads = jax.grad(loss_fn)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        xb, yb = strategy.shard_batch((x, y["cls"]))
        for _ in range(3):
            params, opt_state = strategy.run(step, args=(params, opt_state, rest, xb, yb))
        results.append(jax.tree.leaves(jax.device_get(params)))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_dropout_in_a_functional_model_is_active_in_training_only():
    x, y = _data()
    model = _compile(_two_in_two_out(dropout=0.5))
    model.fit(x, y, batch_size=16, verbose=0)  # fit gives the dropout its keys
    a = model.predict(x, verbose=0)["cls"]
    np.testing.assert_allclose(a, model.predict(x, verbose=0)["cls"])  # inference: no dropout
    net = model.module
    one = net(x, training=True, rngs=jax.random.key(1))["cls"]
    two = net(x, training=True, rngs=jax.random.key(2))["cls"]
    assert not np.allclose(one, two) and not np.allclose(one, a)
    # model(x, training=True), as Keras: dropout on, a fresh key each call.
    three, four = model(x, training=True)["cls"], model(x, training=True)["cls"]
    assert not np.allclose(three, four) and not np.allclose(three, a)


def test_errors_say_what_to_do():
    a = phalanx.Input(shape=(4,))
    stray = phalanx.Input(shape=(4,))
    out = layers.Add()([layers.Dense(4)(a), stray])
    with pytest.raises(ModelStructureError, match="Graph disconnected"):
        phalanx.Model(a, out)
    with pytest.raises(ModelStructureError, match="needs both inputs and outputs"):
        phalanx.Model(inputs=a)
    with pytest.raises(ModelStructureError, match="must come from phalanx.Input"):
        phalanx.Model(layers.Dense(2)(a), out)
    with pytest.raises(LayerShapeError, match="Concatenate.*agree except on axis"):
        layers.Concatenate(axis=-1)([phalanx.Input(shape=(2, 3)), phalanx.Input(shape=(4, 3))])
    with pytest.raises(LayerShapeError, match="takes a list of inputs"):
        layers.Add()(a)
    with pytest.raises(TypeError, match="Operators on symbolic tensors"):
        a + a
    model = _two_in_two_out()
    with pytest.raises(ModelStructureError, match=r"dict of inputs with keys \['a', 'b'\]"):
        model.predict(np.zeros((4, 4)), verbose=0)
    with pytest.raises(LayerShapeError, match="input 'a' expects shape"):
        model.predict({"a": np.zeros((4, 5)), "b": np.zeros((4, 3))}, verbose=0)


def test_input_dtype_and_embedding():
    tokens = phalanx.Input(shape=(5,), dtype="int32", name="tokens")
    h = layers.Embedding(20, 4)(tokens)
    out = layers.Dense(1)(layers.Flatten()(h))
    model = phalanx.Model(tokens, out)
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).integers(0, 20, (16, 5))
    model.fit(x, np.zeros((16, 1)), batch_size=8, verbose=0)
    assert model.predict(x, verbose=0).shape == (16, 1)


def test_sequential_still_takes_input():
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2)])
    assert model.built and model.count_params() == 8


def test_loss_weights_weigh_each_outputs_loss():
    x, y = _data(32)
    w0 = _two_in_two_out().get_weights()
    totals = []
    for weights in (None, {"cls": 1.0, "reg": 0.0}):
        model = _two_in_two_out()
        model.set_weights(w0)
        model.compile(
            optimizer="sgd",
            loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"},
            loss_weights=weights,
        )
        totals.append(model.evaluate(x, y, verbose=0, return_dict=True))
    only_cls = _two_in_two_out()
    only_cls.set_weights(w0)
    only_cls.compile(optimizer="sgd", loss={"cls": "sparse_categorical_crossentropy", "reg": None})
    only = only_cls.evaluate(x, y, verbose=0, return_dict=True)
    np.testing.assert_allclose(totals[1]["loss"], only["loss"], rtol=1e-6)
    assert totals[0]["loss"] > totals[1]["loss"]
    # Each output's own loss is logged before loss_weights, as Keras.
    np.testing.assert_allclose(totals[1]["reg_loss"], totals[0]["reg_loss"], rtol=1e-6)
    with pytest.raises(ValueError, match="loss_weights for a model with one loss must be a number"):
        only_cls.compile(optimizer="sgd", loss="mse", loss_weights=[1.0, 2.0])
