"""The layers of issue 25 item 2 against Keras 3 (JAX backend): forward, gradients with
respect to the input and to the weights, get_config/from_config, bad arguments; and per
family a small model trained on 2 replicas equals one device."""

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
SEQ = RNG.normal(size=(2, 9, 4)).astype(np.float32)
IMG = RNG.normal(size=(2, 7, 6, 4)).astype(np.float32)
FLAT = RNG.normal(loc=2.0, size=(3, 8)).astype(np.float32)
VOL = RNG.normal(size=(2, 5, 6, 4, 3)).astype(np.float32)

CASES = [
    ("Conv1DTranspose", dict(filters=3, kernel_size=3, strides=2), SEQ),
    ("Conv1DTranspose", dict(filters=2, kernel_size=4, strides=2, padding="same"), SEQ),
    ("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"), IMG),
    (
        "Conv2DTranspose",
        dict(filters=2, kernel_size=(3, 2), strides=(2, 1), output_padding=(1, 0)),
        IMG,
    ),
    ("Conv2DTranspose", dict(filters=2, kernel_size=3, dilation_rate=2, activation="relu"), IMG),
    ("DepthwiseConv1D", dict(kernel_size=3, depth_multiplier=2), SEQ),
    ("DepthwiseConv2D", dict(kernel_size=3, padding="same", strides=2), IMG),
    ("SeparableConv1D", dict(filters=5, kernel_size=3, padding="same"), SEQ),
    ("SeparableConv2D", dict(filters=5, kernel_size=3, depth_multiplier=2, activation="tanh"), IMG),
    ("SeparableConv2D", dict(filters=3, kernel_size=2, strides=2, use_bias=False), IMG),
    ("MaxPooling1D", dict(), SEQ),
    ("MaxPooling1D", dict(pool_size=3, strides=1, padding="same"), SEQ),
    ("AveragePooling1D", dict(pool_size=2, padding="same"), SEQ),
    ("AveragePooling1D", dict(pool_size=3, strides=2), SEQ),
    ("GlobalMaxPooling1D", dict(), SEQ),
    ("GlobalAveragePooling1D", dict(keepdims=True), SEQ),
    ("MaxPooling2D", dict(pool_size=3, strides=2, padding="same"), IMG),
    ("GlobalMaxPooling2D", dict(keepdims=True), IMG),
    ("UpSampling1D", dict(size=3), SEQ),
    ("UpSampling2D", dict(size=(2, 3)), IMG),
    ("UpSampling2D", dict(size=2, interpolation="bilinear"), IMG),
    ("ZeroPadding1D", dict(padding=(1, 2)), SEQ),
    ("Cropping1D", dict(cropping=(2, 1)), SEQ),
    ("Cropping2D", dict(cropping=((1, 2), (0, 1))), IMG),
    ("Cropping2D", dict(cropping=1), IMG),
    ("PReLU", dict(alpha_initializer="random_uniform"), IMG),
    ("PReLU", dict(alpha_initializer="random_uniform", shared_axes=[1, 2]), IMG),
    ("GroupNormalization", dict(groups=2, gamma_initializer="random_uniform"), IMG),
    ("GroupNormalization", dict(groups=-1, epsilon=1e-2), SEQ),
    ("GroupNormalization", dict(groups=1, center=False), SEQ),
    ("RMSNormalization", dict(), SEQ),
    ("RMSNormalization", dict(axis=[-2, -1], epsilon=1e-3), IMG),
    ("UnitNormalization", dict(), SEQ),
    ("UnitNormalization", dict(axis=[1, 2]), IMG),
    ("AlphaDropout", dict(rate=0.3), FLAT),
    ("ActivityRegularization", dict(l1=0.1, l2=0.01), FLAT),
    ("Rescaling", dict(scale=1 / 255.0, offset=-1.0), IMG),
    ("Resizing", dict(height=4, width=9), IMG),
    ("Resizing", dict(height=3, width=3, interpolation="nearest"), IMG),
    ("CenterCrop", dict(height=5, width=4), IMG),
    ("CenterCrop", dict(height=9, width=4), IMG),
    ("Normalization", dict(mean=[1.0, 2.0, 0.5, -1.0], variance=[4.0, 1.0, 0.25, 2.0]), SEQ),
    ("Normalization", dict(mean=2.0, variance=3.0, invert=True), FLAT),
    ("Conv3D", dict(filters=3, kernel_size=3), VOL),
    ("Conv3D", dict(filters=4, kernel_size=(2, 3, 1), strides=(1, 2, 2), padding="same"), VOL),
    ("Conv3D", dict(filters=2, kernel_size=2, dilation_rate=2, activation="relu"), VOL),
    ("Conv3D", dict(filters=4, kernel_size=1, groups=2, use_bias=False), VOL.repeat(2, -1)),
    ("Conv3DTranspose", dict(filters=2, kernel_size=3, strides=2, padding="same"), VOL),
    ("Conv3DTranspose", dict(filters=3, kernel_size=(2, 3, 3), strides=(1, 2, 1)), VOL),
    (
        "Conv3DTranspose",
        dict(filters=2, kernel_size=3, strides=2, output_padding=(1, 0, 1), activation="tanh"),
        VOL,
    ),
    ("UpSampling3D", dict(), VOL),
    ("UpSampling3D", dict(size=(1, 2, 3)), VOL),
    ("ZeroPadding3D", dict(), VOL),
    ("ZeroPadding3D", dict(padding=2), VOL),
    ("ZeroPadding3D", dict(padding=((1, 0), (0, 2), (3, 1))), VOL),
    ("Cropping3D", dict(), VOL),
    ("Cropping3D", dict(cropping=(2, 1, 0)), VOL),
    ("Cropping3D", dict(cropping=((1, 2), (0, 3), (1, 0))), VOL),
    ("MaxPooling3D", dict(), VOL),
    ("MaxPooling3D", dict(pool_size=(2, 3, 2), strides=1, padding="same"), VOL),
    ("AveragePooling3D", dict(pool_size=2, strides=(1, 2, 1)), VOL),
    ("AveragePooling3D", dict(pool_size=3, padding="same"), VOL),
    ("GlobalMaxPooling3D", dict(), VOL),
    ("GlobalAveragePooling3D", dict(keepdims=True), VOL),
    ("SpatialDropout3D", dict(rate=0.5), VOL),
]


