"""ConvLSTM1D/2D/3D against Keras 3 (JAX backend): same weights in, same outputs and gradients.

As tests/layers/test_recurrent_keras.py: each test builds phalanx's layer and
Keras's with the same arguments, copies phalanx's weights into Keras's with
``set_weights`` (so weight order and shapes must be Keras's) and compares the
outputs and the gradients of a scalar of them. Shapes are tiny: CI time.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")
pytest.importorskip("h5py")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import LayerArgumentError, LayerShapeError  # noqa: E402

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _scalar(out):
    leaves = jax.tree.leaves(out)
    return sum(jnp.sum(jnp.sin(leaf) * (i + 1)) for i, leaf in enumerate(leaves))


def _run(ours, theirs, x, kwargs):
    """Outputs and gradients of phalanx's and Keras's layer, each one compiled program."""
    graphdef, params, rest = nnx.split(ours, nnx.Param, ...)

    def f(p, x):
        out = nnx.merge(graphdef, p, rest)(x, **kwargs)
        return _scalar(out), out

    (_, out), (g, dx) = jax.jit(jax.value_and_grad(f, (0, 1), has_aux=True))(params, x)
    frozen = [v.value for v in theirs.non_trainable_variables]

    def k(t, x):
        out = theirs.stateless_call(t, frozen, x, **kwargs)[0]
        return _scalar(out), out

    trainable = [v.value for v in theirs.trainable_variables]
    (_, k_out), (kg, kx) = jax.jit(jax.value_and_grad(k, (0, 1), has_aux=True))(trainable, x)
    return (out, nnx.merge(graphdef, g, rest).get_weights(), dx), (k_out, kg, kx)


def _same(ours, theirs, x, grads=True, **kwargs):
    """Copies our weights into Keras's layer, compares outputs and gradients."""
    ours.build((None, *x.shape[1:]))
    theirs.build(x.shape)
    weights = ours.get_weights()
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    theirs.set_weights(weights)
    (out, gw, gx), (expected, kw, kx) = _run(ours, theirs, jnp.asarray(x), kwargs)
    out_leaves, exp_leaves = jax.tree.leaves(out), jax.tree.leaves(expected)
    assert [a.shape for a in out_leaves] == [tuple(b.shape) for b in exp_leaves]
    for a, b in zip(out_leaves, exp_leaves, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-5, rtol=1e-5)
    if grads:
        np.testing.assert_allclose(np.asarray(gx), np.asarray(kx), atol=1e-4, rtol=1e-4)
        for a, b in zip(gw, kw, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4, rtol=1e-4)
    return out


CASES = [
    ("ConvLSTM1D", (2, 4, 7, 2), dict(padding="same", strides=2, return_sequences=True)),
    (
        "ConvLSTM1D",
        (2, 3, 9, 2),
        dict(dilation_rate=2, return_state=True, go_backwards=True, unroll=True),
    ),
    ("ConvLSTM2D", (2, 3, 5, 5, 2), dict(return_sequences=True, return_state=True)),
    (
        "ConvLSTM2D",
        (1, 3, 6, 5, 1),
        dict(
            padding="same",
            kernel_size=(3, 2),
            strides=(2, 1),
            use_bias=False,
            unit_forget_bias=False,
            activation="relu",
            recurrent_activation="hard_sigmoid",
        ),
    ),
    ("ConvLSTM3D", (1, 2, 4, 4, 3, 1), dict(padding="same", go_backwards=True)),
]


@pytest.mark.parametrize("name, shape, options", CASES)
def test_layer_matches_keras(name, shape, options):
    options = dict(options)
    kernel_size = options.pop("kernel_size", 3 if name != "ConvLSTM3D" else 2)
    _same(
        getattr(layers, name)(3, kernel_size, **options),
        getattr(keras.layers, name)(3, kernel_size, **options),
        _x(*shape),
    )


