"""``Attention`` and ``AdditiveAttention`` against Keras 3 (JAX backend): outputs and attention
scores per option (masks, causal mask, key given or not, scale, score mode), gradients with
respect to the inputs and the weights, get_config/from_config, dropout, a functional model
trained as Keras's, two replicas equal to one, and bad arguments."""

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
Q = RNG.normal(size=(2, 3, 4)).astype(np.float32)
V = RNG.normal(size=(2, 5, 4)).astype(np.float32)
K = RNG.normal(size=(2, 5, 4)).astype(np.float32)
V6 = RNG.normal(size=(2, 5, 6)).astype(np.float32)  # value features differ from the query's
Q_MASK = np.array([[True, True, False], [True, False, True]])
V_MASK = np.array([[True, True, True, False, False], [True, False, True, True, True]])
SELF = RNG.normal(size=(2, 5, 4)).astype(np.float32)

CASES = [
    ("Attention", {}, [Q, V], {}),
    ("Attention", dict(use_scale=True), [Q, V, K], {}),
    ("Attention", dict(score_mode="concat"), [Q, V], dict(mask=[Q_MASK, V_MASK])),
    ("Attention", dict(use_scale=True, score_mode="concat"), [Q, V, K], {}),
    ("Attention", dict(use_scale=True), [Q, V6, K], dict(mask=[None, V_MASK])),
    ("Attention", {}, [SELF, SELF], dict(use_causal_mask=True, mask=[V_MASK, V_MASK])),
    ("Attention", dict(use_scale=True), [SELF, SELF], dict(use_causal_mask=True)),
    ("AdditiveAttention", {}, [Q, V], {}),
    ("AdditiveAttention", dict(use_scale=False), [Q, V, K], dict(mask=[Q_MASK, V_MASK])),
    ("AdditiveAttention", {}, [SELF, SELF], dict(use_causal_mask=True, mask=[None, V_MASK])),
]


def _pair(name, config, inputs):
    ours = getattr(layers, name)(**config)
    theirs = getattr(keras.layers, name)(**config)
    ours([jnp.asarray(a) for a in inputs])
    theirs(inputs)
    if ours.get_weights():
        theirs.set_weights(ours.get_weights())
    return ours, theirs


def _loss(out):
    return jnp.sum(jnp.sin(3.0 * out[0])) + jnp.sum(jnp.cos(2.0 * out[1]))