def _ours_and_theirs(name, config, x):
    ours = getattr(layers, name)(**config)
    theirs = getattr(keras.layers, name)(**config)
    ours(jnp.asarray(x))
    theirs(x)
    if ours.get_weights():
        theirs.set_weights(ours.get_weights())
    return ours, theirs


def _loss(y):
    return jnp.sum(jnp.sin(3.0 * y))


def _weight_grads(ours, theirs, x):
    graphdef, params, rest = nnx.split(ours, nnx.Param, ...)
    mine = jax.grad(lambda p: _loss(nnx.merge(graphdef, p, rest)(jnp.asarray(x))))(params)
    trainable = [v.value for v in theirs.trainable_variables]
    fixed = [v.value for v in theirs.non_trainable_variables]
    keras_grads = jax.grad(lambda t: _loss(theirs.stateless_call(t, fixed, x)[0]))(trainable)
    return _weights.state_to_list(mine), [np.asarray(g) for g in keras_grads]


@pytest.mark.parametrize("name, config, x", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_forward_and_gradients_match_keras(name, config, x):
    ours, theirs = _ours_and_theirs(name, config, x)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), atol=2e-5, rtol=1e-5)
    if name == "ActivityRegularization":
        np.testing.assert_allclose(float(ours.losses[0]), float(theirs.losses[0]), rtol=1e-5)
    graphdef, state = nnx.split(ours)  # merged inside the traced function, as custom loops

    def forward(a):
        return _loss(nnx.merge(graphdef, jax.tree.map(lambda v: v, state))(a))

    grad = jax.grad(forward)(jnp.asarray(x))
    keras_grad = jax.grad(lambda a: _loss(theirs(a)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), np.asarray(keras_grad), atol=5e-5, rtol=1e-4)
    if ours.trainable_weights:
        mine, keras_grads = _weight_grads(ours, theirs, x)
        for a, b in zip(mine, keras_grads, strict=True):
            np.testing.assert_allclose(a, b, atol=5e-5, rtol=1e-4)
    config_out = ours.get_config()
    for key in config:
        assert key in config_out and key in theirs.get_config(), key
    again = type(ours).from_config(config_out)
    again(jnp.asarray(x))
    if ours.get_weights():
        again.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(ours(x)), atol=1e-6)


