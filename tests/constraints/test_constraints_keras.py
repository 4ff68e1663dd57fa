"""phalanx.constraints against Keras 3 (JAX): values, names, configs; and where fit applies
them: right after every optimizer update, inside the compiled step, as Keras 3's
``BaseOptimizer.apply`` (the seeds' MLP trained with MaxNorm equals Keras from the same
initial weights; 8 replicas equal one; add_weight(constraint=); an overridden train_step's
stateless_apply; frozen layers untouched; .keras files both ways)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import constraints, layers  # noqa: E402
from phalanx.errors import ConstraintError, KerasFileError  # noqa: E402

RNG = np.random.default_rng(3537)
W = (RNG.random((6, 5, 4)) * 4.0 - 2.0).astype(np.float32)
X = RNG.normal(size=(32, 784)).astype(np.float32)
Y = RNG.integers(0, 10, 32)

CASES = [
    ("MaxNorm", {}),
    ("MaxNorm", {"max_value": 0.7, "axis": 1}),
    ("MaxNorm", {"max_value": 1.5, "axis": [0, 1]}),
    ("MinMaxNorm", {}),
    ("MinMaxNorm", {"min_value": 0.5, "max_value": 2.0, "rate": 0.7, "axis": 2}),
    ("NonNeg", {}),
    ("UnitNorm", {}),
    ("UnitNorm", {"axis": [0, 2]}),
    ("Constraint", {}),
]


@pytest.mark.parametrize(("name", "config"), CASES)
def test_values_and_configs_match_keras(name, config):
    ours = getattr(constraints, name)(**config)
    theirs = getattr(keras.constraints, name)(**config)
    np.testing.assert_allclose(np.asarray(ours(jnp.asarray(W))), np.asarray(theirs(W)), atol=1e-6)
    assert ours.get_config() == theirs.get_config()
    assert constraints.serialize(ours) == keras.constraints.serialize(theirs)
    back = constraints.deserialize(keras.constraints.serialize(theirs))
    assert type(back) is type(ours) and back.get_config() == ours.get_config()
    assert type(ours).from_config(ours.get_config()).get_config() == ours.get_config()


def test_keras_test_cases():
    # keras/src/constraints/constraints_test.py
    x = np.array([[0, 0, 0], [1.0, 0, 0], [3, 0, 0], [3, 3, 3]], np.float32).T
    target = np.array([[0, 0, 0], [1.0, 0, 0], [2.0, 0, 0], [2.0 / np.sqrt(3)] * 3]).T
    np.testing.assert_allclose(constraints.MaxNorm(2.0)(x), target, atol=1e-6)
    out = np.asarray(constraints.UnitNorm()(W[0]))
    np.testing.assert_allclose(np.sqrt(np.sum(out**2, axis=0)), 1.0, rtol=1e-5)
    out = np.asarray(constraints.MinMaxNorm(min_value=0.2, max_value=0.5)(W[0]))
    norms = np.sqrt(np.sum(out**2, axis=0))
    assert np.all(norms >= 0.2 - 1e-6) and np.all(norms <= 0.5 + 1e-6)
    np.testing.assert_array_equal(constraints.NonNeg()(np.full((5, 5), -3.0)), np.zeros((5, 5)))
    np.testing.assert_array_equal(constraints.Constraint()(W), W)
    assert constraints.Constraint().get_config() == {}


def test_names_as_keras_accepts_them():
    for name in ("max_norm", "MaxNorm", "min_max_norm", "MinMaxNorm", "non_neg", "NonNeg"):
        ours, theirs = constraints.get(name), keras.constraints.get(name)
        assert type(ours).__name__ == type(theirs).__name__
        assert ours.get_config() == theirs.get_config()
    assert type(constraints.get("unit_norm")) is constraints.UnitNorm
    assert constraints.get(None) is None
    assert constraints.get(constraints.NonNeg).__class__ is constraints.NonNeg
    assert constraints.max_norm is constraints.MaxNorm
    for bad in ("typo", "maxnorm", 3):
        with pytest.raises(ValueError):
            keras.constraints.get(bad)
        with pytest.raises(ConstraintError, match="constraint identifier"):
            constraints.get(bad)
    with pytest.raises(ConstraintError, match="Dense: kernel_constraint='typo'"):
        layers.Dense(2, kernel_constraint="typo")
    with pytest.raises(ConstraintError, match="axis must be an int"):
        constraints.MaxNorm(axis="0")
    with pytest.raises(ConstraintError, match="max_value must be a number"):
        constraints.MaxNorm("2")
    with pytest.raises(ConstraintError, match="Only a phalanx.constraints.Constraint"):
        constraints.serialize(lambda w: w)


def _mlp(lib, max_value=None):
    """The seeds' MLP (784-128-10); with MaxNorm(max_value) kernels and NonNeg biases."""
    args = {}
    if max_value is not None:
        args = {
            "kernel_constraint": lib.constraints.MaxNorm(max_value),
            "bias_constraint": "non_neg",
        }
    return lib.Sequential(
        [
            lib.layers.Input((784,)) if lib is phalanx else keras.Input((784,)),
            lib.layers.Dense(128, activation="relu", **args),
            lib.layers.Dense(10, **args),
        ]
    )


