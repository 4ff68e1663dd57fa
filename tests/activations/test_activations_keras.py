"""phalanx.activations against Keras 3's ``keras.activations`` (JAX backend).

Every function on the same float32 inputs (negatives, zeros, the kinks, large values,
NaN) with each optional argument varied, values and gradients; the same names,
signatures and defaults; ``get``/``serialize``/``deserialize`` round trips and errors;
``Dense``, ``Activation``, ``Conv1D`` and the recurrent layers with each name equal to
Keras's with the same weights, their configs naming the activation as Keras does; ``.keras``
files both ways; and ``fit`` with one.
"""

import inspect
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import activations, layers  # noqa: E402
from phalanx.errors import ActivationError, UnknownNameError  # noqa: E402

KA = keras.activations
RNG = np.random.default_rng(2026)
# The kinks and edges of the piecewise functions, large values, and NaN.
GRID = np.array(
    [-1e4, -100, -50, -10, -6, -5, -3, -2, -1, -0.5, -0.25, 0, 0.25, 0.5, 1, 1.5, 2]
    + [3, 5, 6, 7, 10, 50, 88, 100, 1e4, np.nan],
    np.float32,
)
X3 = (RNG.normal(scale=3.0, size=(4, 6, 8))).astype(np.float32)
X3[0, 0, :3] = [0.0, -0.0, 50.0]

KERAS_NAMES = sorted(n for n in dir(KA) if not n.startswith("_"))
FUNCTIONS = [n for n in KERAS_NAMES if n not in ("get", "serialize", "deserialize")]

ELEMENTWISE = [
    ("relu", {}),
    ("relu", dict(negative_slope=0.5)),
    ("relu", dict(negative_slope=-0.1)),
    ("relu", dict(max_value=5.0)),
    ("relu", dict(max_value=6.0)),  # Keras's relu6 path
    ("relu", dict(max_value=6)),
    ("relu", dict(max_value=0.0)),
    ("relu", dict(max_value=-1.0)),  # Keras clips to [0, -1]: all -1
    ("relu", dict(threshold=5.0)),
    ("relu", dict(threshold=-1.0)),
    ("relu", dict(threshold=5.0, max_value=5.0)),
    ("relu", dict(threshold=2.0, max_value=6.0)),  # a threshold: not the relu6 path
    ("relu", dict(negative_slope=0.5, max_value=5.0)),
    ("relu", dict(negative_slope=0.5, max_value=6.0)),
    ("relu", dict(negative_slope=0.5, threshold=1.0)),
    ("relu", dict(negative_slope=0.3, max_value=4.0, threshold=-2.0)),
    ("relu", dict(negative_slope=0.0, max_value=None, threshold=0.0)),
    ("leaky_relu", {}),
    ("leaky_relu", dict(negative_slope=0.01)),
    ("leaky_relu", dict(negative_slope=1.5)),
    ("relu6", {}),
    ("elu", {}),
    ("elu", dict(alpha=0.5)),
    ("elu", dict(alpha=2.0)),
    ("celu", {}),
    ("celu", dict(alpha=0.5)),
    ("celu", dict(alpha=3.0)),
    ("selu", {}),
    ("softplus", {}),
    ("softsign", {}),
    ("squareplus", {}),
    ("squareplus", dict(b=1.0)),
    ("squareplus", dict(b=0)),
    ("soft_shrink", {}),
    ("soft_shrink", dict(threshold=1.0)),
    ("soft_shrink", dict(threshold=0.0)),
    ("hard_shrink", {}),
    ("hard_shrink", dict(threshold=2.0)),
    ("hard_shrink", dict(threshold=0.0)),
    ("threshold", dict(threshold=0.0, default_value=0.0)),
    ("threshold", dict(threshold=1.5, default_value=-2.0)),
    ("threshold", dict(threshold=-1.0, default_value=10.0)),
    ("sparse_plus", {}),
    ("silu", {}),
    ("swish", {}),
    ("gelu", {}),
    ("gelu", dict(approximate=True)),
    ("gelu", dict(approximate=False)),
    ("tanh", {}),
    ("tanh_shrink", {}),
    ("hard_tanh", {}),
    ("sigmoid", {}),
    ("sparse_sigmoid", {}),
    ("exponential", {}),
    ("hard_sigmoid", {}),
    ("log_sigmoid", {}),
    ("hard_silu", {}),
    ("hard_swish", {}),
    ("linear", {}),
    ("mish", {}),
]
AXIS = [
    ("softmax", {}),
    ("softmax", dict(axis=0)),
    ("softmax", dict(axis=1)),
    ("softmax", dict(axis=-2)),
    ("softmax", dict(axis=(1, 2))),
    ("softmax", dict(axis=(0, 2))),
    ("softmax", dict(axis=None)),
    ("log_softmax", {}),
    ("log_softmax", dict(axis=0)),
    ("log_softmax", dict(axis=(1, 2))),
    ("log_softmax", dict(axis=(0, 2))),
    ("log_softmax", dict(axis=None)),
    ("glu", {}),
    ("glu", dict(axis=0)),
    ("glu", dict(axis=1)),
    ("sparsemax", {}),
    ("sparsemax", dict(axis=0)),
    ("sparsemax", dict(axis=-2)),
]