def test_alpha_dropout_training_keeps_moments_and_dropped_value():
    x = jnp.asarray(RNG.normal(size=(200, 100)).astype(np.float32))
    out = layers.AlphaDropout(0.3)(x, training=True, rngs=jax.random.key(0))
    assert abs(float(out.mean())) < 0.05 and abs(float(out.std()) - 1.0) < 0.05
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.3) * (1 + 0.3 * alpha_p**2)) ** -0.5
    dropped = a * alpha_p - a * alpha_p * 0.3
    assert 0.25 < float(jnp.mean(jnp.isclose(out, dropped))) < 0.35


def test_normalization_adapt_matches_keras():
    data = RNG.normal(loc=3.0, scale=2.0, size=(50, 3, 4)).astype(np.float32)
    for axis in (-1, (1, 2), None):
        ours, theirs = layers.Normalization(axis=axis), keras.layers.Normalization(axis=axis)
        ours.adapt(phalanx.data.Dataset.from_tensor_slices(data).batch(16))
        theirs.adapt(data)
        np.testing.assert_allclose(np.asarray(ours(data)), np.asarray(theirs(data)), atol=1e-4)
        assert [w.name for w in ours.weights] == ["mean", "variance"]
        assert not ours.trainable_weights


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
def test_category_encoding_matches_keras(mode):
    x = np.array([[0, 3], [2, 2], [1, 0]])
    ours, theirs = layers.CategoryEncoding(5, mode), keras.layers.CategoryEncoding(5, mode)
    np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(theirs(x)))
    one = np.array([[1], [4]])
    np.testing.assert_array_equal(np.asarray(ours(one)), np.asarray(theirs(one)))
    if mode == "count":
        w = np.array([[0.5, 2.0], [1.0, 1.0], [3.0, 0.0]], np.float32)
        np.testing.assert_allclose(
            np.asarray(ours(x, count_weights=w)), np.asarray(theirs(x, count_weights=w))
        )


def test_lambda_in_models_and_config():
    inputs = phalanx.Input((4,))
    double = layers.Lambda(lambda x, scale: x * scale, arguments={"scale": 2.0})
    model = phalanx.Model(inputs, layers.Dense(2)(double(inputs)))
    assert model.layers[1].output_shape == (4,)
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(model.predict(x, verbose=0), model.layers[-1](2 * x), atol=1e-6)
    again = layers.Lambda.from_config(double.get_config())
    np.testing.assert_array_equal(np.asarray(again(x)), 2 * x)
    concat = layers.Lambda(lambda x: jnp.concatenate([x, x], axis=-1))
    assert concat.compute_output_shape((4,)) == (8,)


