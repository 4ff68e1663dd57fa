"""The new layers against Keras 3 (JAX backend): same weights in, same outputs out.

Keras is a test-only dependency (the dev extra); each test copies the phalanx
layer's weights into the Keras layer with ``set_weights`` (the same arrays in
the same order) and compares outputs, and checks that phalanx takes Keras's
argument names with Keras's defaults.
"""

import inspect
import os

import jax
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

from phalanx import layers  # noqa: E402

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _same(ours, theirs, *args, atol=1e-5, **kwargs):
    """Builds both on ``args``, copies our weights into Keras's, compares the outputs."""
    out = ours(*args, **kwargs)
    theirs(*args, **kwargs)
    weights = ours.get_weights()
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    theirs.set_weights(weights)
    expected = theirs(*args, **kwargs)
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=atol, rtol=1e-5)


@pytest.mark.parametrize(
    "config",
    [
        dict(num_heads=2, key_dim=4),
        dict(num_heads=3, key_dim=5, output_shape=7, use_bias=False),
        dict(num_heads=1, key_dim=8, dropout=0.3),  # dropout: inference output equal
    ],
)
def test_multi_head_attention_self_and_cross(config):
    x, y = _x(2, 4, 6), _x(2, 5, 6)
    _same(layers.MultiHeadAttention(**config), keras.layers.MultiHeadAttention(**config), x, x)
    _same(layers.MultiHeadAttention(**config), keras.layers.MultiHeadAttention(**config), x, y)


def test_multi_head_attention_masks_and_scores():
    x, y = _x(2, 4, 6), _x(2, 5, 6)
    mask = RNG.integers(0, 2, (2, 4, 5)).astype(bool)
    mask[:, :, 0] = True
    ours, theirs = layers.MultiHeadAttention(2, 3), keras.layers.MultiHeadAttention(2, 3)
    _same(ours, theirs, x, y, attention_mask=mask, return_attention_scores=True)
    ours, theirs = layers.MultiHeadAttention(2, 3), keras.layers.MultiHeadAttention(2, 3)
    _same(ours, theirs, x, x, use_causal_mask=True)
    _same(ours, theirs, x, x, key=x * 2.0, use_causal_mask=True)


@pytest.mark.parametrize(
    "config",
    [
        dict(filters=4, kernel_size=3),
        dict(filters=4, kernel_size=3, padding="same", strides=2),
        dict(filters=2, kernel_size=2, padding="causal", dilation_rate=2, activation="relu"),
        dict(filters=6, kernel_size=1, groups=3, use_bias=False),
    ],
)
def test_conv1d(config):
    x = _x(2, 9, 6)
    _same(layers.Conv1D(**config), keras.layers.Conv1D(**config), x)


@pytest.mark.parametrize(
    "name,shape,kwargs",
    [
        ("GlobalMaxPooling1D", (2, 7, 3), {}),
        ("GlobalMaxPooling1D", (2, 7, 3), {"keepdims": True}),
        ("GlobalAveragePooling1D", (2, 7, 3), {}),
        ("GlobalMaxPooling2D", (2, 5, 4, 3), {}),
        ("GlobalMaxPooling2D", (2, 5, 4, 3), {"keepdims": True}),
        ("ZeroPadding2D", (2, 3, 4, 2), {}),
        ("ZeroPadding2D", (2, 3, 4, 2), {"padding": 2}),
        ("ZeroPadding2D", (2, 3, 4, 2), {"padding": (1, 3)}),
        ("ZeroPadding2D", (2, 3, 4, 2), {"padding": ((0, 1), (2, 3))}),
        ("ZeroPadding1D", (2, 3, 2), {"padding": (2, 1)}),
    ],
)
def test_pooling_and_padding(name, shape, kwargs):
    x = _x(*shape)
    _same(getattr(layers, name)(**kwargs), getattr(keras.layers, name)(**kwargs), x)


