"""Keras's merge helpers (``add``, ``concatenate``, ``dot``, ...), ``Dot``, ``Identity`` and
``TimeDistributed`` against Keras 3 (JAX backend): forward values with the same weights,
gradients with respect to the inputs and the weights, get_config/from_config, functional
models built with the helpers, masks, bad arguments, ``fit`` against Keras's and 2 replicas
against one device."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402
from phalanx.layers import _weights  # noqa: E402

RNG = np.random.default_rng(0)


def _data(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _loss(y):
    return jnp.sum(jnp.sin(3.0 * y))


def _close(a, b, atol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)


# -- the functional helpers ------------------------------------------------------------

HELPERS = ["add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate"]


@pytest.mark.parametrize("name", HELPERS)
def test_helpers_on_arrays_match_keras(name):
    a, b = _data(3, 4, 5), _data(3, 4, 5)
    _close(getattr(layers, name)([a, b]), getattr(keras.layers, name)([a, b]))
    grads = jax.grad(lambda x, y: _loss(getattr(layers, name)([x, y])), argnums=(0, 1))(a, b)
    theirs = jax.grad(lambda x, y: _loss(getattr(keras.layers, name)([x, y])), argnums=(0, 1))(a, b)
    for g, t in zip(grads, theirs, strict=True):
        _close(g, t)


def test_concatenate_helper_takes_axis_and_name():
    a, b = _data(2, 3, 4), _data(2, 5, 4)
    _close(layers.concatenate([a, b], axis=1), keras.layers.concatenate([a, b], axis=1))
    x, y = phalanx.Input((3, 4)), phalanx.Input((5, 4))
    out = layers.concatenate([x, y], axis=1, name="joined")
    assert out.shape == (None, 8, 4) and out.node.layer.name == "joined"
    with pytest.raises(TypeError, match="units"):
        layers.add([x, x], units=3)


def _functional(lib, model_cls):
    a, b = lib.Input((4,)), lib.Input((4,))
    seq = lib.Input((6, 4))
    ha = lib.layers.Dense(4, activation="tanh")(a)
    hb = lib.layers.Dense(4)(b)
    merged = [
        lib.layers.add([ha, hb]),
        lib.layers.subtract([ha, hb]),
        lib.layers.multiply([ha, hb]),
        lib.layers.average([ha, hb]),
        lib.layers.maximum([ha, hb]),
        lib.layers.minimum([ha, hb]),
        lib.layers.dot([ha, hb], axes=1, normalize=True),
        lib.layers.dot([seq, ha], axes=(2, 1)),  # (None, 6)
        lib.layers.Flatten()(lib.layers.dot([seq, seq], axes=(1, 1))),  # (None, 16)
    ]
    joined = lib.layers.concatenate(merged)
    return model_cls([a, b, seq], lib.layers.Dense(2)(joined))


def test_functional_model_of_helpers_matches_keras(tmp_path):
    ours, theirs = _functional(phalanx, phalanx.Model), _functional(keras, keras.Model)
    assert ours.output_shape == theirs.output_shape == (None, 2)
    theirs.set_weights(ours.get_weights())
    xs = [_data(5, 4), _data(5, 4), _data(5, 6, 4)]
    _close(ours.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    ours.save(str(tmp_path / "ours.keras"))  # Dot's config (axes, normalize) both ways
    back = keras.models.load_model(str(tmp_path / "ours.keras"))
    _close(back.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    theirs.save(str(tmp_path / "theirs.keras"))
    again = phalanx.models.load_model(str(tmp_path / "theirs.keras"))
    _close(again.predict(xs, verbose=0), theirs.predict(xs, verbose=0), atol=1e-4)
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.05), loss="mse")
    y = _data(5, 2)
    h = [m.fit(xs, y, batch_size=5, epochs=2, verbose=0).history["loss"] for m in (ours, theirs)]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        _close(a, np.asarray(b), atol=1e-5)


# -- Dot ---------------------------------------------------------------------------------

DOT_CASES = [
    ((2, 4), (2, 4), -1, False),
    ((2, 4), (2, 4), 1, True),
    ((2, 4, 5), (2, 4, 5), -1, False),
    ((2, 3, 5), (2, 10, 3), (1, 2), False),
    ((2, 3, 5), (2, 10, 3), (1, -1), True),
    ((1, 3, 2), (1, 1, 2, 3), (-2, -1), False),
    ((2, 4), (2, 4, 3), (1, 1), True),
    ((2, 3, 4), (2, 4), (-1, 1), False),
    ((2, 3, 4, 5), (2, 5, 3), (3, 1), False),
]


@pytest.mark.parametrize("shape1, shape2, axes, normalize", DOT_CASES)
def test_dot_matches_keras(shape1, shape2, axes, normalize):
    a, b = _data(*shape1), _data(*shape2)
    ours, theirs = (
        layers.Dot(axes, normalize=normalize),
        keras.layers.Dot(axes, normalize=normalize),
    )
    out = ours([a, b])
    _close(out, theirs([a, b]))
    grads = jax.grad(lambda x, y: _loss(ours([x, y])), argnums=(0, 1))(a, b)
    keras_grads = jax.grad(lambda x, y: _loss(theirs([x, y])), argnums=(0, 1))(a, b)
    for g, t in zip(grads, keras_grads, strict=True):
        _close(g, t, atol=5e-5)
    symbolic = layers.Dot(axes, normalize=normalize)(
        [phalanx.Input(shape1[1:]), phalanx.Input(shape2[1:])]
    )
    keras_symbolic = keras.layers.Dot(axes, normalize=normalize)(
        [keras.Input(shape1[1:]), keras.Input(shape2[1:])]
    )
    assert symbolic.shape == keras_symbolic.shape == (None, *out.shape[1:])
    config = ours.get_config()
    assert set(config) == set(theirs.get_config())
    again = layers.Dot.from_config(config)
    _close(again([a, b]), out, atol=0)
    _close(layers.dot([a, b], axes=axes, normalize=normalize), out, atol=0)


def test_dot_bad_arguments_raise_as_keras():
    for axes, match in (
        ("1", "Invalid type for argument `axes`"),
        ((1, 2, 3), "should contain two elements"),
        ((1, 2.0), "should be integers"),
    ):
        with pytest.raises(LayerArgumentError, match=match):
            layers.Dot(axes)
        with pytest.raises((TypeError, ValueError)):
            keras.layers.Dot(axes)
    a, b = phalanx.Input((3, 4)), phalanx.Input((5, 4))
    with pytest.raises(LayerShapeError, match=r"axis values 4 \(at axis 2\) != 5 \(at axis 1\)"):
        layers.Dot(axes=(2, 1))([a, b])
    with pytest.raises(ValueError, match="Incompatible input shapes"):
        keras.layers.Dot(axes=(2, 1))([keras.Input((3, 4)), keras.Input((5, 4))])
    with pytest.raises(LayerShapeError, match="list of 2 inputs"):
        layers.Dot(axes=1)([a, a, a])
    with pytest.raises(LayerShapeError, match="batch_dot over axis 0"):
        layers.Dot(axes=0)([_data(2, 3), _data(2, 3)])
    with pytest.raises(ValueError, match="over axis 0"):
        keras.layers.Dot(axes=0)([_data(2, 3), _data(2, 3)])
    with pytest.raises(LayerShapeError, match="takes a list of inputs"):
        layers.Dot(axes=1)(_data(2, 3))


# -- Identity ----------------------------------------------------------------------------


def test_identity_matches_keras_and_passes_the_mask():
    x = _data(2, 3)
    ours = layers.Identity()
    _close(ours(x), keras.layers.Identity()(x), atol=0)
    assert set(ours.get_config()) == set(keras.layers.Identity().get_config())
    assert layers.Identity.from_config(ours.get_config()).name == ours.name
    a, b = layers.Identity()([x, 2 * x])
    _close(a, x, atol=0)
    _close(b, 2 * x, atol=0)
    pair = layers.Identity()([phalanx.Input((3,)), phalanx.Input((4,))])
    assert [t.shape for t in pair] == [(None, 3), (None, 4)]
    mask = np.array([[True, False, True], [False, True, True]])
    assert ours.compute_mask(x, mask) is mask

    def model(lib):
        return lib.Sequential(
            [
                lib.layers.Input((6,)),
                lib.layers.Embedding(9, 4, mask_zero=True),
                lib.layers.Identity(),
                lib.layers.GlobalAveragePooling1D(),
                lib.layers.Dense(1),
            ]
        )

    ids = np.array([[1, 2, 0, 0, 0, 0], [3, 4, 5, 6, 7, 0]])
    mine, theirs = model(phalanx), model(keras)
    theirs.set_weights(mine.get_weights())
    _close(mine.predict(ids, verbose=0), theirs.predict(ids, verbose=0))


# -- TimeDistributed ---------------------------------------------------------------------

TD_CASES = [
    ("Dense", dict(units=3, activation="tanh"), (2, 5, 4)),
    ("Dense", dict(units=2, use_bias=False), (2, 3, 4, 6)),
    ("Conv2D", dict(filters=4, kernel_size=3, padding="same"), (2, 3, 6, 5, 2)),
    ("Conv2D", dict(filters=2, kernel_size=(2, 3), strides=2, activation="relu"), (2, 4, 7, 6, 3)),
    ("LSTM", dict(units=3), (2, 4, 5, 3)),
    ("BatchNormalization", dict(), (3, 4, 5)),
]


def _wrapped(name, config, x):
    ours = layers.TimeDistributed(getattr(layers, name)(**config))
    theirs = keras.layers.TimeDistributed(getattr(keras.layers, name)(**config))
    ours(x)
    theirs(x)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    weights = [RNG.normal(size=w.shape).astype(np.float32) for w in ours.get_weights()]
    if name == "BatchNormalization":  # a variance must be positive
        weights[-1] = np.abs(weights[-1]) + 0.5
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize(
    "name, config, shape", TD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(TD_CASES)]
)
def test_time_distributed_matches_keras(name, config, shape):
    x = _data(*shape)
    ours, theirs = _wrapped(name, config, x)
    out = ours(x)
    _close(out, theirs(x))
    assert out.shape == theirs.compute_output_shape(shape)
    graphdef, state = nnx.split(ours)
    grad = jax.grad(lambda a: _loss(nnx.merge(graphdef, state)(a)))(jnp.asarray(x))
    _close(grad, jax.grad(lambda a: _loss(theirs(a)))(jnp.asarray(x)), atol=5e-5)
    graphdef, params, rest = nnx.split(ours, nnx.Param, ...)
    mine = jax.grad(lambda p: _loss(nnx.merge(graphdef, p, rest)(jnp.asarray(x))))(params)
    trainable = [v.value for v in theirs.trainable_variables]
    fixed = [v.value for v in theirs.non_trainable_variables]
    keras_grads = jax.grad(lambda t: _loss(theirs.stateless_call(t, fixed, x)[0]))(trainable)
    for a, b in zip(_weights.state_to_list(mine), keras_grads, strict=True):
        _close(a, b, atol=5e-5)
    config_out = ours.get_config()
    assert set(config_out) == set(theirs.get_config())
    assert config_out["layer"]["class_name"] == name
    again = layers.TimeDistributed.from_config(config_out)
    again(x)
    again.set_weights(ours.get_weights())
    _close(again(x), out, atol=1e-6)


def test_time_distributed_in_a_functional_model_builds_from_the_step_shape():
    inputs = phalanx.Input((10, 12, 12, 3))
    conv = layers.Conv2D(8, 3)
    outputs = layers.TimeDistributed(conv)(inputs)
    keras_out = keras.layers.TimeDistributed(keras.layers.Conv2D(8, 3))(
        keras.Input((10, 12, 12, 3))
    )
    assert outputs.shape == keras_out.shape == (None, 10, 10, 10, 8)
    model = phalanx.Model(inputs, outputs)
    assert conv.built and conv.built_input_shape == (12, 12, 3)
    assert model.predict(_data(2, 10, 12, 12, 3), verbose=0).shape == (2, 10, 10, 10, 8)
    # the time axis may change from call to call, as Keras's
    td = layers.TimeDistributed(layers.Dense(2))
    assert td(_data(2, 3, 4)).shape == (2, 3, 2)
    assert td(_data(2, 7, 4)).shape == (2, 7, 2)
    steps = phalanx.Input((None, 4))
    model = phalanx.Model(steps, layers.TimeDistributed(layers.Dense(2))(steps))
    assert model.output_shape == (None, None, 2)
    for time in (3, 5):
        x = _data(2, time, 4)
        _close(model.predict(x, verbose=0), x @ model.layers[-1].layer.get_weights()[0])


def test_time_distributed_passes_masks_as_keras():
    x = _data(3, 4, 5, 2)
    mask = RNG.random((3, 4, 5)) > 0.3
    mask[:, :, 0] = True
    ours = layers.TimeDistributed(layers.GlobalAveragePooling1D())
    theirs = keras.layers.TimeDistributed(keras.layers.GlobalAveragePooling1D())
    _close(ours(x, mask=mask), theirs(x, mask=mask))
    assert ours.compute_mask(x, mask) is mask

    def model(lib):
        return lib.Sequential(
            [
                lib.layers.Input((6,)),
                lib.layers.Embedding(9, 4, mask_zero=True),
                lib.layers.TimeDistributed(lib.layers.Dense(3, activation="relu")),
                lib.layers.GlobalAveragePooling1D(),  # takes the mask TimeDistributed passed on
                lib.layers.Dense(1),
            ]
        )

    ids = np.array([[1, 2, 0, 0, 0, 0], [3, 4, 5, 6, 7, 0]])
    mine, keras_model = model(phalanx), model(keras)
    keras_model.set_weights(mine.get_weights())
    _close(mine.predict(ids, verbose=0), keras_model.predict(ids, verbose=0))


def test_time_distributed_passes_training_and_keys():
    x = jnp.ones((4, 6, 8))
    dropout = layers.TimeDistributed(layers.Dropout(0.5))
    assert dropout.uses_rng
    _close(dropout(x), x, atol=0)  # inference: the identity
    dropped = dropout(x, training=True, rngs=jax.random.key(0))
    assert 0.3 < float(jnp.mean(dropped == 0)) < 0.7
    _close(dropout(x, training=True, rngs=jax.random.key(0)), dropped, atol=0)
    norm = layers.TimeDistributed(layers.BatchNormalization())
    y = _data(4, 6, 8) * 3.0 + 1.0
    _close(norm(y), y / np.sqrt(1.0 + 1e-3), atol=1e-5)  # moving statistics 0 and 1
    z = norm(y, training=True)  # the batch's statistics, over batch and time
    _close(jnp.mean(z, axis=(0, 1)), np.zeros(8), atol=1e-5)


def test_time_distributed_bad_arguments_raise_as_keras():
    with pytest.raises(LayerArgumentError, match="TimeDistributed.*layer instance"):
        layers.TimeDistributed(lambda x: x)
    with pytest.raises(ValueError):
        keras.layers.TimeDistributed(lambda x: x)
    with pytest.raises(LayerShapeError, match="at least 3 dimensions"):
        layers.TimeDistributed(layers.Dense(2))(_data(2, 4))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        keras.layers.TimeDistributed(keras.layers.Dense(2))(_data(2, 4))
    with pytest.raises(LayerShapeError, match="at least 3 dimensions"):
        layers.TimeDistributed(layers.Dense(2))(phalanx.Input((4,)))
    td = layers.TimeDistributed(layers.Dense(2))
    x = _data(4, 5, 3)
    with pytest.raises(LayerShapeError, match="`mask`.*incompatible"):
        td(x, mask=np.ones((4, 6), bool))
    with pytest.raises(LayerShapeError, match="`mask`.*incompatible"):
        td(x, mask=np.ones((5, 5), bool))
    with pytest.raises(LayerShapeError, match="at least 2D"):
        td(x, mask=np.ones((4,), bool))
    with pytest.raises(LayerShapeError, match="dense"):  # the step's shape, checked by Dense
        td(_data(4, 5, 6))


def _sequence_model(lib):
    return lib.Sequential(
        [
            lib.layers.Input((5, 4)),
            lib.layers.TimeDistributed(lib.layers.Dense(3, activation="tanh")),
            lib.layers.TimeDistributed(lib.layers.Dense(2)),
            lib.layers.Flatten(),
            lib.layers.Dense(1),
        ]
    )


def test_time_distributed_fit_matches_keras():
    x, y = _data(8, 5, 4), _data(8, 1)
    ours, theirs = _sequence_model(phalanx), _sequence_model(keras)
    theirs.set_weights(ours.get_weights())
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
    h = [
        m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
        for m in (ours, theirs)
    ]  # 2 steps each
    np.testing.assert_allclose(h[0], h[1], rtol=1e-5)
    assert len(ours.get_weights()) == len(theirs.get_weights()) == 6
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        _close(a, np.asarray(b), atol=1e-6)
    assert not np.allclose(ours.get_weights()[0], _sequence_model(phalanx).get_weights()[0])


def test_frozen_time_distributed_is_not_trained():
    model = _sequence_model(phalanx)
    model.layers[0].trainable = False
    assert not model.layers[0].trainable_weights
    before = model.get_weights()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(_data(8, 5, 4), _data(8, 1), batch_size=4, verbose=0)
    after = model.get_weights()
    for a, b in zip(before[:2], after[:2], strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(before[2], after[2])


def test_time_distributed_keras_files_both_ways(tmp_path):
    ours, theirs = _sequence_model(phalanx), _sequence_model(keras)
    x = _data(3, 5, 4)
    path = str(tmp_path / "td.keras")
    ours.save(path)
    back = keras.models.load_model(path)
    _close(back.predict(x, verbose=0), ours.predict(x, verbose=0))
    path = str(tmp_path / "keras_td.keras")
    theirs.save(path)
    again = phalanx.models.load_model(path)
    _close(again.predict(x, verbose=0), theirs.predict(x, verbose=0))
    weights = str(tmp_path / "td.weights.h5")
    theirs.save_weights(weights)
    fresh = _sequence_model(phalanx)
    fresh.load_weights(weights)
    for a, b in zip(fresh.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_array_equal(a, np.asarray(b))


@pytest.mark.slow  # two fits: the replicas-vs-one check
def test_time_distributed_fit_two_replicas_equal_one():
    x, y = _data(16, 5, 4), _data(16, 1)
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:2]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            phalanx.utils.set_random_seed(0)
            model = _sequence_model(phalanx)
            model.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