def _pair(optimizer, max_value=None):
    ours, theirs = _mlp(phalanx, max_value), _mlp(keras, max_value)
    ours.build((None, 784))
    theirs.set_weights(ours.get_weights())
    for m, lib in ((ours, phalanx), (theirs, keras)):
        opt = {"adam": lib.optimizers.Adam(0.01), "sgd": lib.optimizers.SGD(0.5)}[optimizer]
        m.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    return ours, theirs


def _fit(model):
    return model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]


def _column_norms(kernel):
    return np.sqrt(np.sum(np.square(kernel), axis=0))


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_fit_with_max_norm_equals_keras(optimizer):
    ours, theirs = _pair(optimizer, 1.0)
    np.testing.assert_allclose(_fit(ours), _fit(theirs), rtol=2e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5)
    kernel, bias = ours.get_weights()[:2]
    assert _column_norms(kernel).max() <= 1.0 + 1e-5 and bias.min() >= 0.0
    # without the constraint the norms grow past it: the test would see a missing projection
    free, _ = _pair(optimizer)
    _fit(free)
    assert _column_norms(free.get_weights()[0]).max() > 1.1


@pytest.mark.slow  # two fits of the seeds' MLP
def test_eight_replicas_equal_one():
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:8]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            model = _mlp(phalanx, 1.0)
            model.compile(
                optimizer=phalanx.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy"
            )
        runs.append((_fit(model), model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):  # float32 sums in another order
        np.testing.assert_allclose(a, b, atol=5e-5)
    assert _column_norms(runs[1][1][0]).max() <= 1.0 + 1e-5


def _custom(lib, ops):
    class Scaled(lib.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(
                shape=(input_shape[-1], 3), initializer="random_normal", constraint="unit_norm"
            )
            self.s = self.add_weight(
                shape=(3,), initializer="ones", constraint=lib.constraints.NonNeg()
            )

        def call(self, inputs):
            return ops.matmul(inputs, self.w) * self.s

    return Scaled


def test_add_weight_constraint_equals_keras():
    x = X[:, :5]
    y = RNG.normal(size=(32, 3)).astype(np.float32)
    ours = phalanx.Sequential([layers.Input((5,)), _custom(phalanx, jnp)()])
    theirs = keras.Sequential([keras.Input((5,)), _custom(keras, keras.ops)()])
    ours.build((None, 5))
    theirs.set_weights(ours.get_weights())
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.3), loss="mse")
    h = [
        m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
        for m in (ours, theirs)
    ]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(_column_norms(ours.get_weights()[0]), 1.0, rtol=1e-5)


def test_frozen_layer_is_not_projected():
    model = _mlp(phalanx, 0.01)
    model.build((None, 784))
    model.layers[0].trainable = False
    before = model.get_weights()[0]
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    np.testing.assert_array_equal(model.get_weights()[0], before)  # Keras: trainable only
    assert _column_norms(model.get_weights()[2]).max() <= 0.01 + 1e-6