@pytest.mark.parametrize(
    "name, config, inputs, options", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_outputs_scores_and_gradients_match_keras(name, config, inputs, options):
    ours, theirs = _pair(name, config, inputs)
    assert [(w.path.split("/")[-1], tuple(w.shape)) for w in ours.weights] == [
        (w.name, tuple(w.shape)) for w in theirs.weights
    ]
    out, scores = ours(inputs, return_attention_scores=True, **options)
    k_out, k_scores = theirs(inputs, return_attention_scores=True, **options)
    np.testing.assert_allclose(np.asarray(out), np.asarray(k_out), atol=2e-5, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(scores), np.asarray(k_scores), atol=2e-6, rtol=1e-5)
    plain = ours(inputs, **options)
    np.testing.assert_allclose(np.asarray(plain), np.asarray(out), atol=1e-6)
    mask = options.get("mask")
    expected = None if mask is None or mask[0] is None else np.asarray(mask[0])
    got = ours.compute_mask(inputs, mask)
    assert (got is None) == (expected is None) and (got is None or (got == expected).all())

    # gradients with respect to the inputs (traced through nnx.split/merge) and the weights
    graphdef, state = nnx.split(ours)

    def forward(xs):
        return _loss(nnx.merge(graphdef, state)(xs, return_attention_scores=True, **options))

    xs = [jnp.asarray(a) for a in inputs]
    grads = jax.grad(forward)(xs)
    k_grads = jax.grad(lambda a: _loss(theirs(a, return_attention_scores=True, **options)))(xs)
    for a, b in zip(grads, k_grads, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=5e-5, rtol=1e-4)
    if ours.trainable_weights:
        graphdef, params, rest = nnx.split(ours, nnx.Param, ...)
        mine = jax.grad(
            lambda p: _loss(
                nnx.merge(graphdef, p, rest)(xs, return_attention_scores=True, **options)
            )
        )(params)
        weights = [v.value for v in theirs.trainable_variables]
        k_weight_grads = jax.grad(
            lambda t: _loss(
                theirs.stateless_call(t, [], xs, return_attention_scores=True, **options)[0]
            )
        )(weights)
        for a, b in zip(_weights.state_to_list(mine), k_weight_grads, strict=True):
            np.testing.assert_allclose(a, np.asarray(b), atol=5e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "name, config",
    [
        ("Attention", dict(use_scale=True, score_mode="concat", dropout=0.25, seed=3)),
        ("AdditiveAttention", dict(use_scale=False, dropout=0.5, seed=1337)),
    ],
)
def test_config_round_trip_as_keras(name, config):
    ours = getattr(layers, name)(**config)
    theirs = getattr(keras.layers, name)(**config)
    assert set(ours.get_config()) == set(theirs.get_config())
    for key, value in config.items():
        assert ours.get_config()[key] == theirs.get_config()[key] == value
    again = getattr(layers, name).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()
    built = getattr(layers, name)(**config)
    built([Q, V])
    assert set(built.get_config()) == set(theirs.get_config())


def test_initial_weights_as_keras():
    layer = layers.Attention(use_scale=True, score_mode="concat")
    layer([Q, V])
    assert [w.path for w in layer.weights] == ["attention/scale", "attention/concat_score_weight"]
    assert [w.tolist() for w in layer.get_weights()] == [1.0, 1.0]
    assert layers.Attention()([Q, V]) is not None and layers.Attention().scale is None
    additive = layers.AdditiveAttention()
    additive([Q, V])
    (scale,) = additive.get_weights()
    limit = np.sqrt(6.0 / 8.0)  # Keras's glorot uniform for a vector of 4: fan in = fan out = 4
    assert scale.shape == (4,) and np.all(np.abs(scale) <= limit) and np.std(scale) > 0


def test_dropout_on_the_distribution_in_training():
    layer = layers.Attention(dropout=0.5, seed=7)
    plain, probs = layer([Q, V], return_attention_scores=True)
    same, _ = layer([Q, V], return_attention_scores=True, training=False, rngs=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(plain), np.asarray(same))
    key = jax.random.key(1)
    out, dropped = layer([Q, V], return_attention_scores=True, training=True, rngs=key)
    again, _ = layer([Q, V], return_attention_scores=True, training=True, rngs=key)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(again))  # one key, one draw
    dropped, probs = np.asarray(dropped), np.asarray(probs)
    kept = dropped != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(dropped[kept], 2.0 * probs[kept], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out), dropped @ V, atol=1e-5)
    with pytest.raises(ValueError, match="needs a random key"):
        layers.Attention(dropout=0.5)([Q, V], training=True)


def test_nd_inputs_and_symbolic_scores_as_keras():
    x = RNG.normal(size=(2, 3, 6, 4)).astype(np.float32)
    ours, theirs = _pair("Attention", {}, [x, x])
    out, scores = ours([x, x], return_attention_scores=True)
    assert out.shape == (2, 3, 6, 4) and scores.shape == (2, 3, 6, 6)
    np.testing.assert_allclose(np.asarray(out), np.asarray(theirs([x, x])), atol=2e-5)
    q, v = phalanx.Input((3, 5)), phalanx.Input((4, 5))
    out, scores = layers.Attention()([q, v], return_attention_scores=True)
    assert tuple(out.shape) == (None, 3, 5) and tuple(scores.shape) == (None, 3, 4)
    assert tuple(layers.Attention()([q, v]).shape) == (None, 3, 5)


def _functional(lib):
    tokens = lib.Input((5,), dtype="int32")
    x = lib.layers.Embedding(12, 4)(tokens)
    query = lib.layers.Dense(4)(x)
    attended = lib.layers.Attention(use_scale=True, score_mode="concat")(
        [query, x], use_causal_mask=True
    )
    additive = lib.layers.AdditiveAttention()([attended, x, query])
    pooled = lib.layers.GlobalAveragePooling1D()(additive)
    return lib.Model(tokens, lib.layers.Dense(1)(pooled))