def test_initial_state_matches_keras_and_a_mask_skips_steps():
    x = _x(3, 5, 4, 4, 2)
    options = dict(padding="same", return_sequences=True, return_state=True)
    ours, theirs = layers.ConvLSTM2D(2, 3, **options), keras.layers.ConvLSTM2D(2, 3, **options)
    states = [_x(3, 4, 4, 2), _x(3, 4, 4, 2)]
    _same(ours, theirs, x, initial_state=states)
    with pytest.raises(LayerShapeError, match=r"initial states of shape \(None, 4, 4, 2\)"):
        ours(x, initial_state=[_x(3, 2, 2, 2), _x(3, 2, 2, 2)])
    # Keras 3's JAX backend cannot broadcast a mask over ConvLSTM states (it raises);
    # phalanx's RNN keeps the state and repeats the output at masked steps, as for LSTM.
    mask = np.ones((3, 5), bool)
    mask[0, 3:] = False
    mask[1, 1] = False
    seq, h, c = ours(x, mask=mask)
    _, h_short, c_short = ours(x[:1, :3])
    np.testing.assert_allclose(h[0], h_short[0], atol=1e-6)
    np.testing.assert_allclose(c[0], c_short[0], atol=1e-6)
    np.testing.assert_allclose(seq[0, 3:], np.broadcast_to(seq[0, 2], seq[0, 3:].shape))
    hole = ours(x[1:2, [0, 2, 3, 4]])[0]
    np.testing.assert_allclose(seq[1, 1], seq[1, 0], atol=1e-6)
    np.testing.assert_allclose(seq[1, 2:], hole[0, 1:], atol=1e-5)


def test_dropout_inference_is_keras_and_training_draws_per_call():
    x = _x(2, 4, 5, 2)
    options = dict(dropout=0.4, recurrent_dropout=0.3, return_sequences=True)
    ours = layers.ConvLSTM1D(3, 3, **options)
    _same(ours, keras.layers.ConvLSTM1D(3, 3, **options), x, grads=False)
    key = jax.random.key(1)
    a = ours(x, training=True, rngs=key)
    np.testing.assert_array_equal(a, ours(x, training=True, rngs=key))
    assert not np.allclose(a, ours(x, training=True, rngs=jax.random.key(2)))
    assert not np.allclose(a, ours(x))
    assert ours.dropout == 0.4 and ours.filters == 3 and ours.kernel_size == (3,)


def test_stateful_continues_the_sequence_as_keras():
    x = _x(2, 6, 5, 2)
    ours = layers.ConvLSTM1D(3, 2, stateful=True, return_sequences=True)
    whole = layers.ConvLSTM1D(3, 2, return_sequences=True)
    first = ours(x[:, :3])
    whole(x)
    whole.set_weights(ours.get_weights())
    second = ours(x[:, 3:])
    np.testing.assert_allclose(
        np.concatenate([first, second], axis=1), whole(x), atol=2e-5, rtol=1e-5
    )
    theirs = keras.layers.ConvLSTM1D(3, 2, stateful=True, return_sequences=True)
    theirs(x[:, :3])
    theirs.set_weights(ours.get_weights())
    theirs.reset_states()
    ours.reset_states()
    for part in (x[:, :3], x[:, 3:]):
        np.testing.assert_allclose(ours(part), theirs(part), atol=2e-5, rtol=1e-5)


def test_bidirectional_matches_keras():
    x = _x(2, 3, 5, 2)
    ours = layers.Bidirectional(layers.ConvLSTM1D(2, 3, return_sequences=True), merge_mode="sum")
    theirs = keras.layers.Bidirectional(
        keras.layers.ConvLSTM1D(2, 3, return_sequences=True), merge_mode="sum"
    )
    _same(ours, theirs, x)
    again = layers.Bidirectional.from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


def test_config_round_trip_and_keras_keys():
    ours = layers.ConvLSTM2D(4, (3, 2), strides=2, padding="same", dropout=0.1, seed=3)
    theirs = keras.layers.ConvLSTM2D(4, (3, 2), strides=2, padding="same", dropout=0.1, seed=3)
    config, keras_config = ours.get_config(), theirs.get_config()
    assert set(keras_config) - {"dtype"} == set(config) - {"dtype"}
    for key in ("filters", "strides", "padding", "dropout", "seed", "data_format", "unroll"):
        assert tuple(np.atleast_1d(config[key])) == tuple(np.atleast_1d(keras_config[key]))
    again = layers.ConvLSTM2D.from_config(config)
    assert again.get_config() == config