def test_bad_arguments_raise():
    with pytest.raises(LayerArgumentError, match="output_padding"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="kernel_constraint='typo'"):
        layers.Conv2DTranspose(2, 3, kernel_constraint="typo")
    with pytest.raises(LayerArgumentError, match="depth_multiplier"):
        layers.DepthwiseConv2D(3, depth_multiplier=0)
    with pytest.raises(LayerArgumentError, match="groups"):
        layers.GroupNormalization(groups=0)
    with pytest.raises(phalanx.errors.LayerShapeError, match="must divide"):
        layers.GroupNormalization(groups=3)(IMG)
    with pytest.raises(LayerArgumentError, match="interpolation"):
        layers.UpSampling2D(interpolation="area")
    with pytest.raises(LayerArgumentError, match="crop_to_aspect_ratio"):
        layers.Resizing(4, 4, crop_to_aspect_ratio=True)
    with pytest.raises(LayerArgumentError, match="both mean= and variance="):
        layers.Normalization(mean=1.0)
    with pytest.raises(LayerArgumentError, match="shared_axes"):
        layers.PReLU(shared_axes=[0])
    with pytest.raises(phalanx.errors.LayerShapeError, match="nothing would be left"):
        layers.Cropping1D((5, 5))(SEQ)


FAMILIES = {
    "convolutions": lambda: [
        layers.Input((6, 6, 2)),
        layers.Conv2DTranspose(3, 3, strides=2, padding="same"),
        layers.SeparableConv2D(4, 3, activation="relu"),
        layers.DepthwiseConv2D(3, depth_multiplier=2),
        layers.Flatten(),
        layers.Dense(1),
    ],
    "pooling_reshaping": lambda: [
        layers.Input((6, 6, 2)),
        layers.Cropping2D(1),
        layers.UpSampling2D(2),
        layers.Reshape((64, 2)),
        layers.MaxPooling1D(2),
        layers.AveragePooling1D(2),
        layers.UpSampling1D(2),
        layers.Cropping1D((1, 1)),
        layers.GlobalMaxPooling1D(),
        layers.Dense(1),
    ],
    "normalization_preprocessing": lambda: [
        layers.Input((6, 6, 2)),
        layers.Rescaling(0.5, 0.1),
        layers.CenterCrop(4, 4),
        layers.Normalization(mean=0.2, variance=2.0),
        layers.Conv2D(4, 3),
        layers.GroupNormalization(groups=2),
        layers.PReLU(),
        layers.Flatten(),
        layers.RMSNormalization(),
        layers.UnitNormalization(),
        layers.ActivityRegularization(l2=0.01),
        layers.AlphaDropout(0.0),
        layers.Dense(1),
    ],
}


@pytest.mark.slow  # one fit per family (3 small models, 2 runs each): the replicas-vs-one check
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fit_two_replicas_equal_one(family):
    x = RNG.normal(size=(16, 6, 6, 2)).astype(np.float32)
    y = RNG.normal(size=(16, 1)).astype(np.float32)
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:2]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            phalanx.utils.set_random_seed(0)
            model = phalanx.Sequential(FAMILIES[family]())
            model.compile(optimizer="sgd", loss="mse")
        history = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_string_and_integer_lookup_as_keras_docs():
    # Keras 3's StringLookup/IntegerLookup need TensorFlow (not a test dependency): the
    # expected values are the examples of keras.io/api/layers/preprocessing_layers/categorical/
    data = np.array([[b"a", b"c", b"d"], [b"d", b"z", b"b"]])
    lookup = layers.StringLookup(vocabulary=["a", "b", "c", "d"])
    assert lookup(data).tolist() == [[1, 3, 4], [4, 0, 2]]
    learned = layers.StringLookup()
    learned.adapt(data)
    assert learned.get_vocabulary() == ["[UNK]", "d", "z", "c", "b", "a"]
    masked = layers.StringLookup(vocabulary=["a", "b", "c", "d"], mask_token="")
    assert masked(np.array([[b"a", b"", b"q"]])).tolist() == [[2, 0, 1]]
    multi = layers.StringLookup(vocabulary=["a", "b", "c", "d"], output_mode="multi_hot")
    words = np.array([[b"a", b"c", b"d", b"d"], [b"d", b"z", b"b", b"z"]])
    assert multi(words).tolist() == [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]
    count = layers.StringLookup(vocabulary=["a", "b", "c", "d"], output_mode="count")
    assert count(words).tolist() == [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]]
    inverse = layers.StringLookup(vocabulary=["a", "b", "c", "d"], invert=True)
    assert inverse(np.array([[1, 3, 4], [4, 0, 2]])).tolist() == [
        [b"a", b"c", b"d"],
        [b"d", b"[UNK]", b"b"],
    ]
    ints = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    assert ints(np.array([[12, 1138, 42], [42, 1000, 36]])).tolist() == [[1, 3, 4], [4, 0, 2]]
    adapted = layers.IntegerLookup()
    adapted.adapt(np.array([[12, 1138, 42], [42, 1000, 36]]))
    assert adapted.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]
    again = layers.StringLookup.from_config(masked.get_config())
    assert again.get_vocabulary() == masked.get_vocabulary()
    pipeline = phalanx.data.Dataset.from_tensor_slices(data[0]).batch(2).map(lookup)
    assert [b.tolist() for b in pipeline] == [[1, 3], [4]]
    with pytest.raises(LayerArgumentError, match="num_oov_indices=-1"):
        layers.StringLookup(num_oov_indices=-1)
    with pytest.raises(LayerArgumentError, match="input pipeline"):
        jax.jit(lambda a: layers.IntegerLookup(vocabulary=[1])(a))(jnp.ones(2, jnp.int32))