def test_overridden_train_step_projects_in_stateless_apply():
    class Custom(phalanx.Model):
        def train_step(self, state, data):
            trainable, non_trainable, optimizer_variables, metrics_variables = state
            x, y = data

            def loss_fn(tv):
                y_pred, ntv = self.stateless_call(tv, non_trainable, x, training=True)
                return self.compute_loss(x, y, y_pred), ntv

            (loss, non_trainable), grads = jax.value_and_grad(loss_fn, has_aux=True)(trainable)
            trainable, optimizer_variables = self.optimizer.stateless_apply(
                optimizer_variables, grads, trainable
            )
            return {"loss": loss}, (
                trainable,
                non_trainable,
                optimizer_variables,
                metrics_variables,
            )

    inputs = phalanx.Input((784,))
    outputs = layers.Dense(10, kernel_constraint=constraints.MaxNorm(0.05))(inputs)
    model = Custom(inputs, outputs)
    model.compile(optimizer=phalanx.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy")
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    assert _column_norms(model.get_weights()[0]).max() <= 0.05 + 1e-6


LAYERS = [
    ("Dense", (4,), {"kernel_constraint": "max_norm", "bias_constraint": "non_neg"}),
    ("Embedding", (10, 4), {"embeddings_constraint": "unit_norm"}),
    ("Conv1D", (2, 3), {"kernel_constraint": "max_norm", "bias_constraint": "non_neg"}),
    ("Conv2D", (2, 3), {"kernel_constraint": "max_norm", "bias_constraint": "non_neg"}),
    ("Conv2DTranspose", (2, 3), {"kernel_constraint": "max_norm"}),
    ("Conv1DTranspose", (2, 3), {"bias_constraint": "non_neg"}),
    ("DepthwiseConv2D", (3,), {"depthwise_constraint": "non_neg", "bias_constraint": "non_neg"}),
    ("SeparableConv2D", (2, 3), {"pointwise_constraint": "unit_norm"}),
    ("SeparableConv1D", (2, 3), {"depthwise_constraint": "non_neg"}),
    ("BatchNormalization", (), {"beta_constraint": "non_neg", "gamma_constraint": "max_norm"}),
    ("LayerNormalization", (), {"beta_constraint": "non_neg", "gamma_constraint": "max_norm"}),
    ("GroupNormalization", (2,), {"beta_constraint": "non_neg", "gamma_constraint": "unit_norm"}),
    ("PReLU", (), {"alpha_constraint": "non_neg"}),
    (
        "LSTM",
        (3,),
        {
            "kernel_constraint": "max_norm",
            "recurrent_constraint": "unit_norm",
            "bias_constraint": "non_neg",
        },
    ),
    ("GRU", (3,), {"recurrent_constraint": "non_neg"}),
    ("SimpleRNN", (3,), {"kernel_constraint": "min_max_norm"}),
    ("SimpleRNNCell", (3,), {"kernel_constraint": "non_neg"}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_configs_hold_keras_constraints(name, args, kwargs):
    ours = getattr(layers, name)(*args, **kwargs)
    theirs = getattr(keras.layers, name)(*args, **kwargs)
    config, expected = ours.get_config(), theirs.get_config()
    for key in kwargs:
        assert config[key] == expected[key], key
    rebuilt = type(ours).from_config(config).get_config()
    for key in kwargs:
        assert rebuilt[key] == expected[key], key


def test_each_layer_projects_its_weights_in_fit():
    x = RNG.normal(size=(8, 6, 6, 4)).astype(np.float32)
    model = phalanx.Sequential(
        [
            layers.Input((6, 6, 4)),
            layers.Conv2D(4, 3, kernel_constraint=constraints.MaxNorm(0.1, axis=[0, 1, 2])),
            layers.BatchNormalization(gamma_constraint=constraints.NonNeg()),
            layers.PReLU(alpha_constraint=constraints.NonNeg()),
            layers.Flatten(),
            layers.Dense(2, bias_constraint=constraints.NonNeg()),
        ]
    )
    model.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
    model.fit(x, -np.ones((8, 2), np.float32), batch_size=4, epochs=2, verbose=0)
    conv = model.layers[0].get_weights()[0]
    assert np.sqrt(np.sum(conv**2, axis=(0, 1, 2))).max() <= 0.1 + 1e-6
    assert model.layers[1].get_weights()[0].min() >= 0.0  # gamma
    assert model.layers[2].get_weights()[0].min() >= 0.0  # alpha
    assert model.layers[4].get_weights()[1].min() >= 0.0  # bias


def test_keras_files_carry_constraints_both_ways(tmp_path):
    theirs = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(2, kernel_constraint=keras.constraints.MaxNorm(0.3))]
    )
    path = str(tmp_path / "keras.keras")
    theirs.save(path)
    ours = phalanx.models.load_model(path)
    assert ours.layers[-1].kernel_constraint.get_config() == {"max_value": 0.3, "axis": 0}
    ours.compile(optimizer=phalanx.optimizers.SGD(1.0), loss="mse")
    ours.fit(X[:, :6], np.full((32, 2), 9.0, np.float32), batch_size=8, verbose=0)
    assert _column_norms(ours.get_weights()[0]).max() <= 0.3 + 1e-6
    path = str(tmp_path / "ours.keras")
    ours.save(path)
    back = keras.models.load_model(path)
    assert back.layers[-1].kernel_constraint.get_config() == {"max_value": 0.3, "axis": 0}
    custom = phalanx.Sequential(
        [layers.Input((6,)), layers.Dense(2, kernel_constraint=lambda w: w)]
    )
    custom.build((None, 6))
    with pytest.raises(KerasFileError, match="constraint of one's own"):
        custom.save(str(tmp_path / "custom.keras"))