@pytest.mark.parametrize(
    "name", ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"]
)
def test_merge_layers(name):
    a, b, c = _x(2, 3, 4), _x(2, 3, 4), _x(2, 3, 4)
    inputs = [a, b] if name == "Subtract" else [a, b, c]
    _same(getattr(layers, name)(), getattr(keras.layers, name)(), inputs)
    if name == "Concatenate":
        d = _x(2, 5, 4)
        _same(layers.Concatenate(axis=1), keras.layers.Concatenate(axis=1), [a, d])


@pytest.mark.parametrize(
    "name",
    [
        "MultiHeadAttention",
        "Conv1D",
        "GlobalMaxPooling1D",
        "GlobalAveragePooling1D",
        "GlobalMaxPooling2D",
        "ZeroPadding2D",
        "ZeroPadding1D",
        "Concatenate",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "GaussianDropout",
        "GaussianNoise",
    ],
)
def test_keras_argument_names_and_defaults(name):
    ours = inspect.signature(getattr(layers, name).__init__).parameters
    theirs = inspect.signature(getattr(keras.layers, name).__init__).parameters
    for arg, param in ours.items():
        if arg in ("self", "name", "input_shape", "dtype") or param.kind is param.VAR_KEYWORD:
            continue
        assert arg in theirs, f"{name}({arg}=) is not a Keras argument"
        if param.default is not param.empty and theirs[arg].default is not param.empty:
            assert param.default == theirs[arg].default, (name, arg)
    positional = [a for a, p in theirs.items() if a != "self" and p.default is p.empty]
    positional = [a for a in positional if theirs[a].kind is theirs[a].POSITIONAL_OR_KEYWORD]
    assert list(ours)[1 : 1 + len(positional)] == positional


def test_spatial_dropout_drops_whole_channels_in_training_only():
    x = np.ones((4, 6, 8), np.float32)
    layer = layers.SpatialDropout1D(0.5)
    np.testing.assert_array_equal(layer(x), x)
    out = np.asarray(layer(x, training=True, rngs=jax.random.key(0)))
    assert set(np.unique(out)) <= {0.0, 2.0}
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    img = np.ones((2, 3, 3, 16), np.float32)
    out2 = np.asarray(layers.SpatialDropout2D(0.5)(img, training=True, rngs=jax.random.key(1)))
    np.testing.assert_array_equal(out2, np.broadcast_to(out2[:, :1, :1], out2.shape))


def test_gaussian_noise_layers_statistics():
    x = np.ones((200, 500), np.float32)
    drop = np.asarray(layers.GaussianDropout(0.2)(x, training=True, rngs=jax.random.key(0)))
    assert abs(drop.mean() - 1.0) < 0.01 and abs(drop.std() - np.sqrt(0.2 / 0.8)) < 0.01
    noise = np.asarray(layers.GaussianNoise(0.3)(x, training=True, rngs=jax.random.key(0)))
    assert abs(noise.mean() - 1.0) < 0.01 and abs(noise.std() - 0.3) < 0.01
    np.testing.assert_array_equal(layers.GaussianNoise(0.3)(x), x)


def test_layers_in_a_functional_model_and_fit():
    import phalanx

    tokens = phalanx.Input(shape=(8, 6))
    h = layers.Conv1D(6, 3, padding="causal")(tokens)
    h = layers.SpatialDropout1D(0.1)(h)
    att = layers.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.1)(h, h)
    h = layers.GaussianNoise(0.01)(layers.Add()([h, att]))
    pooled = layers.Concatenate()(
        [layers.GlobalMaxPooling1D()(h), layers.GlobalAveragePooling1D()(h)]
    )
    out = layers.Dense(2, activation="softmax")(layers.GaussianDropout(0.1)(pooled))
    model = phalanx.Model(tokens, out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = _x(32, 8, 6), RNG.integers(0, 2, 32)
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    img = phalanx.Input(shape=(6, 6, 2))
    conv = layers.Conv2D(3, 3)(layers.ZeroPadding2D()(img))
    g = layers.GlobalMaxPooling2D()(layers.SpatialDropout2D(0.2)(conv))
    model2 = phalanx.Model(img, layers.Dense(1)(g))
    model2.compile(optimizer="sgd", loss="mse")
    model2.fit(_x(8, 6, 6, 2), _x(8, 1), batch_size=4, verbose=0)