def test_keras_files_open_in_keras_and_back(tmp_path):
    x = RNG.random((2, 6, 6, 2)).astype(np.float32)
    ours = phalanx.Sequential(
        [
            layers.Input((6, 6, 2)),
            layers.SeparableConv2D(3, 3),
            layers.GroupNormalization(groups=1),
            layers.PReLU(),
            layers.Conv2DTranspose(2, 3, strides=2),
            layers.Flatten(),
            layers.Normalization(mean=1.0, variance=2.0),
            layers.Dense(1),
        ]
    )
    ours.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0), atol=1e-6)
    keras_model = keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            keras.layers.DepthwiseConv2D(3),
            keras.layers.RMSNormalization(),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )
    keras_model.save(tmp_path / "theirs.keras")
    back = phalanx.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(
        back.predict(x, verbose=0), keras_model.predict(x, verbose=0), atol=1e-6
    )


def test_global_average_pooling_1d_takes_the_mask_as_keras():
    tokens = np.array([[3, 5, 0, 0], [1, 2, 7, 0], [4, 0, 0, 0]])

    def stack(lib):
        return [
            lib.layers.Input((4,), dtype="int32"),
            lib.layers.Embedding(9, 3, mask_zero=True),
            lib.layers.GlobalAveragePooling1D(),
            lib.layers.Dense(2),
        ]

    ours, theirs = phalanx.Sequential(stack(phalanx)), keras.Sequential(stack(keras))
    ours.build((None, 4))
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(
        ours.predict(tokens, verbose=0), theirs.predict(tokens, verbose=0), atol=1e-6
    )
    seq = SEQ[:, :4]
    mask = tokens[:2] != 0
    np.testing.assert_allclose(
        np.asarray(layers.GlobalAveragePooling1D()(seq, mask=mask)),
        np.asarray(keras.layers.GlobalAveragePooling1D()(seq, mask=mask)),
        atol=1e-6,
    )


def test_spatial_dropout_3d_drops_whole_channels():
    out = layers.SpatialDropout3D(0.5)(jnp.ones(VOL.shape), training=True, rngs=jax.random.key(1))
    kept = np.asarray(out[:, :1, :1, :1, :])
    assert set(np.unique(kept)) == {0.0, 2.0}
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to(kept, VOL.shape))