def _model(lib):
    return lib.Sequential(
        [
            lib.layers.Input((3, 5, 2)),
            lib.layers.ConvLSTM1D(2, 3, return_sequences=True),
            lib.layers.Reshape((3, 6)),
            lib.layers.Bidirectional(lib.layers.LSTM(2, return_sequences=True)),
            lib.layers.GRU(2),
            lib.layers.Dense(1),
        ]
    )


def test_keras_written_weights_and_models_load_and_back(tmp_path):
    """Keras's .weights.h5 layout: ``<layer>/cell/vars`` and Bidirectional's
    ``forward_layer/cell/vars``, ``backward_layer/cell/vars``; both ways."""
    x = _x(2, 3, 5, 2)
    theirs = _model(keras)
    theirs.save_weights(tmp_path / "k.weights.h5")
    ours = _model(phalanx)
    ours.build((None, 3, 5, 2))
    ours.load_weights(str(tmp_path / "k.weights.h5"))
    expected = theirs.predict(x, verbose=0)
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, atol=1e-5)
    ours.save_weights(str(tmp_path / "p.weights.h5"))
    fresh = _model(keras)
    fresh.load_weights(tmp_path / "p.weights.h5")
    np.testing.assert_allclose(fresh.predict(x, verbose=0), expected, atol=1e-5)
    ours.save(tmp_path / "p.keras")
    np.testing.assert_allclose(
        keras.models.load_model(tmp_path / "p.keras").predict(x, verbose=0), expected, atol=1e-5
    )
    theirs.save(tmp_path / "k.keras")
    back = phalanx.models.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), expected, atol=1e-5)


def test_unsupported_arguments_and_bad_shapes_raise():
    with pytest.raises(LayerArgumentError, match="strides > 1"):
        layers.ConvLSTM2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(LayerArgumentError, match="data_format='channels_first'"):
        layers.ConvLSTM2D(2, 3, data_format="channels_first")
    with pytest.raises(LayerArgumentError, match="padding must be"):
        layers.ConvLSTM1D(2, 3, padding="causal")
    with pytest.raises(LayerShapeError, match=r"rank 5 \(batch, timesteps, rows, cols, channels"):
        layers.ConvLSTM2D(2, 3)(np.ones((2, 3, 4, 1), np.float32))
    layer = layers.ConvLSTM2D(2, 3)
    layer(np.ones((1, 2, 4, 4, 1), np.float32))
    assert layer(np.ones((1, 5, 4, 4, 1), np.float32)).shape == (1, 2, 2, 2)  # any length
    with pytest.raises(LayerShapeError, match="was built for inputs of shape"):
        layer(np.ones((1, 2, 5, 4, 1), np.float32))


def test_fit_eight_replicas_equal_one():
    x = _x(32, 3, 6, 2)
    y = _x(32, 1)
    results = []
    for devices in (jax.devices()[:1], jax.devices()[:8]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            phalanx.utils.set_random_seed(3)
            model = phalanx.Sequential(
                [
                    layers.Input((3, 6, 2)),
                    layers.ConvLSTM1D(2, 3, padding="same"),
                    layers.Flatten(),
                    layers.Dense(1),
                ]
            )
            model.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights()))
    (loss_1, w_1), (loss_8, w_8) = results
    np.testing.assert_allclose(loss_1, loss_8, rtol=1e-5)
    for a, b in zip(w_1, w_8, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


def test_fit_with_regularizers_and_constraints_equals_keras():
    x, y = _x(4, 3, 5, 2), _x(4, 1)

    def model(lib):
        return lib.Sequential(
            [
                lib.layers.Input((3, 5, 2)),
                lib.layers.ConvLSTM1D(
                    2,
                    3,
                    kernel_regularizer="l2",
                    recurrent_regularizer=lib.regularizers.L2(0.1),
                    recurrent_constraint=lib.constraints.MaxNorm(0.5),
                ),
                lib.layers.Flatten(),
                lib.layers.Dense(1),
            ]
        )

    ours, theirs = model(phalanx), model(keras)
    ours.build((None, 3, 5, 2))
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    fit = dict(batch_size=4, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(
        ours.fit(x, y, **fit).history["loss"], theirs.fit(x, y, **fit).history["loss"], rtol=1e-5
    )
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