def test_functional_model_trains_as_keras():
    tokens = RNG.integers(0, 12, (8, 5)).astype(np.int32)
    y = RNG.normal(size=(8, 1)).astype(np.float32)
    ours, theirs = _functional(phalanx), _functional(keras)
    ours.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ours.build((None, 5))
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(
        ours.predict(tokens, verbose=0), theirs.predict(tokens, verbose=0), atol=2e-5
    )
    mine = ours.fit(tokens, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    keras_history = theirs.fit(tokens, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(mine.history["loss"], keras_history.history["loss"], rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4)


def test_fit_two_replicas_equal_one():
    tokens = RNG.integers(0, 12, (16, 5)).astype(np.int32)
    y = RNG.normal(size=(16, 1)).astype(np.float32)
    runs = []
    for devices in (jax.devices()[:1], jax.devices()[:2]):
        with phalanx.MirroredStrategy(devices=devices).scope():
            phalanx.utils.set_random_seed(0)
            model = _functional(phalanx)
            model.compile(optimizer="sgd", loss="mse")
        history = model.fit(tokens, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        runs.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_bad_arguments_raise_as_keras():
    x = np.ones((1, 2, 2), np.float32)
    for lib in (layers, keras.layers):
        with pytest.raises(ValueError, match="Invalid value for argument score_mode"):
            lib.Attention(score_mode="product")
        with pytest.raises(ValueError, match="must be called on a list"):
            lib.Attention()(x)
        with pytest.raises(ValueError, match="length 2 or 3"):
            lib.Attention()([x, x, x, x])
        with pytest.raises(ValueError, match="layer mask must be a list"):
            lib.Attention()([x, x], mask=x)
        with pytest.raises(ValueError, match="length 2 or 3"):
            lib.Attention()([x, x], mask=[x])
    with pytest.raises(LayerArgumentError, match="dropout must be a fraction"):
        layers.AdditiveAttention(dropout=1.5)
    with pytest.raises(LayerArgumentError, match="seed must be an int"):
        layers.Attention(seed="1")
    with pytest.raises(LayerShapeError, match="key and value of one length"):
        layers.Attention()([Q, V, K[:, :4]])
    with pytest.raises(LayerShapeError, match="query and key of one feature size"):
        layers.Attention()([Q, V6])


def test_embedding_masks_flow_into_attention_as_keras():
    tokens = RNG.integers(1, 12, (3, 6)).astype(np.int32)
    tokens[0, 4:] = 0
    tokens[1, 1:] = 0

    def build(lib):
        inputs = lib.Input((6,), dtype="int32")
        x = lib.layers.Embedding(12, 4, mask_zero=True)(inputs)
        attended, _ = lib.layers.Attention()([x, x], return_attention_scores=True)
        additive = lib.layers.AdditiveAttention()([attended, x])
        return lib.Model(inputs, lib.layers.GlobalAveragePooling1D()(additive))

    ours, theirs = build(phalanx), build(keras)
    ours.build((None, 6))
    theirs.set_weights(ours.get_weights())
    out = ours.predict(tokens, verbose=0)
    np.testing.assert_allclose(out, np.asarray(theirs(tokens)), atol=2e-5, rtol=1e-5)
    plain = build(phalanx)
    plain.layers[1].mask_zero = False
    plain.build((None, 6))
    plain.set_weights(ours.get_weights())
    assert not np.allclose(plain.predict(tokens, verbose=0)[:2], out[:2], atol=1e-4)


def test_keras_files_open_in_keras_and_back(tmp_path):
    tokens = RNG.integers(0, 12, (3, 5)).astype(np.int32)

    def build(lib):
        inputs = lib.Input((5,), dtype="int32")
        x = lib.layers.Embedding(12, 4, mask_zero=True)(inputs)
        query = lib.layers.EinsumDense("abc,cd->abd", (5, 4), bias_axes="d")(x)
        attended = lib.layers.Attention(use_scale=True, score_mode="concat")(
            [query, x], use_causal_mask=True
        )
        additive = lib.layers.AdditiveAttention()([attended, x, query])
        pooled = lib.layers.GlobalAveragePooling1D()(additive)
        return lib.Model(inputs, lib.layers.Dense(1)(pooled))

    ours = build(phalanx)
    ours.build((None, 5))
    ours.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(
        theirs.predict(tokens, verbose=0), ours.predict(tokens, verbose=0), atol=1e-6
    )
    keras_model = build(keras)
    keras_model.save(tmp_path / "theirs.keras")
    back = phalanx.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(
        back.predict(tokens, verbose=0), keras_model.predict(tokens, verbose=0), atol=1e-6
    )