def _ids(cases):
    return [f"{name}-{kwargs}" for name, kwargs in cases]


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=0, equal_nan=True)


def _grad(fn, x, kwargs):
    return jax.grad(lambda a: jnp.sum(jnp.sin(0.3 * fn(a, **kwargs))))(jnp.asarray(x))


def test_the_same_names_as_keras():
    assert sorted(activations.__all__) == KERAS_NAMES
    assert sorted(n for n in activations.names()) == sorted(
        n for n in keras.src.activations.ALL_OBJECTS_DICT
    )


@pytest.mark.parametrize("name", FUNCTIONS)
def test_signatures_and_defaults_are_keras(name):
    ours = inspect.signature(getattr(activations, name)).parameters
    theirs = inspect.signature(getattr(KA, name)).parameters
    assert [(p.name, p.default, p.kind) for p in ours.values()] == [
        (p.name, p.default, p.kind) for p in theirs.values()
    ]
    assert inspect.getdoc(getattr(activations, name))


@pytest.mark.parametrize(("name", "kwargs"), ELEMENTWISE, ids=_ids(ELEMENTWISE))
def test_elementwise_values_and_gradients_match_keras(name, kwargs):
    ours, theirs = getattr(activations, name), getattr(KA, name)
    for x in (GRID, X3):
        _same(ours(x, **kwargs), theirs(x, **kwargs))
        _same(ours(jnp.asarray(x), **kwargs), theirs(jnp.asarray(x), **kwargs))
    finite = GRID[np.isfinite(GRID)]
    for x in (finite, X3):
        _same(_grad(ours, x, kwargs), _grad(theirs, x, kwargs))
    _same(jax.jit(lambda a: ours(a, **kwargs))(X3), theirs(X3, **kwargs))


@pytest.mark.parametrize(("name", "kwargs"), AXIS, ids=_ids(AXIS))
def test_axis_values_and_gradients_match_keras(name, kwargs):
    ours, theirs = getattr(activations, name), getattr(KA, name)
    x = X3.copy()
    _same(ours(x, **kwargs), theirs(x, **kwargs))
    _same(_grad(ours, x, kwargs), _grad(theirs, x, kwargs))
    x[1, 2, 3] = np.nan  # NaN spreads along the axis as in Keras
    _same(ours(x, **kwargs), theirs(x, **kwargs))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_negative_axes_in_a_tuple_are_keras_s_positive_ones(name):
    ours, theirs = getattr(activations, name), getattr(KA, name)
    _same(ours(X3, axis=(-2, -1)), theirs(X3, axis=(1, 2)))
    with pytest.raises((ValueError, TypeError, IndexError)):
        theirs(X3, axis=(-2, -1))  # Keras's JAX backend cannot transpose by them


def test_lists_are_taken_as_keras_takes_them():
    x = [-10, -5, 0.0, 5, 10]
    for kwargs in ({}, dict(negative_slope=0.5), dict(max_value=5.0), dict(threshold=5.0)):
        _same(activations.relu(x, **kwargs), KA.relu(x, **kwargs))
    _same(activations.softmax([[1.0, 2.0, 3.0]]), KA.softmax(np.array([[1.0, 2.0, 3.0]])))
    assert activations.linear(x) is x


