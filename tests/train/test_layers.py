"""Layers and Sequential: shapes, Keras parameter counts, errors, logits, dropout keys, BN state."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from phalanx import layers
from phalanx.errors import LayerShapeError, NotBuiltError
from phalanx.train import NON_TRAINABLE, TRAINABLE, Logits, split_state
from phalanx.train import SequentialNetwork as Sequential


def mlp(**kwargs):
    return Sequential(
        [
            layers.Input(shape=(784,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ],
        **kwargs,
    )


def test_mlp_params_names_and_shapes_match_keras():
    net = mlp()
    assert net.build() == (10,)
    assert [layer.name for layer in net.layers] == ["dense", "dense_1"]
    assert [layer.count_params() for layer in net.layers] == [100480, 1290]
    assert net.count_params() == 101770
    assert net(jnp.ones((3, 784))).shape == (3, 10)


def test_convnet_params_match_keras_mnist_example():
    # Keras's "Simple MNIST convnet" example: 34,826 parameters.
    net = Sequential(
        [
            layers.Input(shape=(28, 28, 1)),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ]
    )
    net.build()
    assert [layer.output_shape for layer in net.layers] == [
        (26, 26, 32),
        (13, 13, 32),
        (11, 11, 64),
        (5, 5, 64),
        (1600,),
        (1600,),
        (10,),
    ]
    assert net.count_params() == 34826
    assert net(jnp.ones((2, 28, 28, 1))).shape == (2, 10)


def test_other_layers_shapes_and_counts():
    net = Sequential(
        [
            layers.Embedding(1000, 16, input_shape=(12,)),
            layers.LayerNormalization(),
            layers.Flatten(),
            layers.Reshape((12, 16)),
            layers.Reshape((-1,)),
            layers.Dense(8),
            layers.BatchNormalization(),
            layers.Activation("gelu"),
        ]
    )
    assert net.build() == (8,)
    counts = [layer.count_params() for layer in net.layers]
    assert counts == [16000, 32, 0, 0, 0, 12 * 16 * 8 + 8, 32, 0]
    x = jnp.arange(24).reshape(2, 12) % 1000
    assert net(x).shape == (2, 8)
    assert layers.Conv2D(8, 3, strides=2, padding="same").build((9, 9, 3)) == (5, 5, 8)
    assert layers.AveragePooling2D(3, 1, "same").build((4, 4, 2)) == (4, 4, 2)
    assert layers.GlobalAveragePooling2D().build((4, 4, 2)) == (2,)


def test_keras_default_initializers():
    dense = layers.Dense(64)
    dense.build((256,))
    kernel = np.asarray(dense.linear.kernel[...])
    limit = np.sqrt(6 / (256 + 64))  # glorot_uniform
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit
    assert not np.asarray(dense.linear.bias[...]).any()
    bn = layers.BatchNormalization()
    bn.build((4,))
    assert bn.norm.momentum == 0.99 and bn.norm.epsilon == 1e-3
    emb = layers.Embedding(50, 8)
    emb.build((3,))
    assert np.abs(np.asarray(emb.embed.embedding[...])).max() <= 0.05


def test_same_average_pooling_ignores_padding_as_keras():
    x = jnp.arange(1.0, 5.0).reshape(1, 2, 2, 1)
    out = layers.AveragePooling2D(2, strides=1, padding="same")(x)
    # The bottom-right window covers one real value (4): Keras averages it to 4.
    assert float(out[0, 1, 1, 0]) == 4.0


def test_activations_by_name():
    x = jnp.array([[-1.0, 0.0, 2.0]])
    for name in ["relu", "sigmoid", "softmax", "tanh", "gelu", "elu", "selu", "softplus"]:
        assert layers.Activation(name)(x).shape == (1, 3)
    assert np.allclose(layers.Activation("swish")(x), layers.Activation("silu")(x))
    assert float(layers.Activation("leaky_relu")(x)[0, 0]) == pytest.approx(-0.2)
    assert float(layers.Activation("gelu")(x)[0, 0]) == pytest.approx(-0.158655, abs=1e-5)
    with pytest.raises(ValueError, match="Unknown activation 'rellu'"):
        layers.Dense(3, activation="rellu")


def test_names_unique_and_user_names_checked():
    net = Sequential([layers.Dense(2), layers.Dense(2), layers.Dropout(0.1), layers.Dense(2)])
    assert [layer.name for layer in net.layers] == ["dense", "dense_1", "dropout", "dense_2"]
    with pytest.raises(ValueError, match="already has a layer named 'dense'"):
        net.add(layers.Dense(3, name="dense"))
    with pytest.raises(TypeError, match="takes phalanx layers"):
        net.add(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))


def test_split_merge_state_and_jit():
    net = mlp()
    net.build(seed=1)
    graphdef, params, stats, rest = split_state(net)
    x = jnp.ones((4, 784))

    @jax.jit
    def forward(params, x):
        return nnx.merge(graphdef, params, stats, rest)(x)

    assert np.allclose(forward(params, x), net(x), atol=1e-6)
    assert len(jax.tree.leaves(params)) == 4


def test_wrong_input_shape_named_before_compiling():
    net = mlp()
    net.build()
    with pytest.raises(
        LayerShapeError,
        match=r"built for inputs of shape \(None, 784\), received \(8, 28, 28\).*Flatten",
    ):
        net(jnp.ones((8, 28, 28)))
    with pytest.raises(LayerShapeError, match=r"\(None, 784\)"):
        jax.jit(lambda x: net(x))(jnp.ones((8, 28, 28)))
    with pytest.raises(LayerShapeError, match=r"\(None, 784\)"):
        net.check_input_spec((8, 28, 28))
    with pytest.raises(LayerShapeError, match="dtype <U1"):
        net.check_input_spec((8, 784), np.dtype("<U1"))


def test_conv_given_flat_input_names_layer_and_hint():
    net = Sequential([layers.Input(shape=(784,)), layers.Conv2D(8, 3)])
    with pytest.raises(
        LayerShapeError,
        match=r"Layer 'conv2d' \(Conv2D\) expects inputs of rank 4 .* received shape \(None, 784\).*Reshape\(\(28, 28, 1\)\)",
    ):
        net.build()
    with pytest.raises(LayerShapeError, match="output would be empty"):
        layers.Conv2D(8, 5).build((3, 3, 1))
    with pytest.raises(LayerShapeError, match="cannot reshape inputs of shape"):
        layers.Reshape((28, 27)).build((784,))


def test_dense_after_conv_without_flatten_hint():
    net = Sequential(
        [layers.Input(shape=(8, 8, 1)), layers.Conv2D(4, 3), layers.Dense(10, activation="softmax")]
    )
    assert net.build() == (6, 6, 10)
    with pytest.raises(
        LayerShapeError,
        match=r"Layer 'dense' \(Dense\) receives inputs of shape \(None, 6, 6, 4\).*Flatten\(\)",
    ):
        net.check_target_shape((), "sparse_categorical_crossentropy")
    ok = Sequential(
        [layers.Input(shape=(8, 8, 1)), layers.Conv2D(4, 3), layers.Flatten(), layers.Dense(10)]
    )
    ok.build()
    ok.check_target_shape((), "sparse_categorical_crossentropy")
    ok.check_target_shape((1,), "sparse_categorical_crossentropy")
    with pytest.raises(LayerShapeError, match="use sparse_categorical_crossentropy"):
        ok.check_target_shape((), "categorical_crossentropy")


def test_unbuilt_under_jit_and_summary_need_build():
    net = Sequential([layers.Dense(3)])
    with pytest.raises(NotBuiltError, match="build"):
        jax.jit(lambda x: net(x))(jnp.ones((2, 4)))
    with pytest.raises(NotBuiltError, match="not built"):
        net.summary()
    with pytest.raises(ValueError, match="does not know its input shape"):
        net.build()
    assert net(jnp.ones((2, 4))).shape == (2, 3)  # eager first call builds


def test_summary_text():
    net = mlp()
    net.build()
    lines = []
    net.summary(print_fn=lines.append)
    text = lines[0]
    assert 'Model: "sequential"' in text
    assert "dense (Dense)" in text and "(None, 128)" in text and "100,480" in text
    assert "Total params: 101,770 (397.54 KB)" in text
    assert "Non-trainable params: 0 (0.00 B)" in text


def test_return_logits_for_softmax_and_sigmoid_last_layers():
    net = mlp()
    net.build()
    x = jax.random.normal(jax.random.key(0), (4, 784))
    y, logits = net(x, return_logits=True)
    assert isinstance(logits, Logits) and logits.activation == "softmax"
    assert np.allclose(jax.nn.softmax(logits.value), y, atol=1e-6)
    net2 = Sequential([layers.Dense(1, input_shape=(3,)), layers.Activation("sigmoid")])
    y2, logits2 = net2(jnp.ones((2, 3)), return_logits=True)
    assert logits2.activation == "sigmoid" and np.allclose(jax.nn.sigmoid(logits2.value), y2)
    net3 = Sequential([layers.Dense(2, input_shape=(3,))])
    assert net3(jnp.ones((2, 3)), return_logits=True)[1] is None


def test_dropout_keys_explicit_and_per_replica():
    net = Sequential([layers.Input(shape=(1000,)), layers.Dropout(0.5)])
    net.build()
    assert net.needs_rng
    x = jnp.ones((2, 1000))
    assert np.array_equal(net(x), x)  # inference: identity, no key needed
    with pytest.raises(ValueError, match=r"'dropout' \(Dropout\) needs a random key"):
        net(x, training=True)
    a = net(x, training=True, rngs=jax.random.key(0))
    b = net(x, training=True, rngs=jax.random.key(0))
    c = net(x, training=True, rngs=jax.random.fold_in(jax.random.key(0), 1))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert set(np.unique(np.asarray(a))) == {0.0, 2.0}
    assert 0.4 < float(jnp.mean(a == 0)) < 0.6
    assert len(jax.tree.leaves(nnx.state(net))) == 0  # no random state in the module


def test_batchnorm_updates_batch_stats_in_training_only():
    net = Sequential([layers.Input(shape=(3,)), layers.BatchNormalization()])
    net.build()
    graphdef, params, stats, rest = split_state(net)
    assert jax.tree.leaves(nnx.state(net, NON_TRAINABLE))
    x = jnp.array([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]])

    @jax.jit(static_argnames="training")
    def step(params, stats, x, training):
        model = nnx.merge(graphdef, params, stats, rest)
        y = model(x, training=training)
        return y, nnx.state(model, NON_TRAINABLE)

    y, new = step(params, stats, x, training=True)
    mean = new["layers"][0]["norm"]["mean"][...]
    assert np.allclose(mean, 0.01 * np.array([2.0, 4.0, 6.0]))
    assert np.allclose(y.mean(axis=0), 0.0, atol=1e-5)
    _, same = step(params, stats, x, training=False)
    assert np.allclose(same["layers"][0]["norm"]["mean"][...], 0.0)
    assert count(params) == 6 and count(stats) == 6
    assert TRAINABLE is nnx.Param


def count(state):
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(state))