def test_3d_layers_refuse_as_keras():
    # keras/src/layers/**/*_test.py: the raising cases
    for bad in ((1, 2), ((1, 2), (1, 2)), "a", (1, 2, -1)):
        with pytest.raises(ValueError):
            keras.layers.ZeroPadding3D(padding=bad)
        with pytest.raises(LayerArgumentError, match="ZeroPadding3D"):
            layers.ZeroPadding3D(padding=bad)
    for bad in ((1, 2), "a", -1):
        with pytest.raises(ValueError):
            keras.layers.Cropping3D(cropping=bad)
        with pytest.raises(LayerArgumentError, match="Cropping3D"):
            layers.Cropping3D(cropping=bad)
    with pytest.raises(ValueError):
        keras.layers.Cropping3D(cropping=3)(VOL)
    with pytest.raises(LayerShapeError, match="nothing would be left"):
        layers.Cropping3D(cropping=3)(jnp.asarray(VOL))
    with pytest.raises(LayerArgumentError, match="kernel_size"):
        layers.Conv3D(2, (3, 3))
    with pytest.raises(LayerArgumentError, match="dilation_rate > 1"):
        layers.Conv3D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(LayerArgumentError, match="NDHWC"):
        layers.Conv3D(2, 3, data_format="channels_first")
    with pytest.raises(LayerArgumentError, match="NDHWC"):
        layers.SpatialDropout3D(0.5, data_format="channels_first")
    with pytest.raises(LayerShapeError, match="depth, height, width"):
        layers.Conv3D(2, 3)(jnp.asarray(IMG))
    with pytest.raises(LayerShapeError):
        layers.UpSampling3D()(jnp.asarray(IMG))


def _volume_model(lib):
    inputs = (phalanx if lib is phalanx else keras).Input((5, 6, 4, 3))
    x = lib.layers.Conv3D(4, 3, padding="same", activation="relu")(inputs)
    x = lib.layers.MaxPooling3D(pool_size=(1, 2, 2))(x)
    x = lib.layers.Conv3DTranspose(2, 2, strides=(1, 2, 2))(x)
    x = lib.layers.Cropping3D(((0, 1), (1, 1), (1, 0)))(lib.layers.ZeroPadding3D(1)(x))
    x = lib.layers.UpSampling3D((1, 1, 2))(x)
    outputs = lib.layers.Dense(1)(lib.layers.GlobalAveragePooling3D()(x))
    return (phalanx if lib is phalanx else keras).Model(inputs, outputs)


def test_volume_model_files_and_fit_match_keras(tmp_path):
    ours, theirs = _volume_model(phalanx), _volume_model(keras)
    theirs.set_weights(ours.get_weights())
    y = RNG.normal(size=(2, 1)).astype(np.float32)
    np.testing.assert_allclose(
        ours.predict(VOL, verbose=0), theirs.predict(VOL, verbose=0), atol=1e-5
    )
    path = str(tmp_path / "volume.keras")
    ours.save(path)
    back = keras.models.load_model(path)
    np.testing.assert_allclose(
        back.predict(VOL, verbose=0), theirs.predict(VOL, verbose=0), atol=1e-5
    )
    path = str(tmp_path / "keras_volume.keras")
    theirs.save(path)
    again = phalanx.models.load_model(path)
    np.testing.assert_allclose(
        again.predict(VOL, verbose=0), theirs.predict(VOL, verbose=0), atol=1e-5
    )
    weights = str(tmp_path / "volume.weights.h5")
    theirs.save_weights(weights)
    fresh = _volume_model(phalanx)
    fresh.load_weights(weights)
    for a, b in zip(fresh.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_array_equal(a, np.asarray(b))
    for m, lib in ((ours, phalanx), (theirs, keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
    h = [m.fit(VOL, y, batch_size=2, epochs=3, verbose=0).history["loss"] for m in (ours, theirs)]
    np.testing.assert_allclose(h[0], h[1], rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, np.asarray(b), atol=1e-5)


@pytest.mark.slow  # two fits of a volume model
def test_volume_model_eight_replicas_equal_one():
    x = RNG.normal(size=(16, 5, 6, 4, 3)).astype(np.float32)
    y = RNG.normal(size=(16, 1)).astype(np.float32)
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:8]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            model = _volume_model(phalanx)
            model.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