def test_softmax_over_an_axis_of_size_one_warns_as_keras():
    with pytest.warns(UserWarning, match="This axis has size 1"):
        out = activations.softmax(np.ones((2, 1), np.float32))
    np.testing.assert_array_equal(out, np.ones((2, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        activations.softmax(np.ones((2, 3), np.float32))


def test_required_arguments_and_odd_glu_fail_as_keras():
    with pytest.raises(TypeError, match="threshold"):
        activations.threshold(GRID)
    with pytest.raises(TypeError, match="threshold"):
        KA.threshold(GRID)
    with pytest.raises(AssertionError, match="divisible by 2"):
        KA.glu(np.ones((2, 3), np.float32))
    with pytest.raises(ActivationError, match="odd size 3 \\(input shape \\(2, 3\\)\\)"):
        activations.glu(np.ones((2, 3), np.float32))


# -- get / serialize / deserialize ------------------------------------------------------


def myact(x):
    return x * 2.0


@pytest.mark.parametrize("name", sorted(keras.src.activations.ALL_OBJECTS_DICT))
def test_get_serialize_deserialize_by_name_as_keras(name):
    fn = activations.get(name)
    assert fn.__name__ == KA.get(name).__name__
    assert fn is getattr(activations, name)
    assert activations.serialize(fn) == KA.serialize(KA.get(name))
    assert activations.deserialize(activations.serialize(fn)) is fn
    assert activations.get(activations.serialize(fn)) is fn
    keras_dict = keras.saving.serialize_keras_object(KA.get(name))
    assert activations.get(keras_dict) is fn
    assert activations.deserialize(keras_dict) is fn
    assert KA.get(keras.saving.serialize_keras_object(KA.get(name))) is KA.get(name)


def test_get_none_callables_and_dicts_as_keras():
    assert activations.get(None) is activations.linear
    assert KA.get(None) is KA.linear
    assert activations.get(myact) is myact
    assert activations.get(jnp.tanh) is jnp.tanh
    legacy = {"class_name": "gelu", "config": None}
    assert activations.deserialize(legacy) is activations.gelu
    assert KA.deserialize(legacy) is KA.gelu
    assert activations.deserialize(activations.gelu) is activations.gelu
    assert activations.serialize(activations.swish) == "silu" == KA.serialize(KA.swish)
    assert activations.serialize(activations.hard_swish) == "hard_silu"


def test_functions_of_ones_own_serialize_as_keras_and_come_back_by_custom_objects():
    assert activations.serialize(myact) == KA.serialize(myact)
    assert activations.serialize(jax.nn.relu) == KA.serialize(jax.nn.relu)
    config = activations.serialize(myact)
    assert activations.deserialize(config, custom_objects={"myact": myact}) is myact
    assert KA.deserialize(config, custom_objects={"myact": myact}) is myact
    assert activations.deserialize("myact", custom_objects={"myact": myact}) is myact
    with pytest.raises(UnknownNameError, match="custom_objects=\\{'myact'"):
        activations.deserialize(config)


def test_unknown_names_raise_listing_the_names_where_keras_raises():
    for name in ("nope", "RELU", "Relu", "rellu"):
        with pytest.raises(ValueError):
            KA.get(name)
        with pytest.raises(UnknownNameError, match="The known activation names are \\['celu'"):
            activations.get(name)
    with pytest.raises(UnknownNameError, match="Did you mean 'relu'"):
        activations.get("RELU")
    # Keras's deserialize returns an unknown name itself; phalanx refuses it.
    assert KA.deserialize("nope") == "nope"
    with pytest.raises(UnknownNameError, match="Unknown activation 'nope'"):
        activations.deserialize("nope")
    with pytest.raises(UnknownNameError, match="Unknown activation 'nope'"):
        activations.get({"class_name": "function", "config": "nope", "module": "keras"})


def test_bad_types_raise_clearly():
    for bad in (3, 1.5, ["relu"]):
        with pytest.raises(ValueError):
            KA.get(bad)
        with pytest.raises(ActivationError, match="as an activation: give a name"):
            activations.get(bad)
        with pytest.raises(ActivationError, match="takes a name or a config dict"):
            activations.deserialize(bad)
    for bad in ("relu", None, 3):
        with pytest.raises((ValueError, TypeError)):
            KA.serialize(bad)
        with pytest.raises(ActivationError, match="takes a named activation function"):
            activations.serialize(bad)
    with pytest.raises(ActivationError, match="define the function with def"):
        activations.serialize(lambda x: x)
    with pytest.raises(ActivationError, match="A lambda stored in a config is never run"):
        activations.get({"class_name": "__lambda__", "config": {"value": "..."}})
    with pytest.raises(ActivationError, match="An activation config is a dict"):
        activations.deserialize({"foo": 1})
    with pytest.raises(ValueError):
        KA.deserialize({"foo": 1})


def test_layers_get_activation_is_activations_get():
    assert layers.get_activation is activations.get
    assert phalanx.activations is activations


# -- in layers ---------------------------------------------------------------------------

SHAPE_KEEPING = [
    n for n in sorted(keras.src.activations.ALL_OBJECTS_DICT) if n not in ("glu", "threshold")
]


@pytest.mark.parametrize("name", SHAPE_KEEPING)
def test_dense_and_activation_layers_by_name_equal_keras(name):
    x = (RNG.normal(scale=2.0, size=(8, 5))).astype(np.float32)
    ours, theirs = layers.Dense(6, activation=name), keras.layers.Dense(6, activation=name)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    assert ours.get_config()["activation"] == theirs.get_config()["activation"]
    again = layers.Dense.from_config(ours.get_config())
    assert again.get_config()["activation"] == ours.get_config()["activation"]
    act, keras_act = layers.Activation(name), keras.layers.Activation(name)
    _same(act(x), keras_act(x))
    assert act.get_config()["activation"] == keras_act.get_config()["activation"]


def test_configs_name_function_objects_as_keras():
    for given, keras_given in [
        (activations.relu, KA.relu),
        (activations.swish, KA.swish),
        (activations.gelu, KA.gelu),
        (None, None),
        ("swish", "swish"),
        ("hard_swish", "hard_swish"),
        (
            {"class_name": "function", "config": "gelu"},
            keras.saving.serialize_keras_object(KA.gelu),
        ),
    ]:
        ours = layers.Dense(3, activation=given).get_config()["activation"]
        assert ours == keras.layers.Dense(3, activation=keras_given).get_config()["activation"]
    lstm = layers.LSTM(3, activation="swish", recurrent_activation=activations.hard_silu)
    keras_lstm = keras.layers.LSTM(3, activation="swish", recurrent_activation="hard_silu")
    for key in ("activation", "recurrent_activation"):
        assert lstm.get_config()[key] == keras_lstm.get_config()[key]


def test_unknown_and_bad_activations_in_layers():
    with pytest.raises(UnknownNameError, match="Did you mean 'celu'"):
        layers.Dense(3, activation="cellu")
    with pytest.raises(UnknownNameError, match="Unknown activation"):
        layers.LSTM(3, recurrent_activation="nope")
    with pytest.raises(ActivationError, match="as an activation"):
        layers.Activation(3)


@pytest.mark.parametrize(
    ("layer", "kwargs"),
    [
        ("SimpleRNN", dict(activation="celu")),
        ("GRU", dict(activation="mish", recurrent_activation="hard_silu")),
        ("LSTM", dict(activation="squareplus", recurrent_activation="sparse_sigmoid")),
    ],
)
def test_recurrent_layers_take_every_name_as_keras(layer, kwargs):
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    ours, theirs = getattr(layers, layer)(5, **kwargs), getattr(keras.layers, layer)(5, **kwargs)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    for key in kwargs:
        assert ours.get_config()[key] == theirs.get_config()[key]


def test_a_model_with_celu_trains_with_fit():
    x = RNG.normal(size=(64, 5)).astype(np.float32)
    y = (x @ RNG.normal(size=(5, 1))).astype(np.float32)
    model = phalanx.Sequential(
        [layers.Input(shape=(5,)), layers.Dense(16, activation="celu"), layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0).history["loss"]
    assert np.all(np.isfinite(history)) and history[-1] < history[0]


def test_keras_files_carry_every_activation_both_ways(tmp_path):
    x = RNG.normal(size=(8, 5)).astype(np.float32)
    ours = phalanx.Sequential(
        [layers.Input(shape=(5,)), layers.Dense(6, activation="celu")]
        + [layers.Dense(6, activation=name) for name in ("swish", "mish", "squareplus")]
        + [layers.Dense(4, activation=activations.sparsemax)]
    )
    ours.compile(optimizer="sgd", loss="mse")
    ours.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0), atol=1e-6)
    assert [layer.get_config()["activation"] for layer in theirs.layers] == [
        "celu",
        "silu",
        "mish",
        "squareplus",
        "sparsemax",
    ]
    keras_model = keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(6, activation="hard_swish")]
        + [keras.layers.Dense(3, activation="log_sigmoid")]
    )
    keras_model.save(tmp_path / "theirs.keras")
    loaded = phalanx.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(
        loaded.predict(x, verbose=0), keras_model.predict(x, verbose=0), atol=1e-6
    )


@pytest.mark.parametrize("name", ["hard_tanh", "tanh_shrink", "sparse_plus", "log_softmax"])
def test_conv_layers_by_name_equal_keras(name):
    x = RNG.normal(scale=2.0, size=(2, 7, 3)).astype(np.float32)
    ours = layers.Conv1D(4, 3, activation=name)
    theirs = keras.layers.Conv1D(4, 3, activation=name)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    assert ours.get_config()["activation"] == theirs.get_config()["activation"] == name
