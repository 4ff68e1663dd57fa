"""Subclassed models: class MyModel(phalanx.Model) with layers in __init__ and a call()."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import phalanx
from phalanx import layers


class MyModel(phalanx.Model):
    def __init__(self, classes=3, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(16, activation="relu")
        self.blocks = [layers.Dense(16, activation="relu"), layers.Dense(16, activation="relu")]
        self.dropout = layers.Dropout(dropout)
        self.classifier = layers.Dense(classes, activation="softmax")
        self.scale = 0.5  # a plain attribute call() reads

    def call(self, inputs, training=False):
        x = self.hidden(inputs)
        for block in self.blocks:
            x = self._residual(block, x)
        return self.classifier(self.dropout(x, training=training))

    def _residual(self, block, x):  # a helper method, as Keras users write
        return x + self.scale * block(x)


class TwoInputs(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.a = layers.Dense(4)
        self.b = layers.Dense(4)
        self.out = layers.Dense(1)

    def call(self, inputs):  # no training argument
        return self.out(layers.Concatenate()([self.a(inputs["a"]), self.b(inputs["b"])]))


def _data(n=64):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 5)).astype(np.float32), rng.integers(0, 3, n)


def test_built_on_first_call_with_keras_names():
    model = MyModel()
    assert not model.built
    out = model(np.zeros((2, 5), np.float32))
    assert out.shape == (2, 3) and model.built
    assert [layer.name for layer in model.layers] == [
        "dense",
        "dense_1",
        "dense_2",
        "dropout",
        "dense_3",
    ]
    assert model.hidden is model.get_layer("dense")  # the user's objects, not copies
    # One seeded stream builds them: two layers of one shape start differently.
    k1, k2 = (layer.get_weights()[0] for layer in model.blocks)
    assert not np.allclose(k1, k2)
    lines = []
    model.summary(print_fn=lines.append)
    assert "dense_3 (Dense)" in lines[0] and "Total params: 691" in lines[0]


STRATEGIES = {
    "one_device": lambda: phalanx.OneDeviceStrategy("/cpu:0"),
    "mirrored_2": lambda: phalanx.MirroredStrategy(devices=jax.devices()[:2]),
    "mirrored_8": lambda: phalanx.MirroredStrategy(),
    "multi_worker": lambda: phalanx.MultiWorkerMirroredStrategy(),
    "tpu_simulated": lambda: phalanx.TPUStrategy(experimental_simulate_on_cpu=True),
}


def _fit(strategy, w0, x, y, dropout=0.0):
    with strategy.scope():
        model = MyModel(dropout=dropout)
        model.build((5,))
        model.set_weights(w0)
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
        )
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    return model, history.history


@pytest.fixture(scope="module")
def reference():
    x, y = _data()
    w0 = MyModel()
    w0.build((5,))
    w0 = w0.get_weights()
    model, history = _fit(phalanx.OneDeviceStrategy("/cpu:0"), w0, x, y)
    return x, y, w0, model.get_weights(), history


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_fit_under_every_strategy_equals_one_device(name, reference):
    x, y, w0, weights, history = reference
    model, got = _fit(STRATEGIES[name](), w0, x, y)
    tol = 2e-2 if name == "tpu_simulated" else 1e-5  # TPUStrategy computes in bfloat16
    np.testing.assert_allclose(got["loss"], history["loss"], rtol=tol, atol=tol)
    if name != "tpu_simulated":
        for a, b in zip(model.get_weights(), weights, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)
    assert model.evaluate(x, y, verbose=0, return_dict=True)["accuracy"] >= 0.0
    assert model.predict(x, verbose=0).shape == (64, 3)


def test_dropout_in_call_gets_a_key_per_step_and_replica():
    x, y = _data()
    w0 = MyModel()
    w0.build((5,))
    w0 = w0.get_weights()
    runs = [
        _fit(phalanx.MirroredStrategy(devices=jax.devices()[:2]), w0, x, y, dropout=0.5)[0]
        for _ in range(2)
    ]
    plain = _fit(phalanx.MirroredStrategy(devices=jax.devices()[:2]), w0, x, y)[0]
    # Dropout was active (training differs from no dropout) and reproducible (same keys).
    assert not np.allclose(runs[0].get_weights()[0], plain.get_weights()[0])
    for a, b in zip(runs[0].get_weights(), runs[1].get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_custom_loop_over_the_subclassed_models_module():
    import flax.nnx as nnx

    x, y = _data(32)
    strategy = phalanx.MirroredStrategy()
    model = MyModel()
    model(x[:1])
    graphdef, params, rest = nnx.split(model.module, nnx.Param, ...)
    tx = optax.adam(1e-2)
    with strategy.scope():
        params, rest = strategy.replicate(params), strategy.replicate(rest)
        opt_state = strategy.replicate(tx.init(params))

    def step(params, opt_state, rest, xb, yb):
        def loss_fn(p):
            probs = nnx.merge(graphdef, p, rest)(xb, training=False)
            per_example = -jnp.log(jnp.take_along_axis(probs, yb[:, None], axis=1))[:, 0]
            return phalanx.compute_average_loss(per_example, global_batch_size=32)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    xb, yb = strategy.shard_batch((x, y))
    losses = []
    for _ in range(5):
        params, opt_state, loss = strategy.run(step, args=(params, opt_state, rest, xb, yb))
        losses.append(float(strategy.reduce(phalanx.ReduceOp.SUM, loss, axis=None)))
    assert losses[-1] < losses[0]


def test_two_inputs_and_no_training_argument():
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(32, 2)), "b": rng.normal(size=(32, 3))}
    model = TwoInputs()
    model(x)  # built from a batch of the model's input structure
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, rng.normal(size=(32, 1)), batch_size=8, verbose=0)
    assert model.predict(x, verbose=0).shape == (32, 1)
    model2 = TwoInputs()
    model2.build({"a": (2,), "b": (3,)})
    assert model2.count_params() == 12 + 16 + 9


class TokenModel(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.embed = layers.Embedding(20, 4)
        self.a = layers.Dense(4)
        self.out = layers.Dense(1)

    def call(self, inputs):
        tokens = layers.Flatten()(self.embed(inputs["tokens"]))
        return self.out(layers.Add()([tokens[:, :4], self.a(inputs["extra"])]))


@pytest.mark.parametrize("as_dataset", [False, True])
def test_fit_builds_a_multi_input_model_from_its_first_batch(as_dataset):
    rng = np.random.default_rng(0)
    x = {"tokens": rng.integers(0, 20, (32, 3)), "extra": rng.normal(size=(32, 2))}
    y = rng.normal(size=(32, 1))
    model = TokenModel()
    model.compile(optimizer="sgd", loss="mse")
    data = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(8) if as_dataset else x
    model.fit(data, None if as_dataset else y, batch_size=None if as_dataset else 8, verbose=0)
    assert model.built and model.embed.get_weights()[0].shape == (20, 4)
    assert model.predict(x, verbose=0).shape == (32, 1)


def test_an_attribute_named_layers_is_refused_as_keras():
    class Stack(phalanx.Model):
        def __init__(self):
            super().__init__()
            self.layers = [layers.Dense(4, activation="relu"), layers.Dense(2)]

        def call(self, inputs):
            return inputs

    with pytest.raises(AttributeError, match="`Model.layers` is reserved.*self.blocks"):
        Stack()
