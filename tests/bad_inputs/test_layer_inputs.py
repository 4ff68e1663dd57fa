"""Bad arguments to ``phalanx.layers`` constructors: each raises a phalanx error at once, naming
the layer, the argument and what it got (not an error at build time, or a numpy one)."""

import pytest
from catalog import Case, run

from phalanx import layers
from phalanx.errors import LayerArgumentError, LayerShapeError, UnknownNameError

CASES = [
    # convolutions and pooling (the shared Conv base)
    Case(
        "Conv2D no filters",
        lambda: layers.Conv2D(0, 3),
        LayerArgumentError,
        r"Conv2D filters must be a positive int, got 0 \(int\)",
    ),
    Case(
        "Conv2D kernel of one int",
        lambda: layers.Conv2D(8, (3,)),
        LayerArgumentError,
        r"Conv2D kernel_size must be a positive int or a tuple of two, got \(3,\) \(tuple\)",
    ),
    Case(
        "Conv2D strides 0",
        lambda: layers.Conv2D(8, 3, strides=0),
        LayerArgumentError,
        r"Conv2D strides must be a positive int .*got 0",
    ),
    Case(
        "Conv2D causal padding",
        lambda: layers.Conv2D(8, 3, padding="causal"),
        LayerArgumentError,
        r"Conv2D padding must be 'valid' or 'same', got 'causal'",
    ),
    Case(
        "Conv2D channels_first",
        lambda: layers.Conv2D(8, 3, data_format="channels_first"),
        LayerArgumentError,
        r"data_format='channels_first' is not supported.*jnp.transpose",
    ),
    Case(
        "Conv2D groups 0",
        lambda: layers.Conv2D(8, 3, groups=0),
        LayerArgumentError,
        r"Conv2D groups must be a positive int, got 0",
    ),
    Case(
        "Conv2D filters not a multiple of groups",
        lambda: layers.Conv2D(8, 3, groups=3),
        LayerArgumentError,
        r"Conv2D filters \(8\) must divide by groups \(3\); e.g. Conv2D\(6, 3, groups=3\)",
    ),
    Case(
        "Conv1D kernel 0",
        lambda: layers.Conv1D(8, 0),
        LayerArgumentError,
        r"Conv1D kernel_size must be a positive int or a tuple of one, got 0",
    ),
    Case(
        "Conv1D kernel pair",
        lambda: layers.Conv1D(8, (3, 3)),
        LayerArgumentError,
        r"Conv1D kernel_size .*got \(3, 3\)",
    ),
    Case(
        "Conv1D filters float",
        lambda: layers.Conv1D(8.5, 3),
        LayerArgumentError,
        r"Conv1D filters must be a positive int, got 8.5 \(float\)",
    ),
    Case(
        "MaxPooling2D pool 0",
        lambda: layers.MaxPooling2D(0),
        LayerArgumentError,
        r"MaxPooling2D pool_size must be a positive int .*got 0",
    ),
    Case(
        "AveragePooling2D padding",
        lambda: layers.AveragePooling2D(padding="full"),
        LayerArgumentError,
        r"AveragePooling2D padding must be 'valid' or 'same', got 'full'",
    ),
    # other layers
    Case(
        "Dense units 0",
        lambda: layers.Dense(0),
        LayerArgumentError,
        r"Dense units must be a positive int, got 0 \(int\); e.g. Dense\(128\)",
    ),
    Case(
        "Dense misspelt activation",
        lambda: layers.Dense(8, activation="relux"),
        UnknownNameError,
        r"Unknown activation 'relux'. Did you mean 'relu'\? The known activation names are",
    ),
    Case(
        "Dense unknown initializer",
        lambda: layers.Dense(8, kernel_initializer="nonesuch"),
        UnknownNameError,
        r"Unknown initializer 'nonesuch'. The known initializer names are \['glorot_normal'",
    ),
    Case(
        "Conv2D unknown activation",
        lambda: layers.Conv2D(8, 3, activation="nonesuch"),
        UnknownNameError,
        r"Unknown activation 'nonesuch'",
    ),
    Case(
        "Activation an int",
        lambda: layers.Activation(3),
        LayerArgumentError,
        r"Cannot use int 3 as an activation",
    ),
    Case(
        "Dropout rate 1.5",
        lambda: layers.Dropout(1.5),
        LayerArgumentError,
        r"Dropout rate must be a fraction in \[0, 1\], got 1.5 \(float\)",
    ),
    Case(
        "Dropout rate negative",
        lambda: layers.Dropout(-0.1),
        LayerArgumentError,
        r"Dropout rate .*got -0.1",
    ),
    Case(
        "Dropout rate a word",
        lambda: layers.Dropout("half"),
        LayerArgumentError,
        r"Dropout rate .*got 'half' \(str\)",
    ),
    Case(
        "SpatialDropout1D rate 2",
        lambda: layers.SpatialDropout1D(2.0),
        LayerArgumentError,
        r"SpatialDropout1D rate must be a fraction in \[0, 1\], got 2.0",
    ),
    Case(
        "GaussianDropout rate 1",
        lambda: layers.GaussianDropout(1.0),
        LayerArgumentError,
        r"GaussianDropout rate must be a fraction in \[0, 1\), got 1.0",
    ),
    Case(
        "GaussianNoise negative stddev",
        lambda: layers.GaussianNoise(-1.0),
        LayerArgumentError,
        r"GaussianNoise stddev must be a finite number >= 0, got -1.0",
    ),
    Case(
        "Embedding negative vocabulary",
        lambda: layers.Embedding(-1, 4),
        LayerArgumentError,
        r"Embedding input_dim must be a positive int, got -1 \(int\); e.g. Embedding\(1000, 64\)",
    ),
    Case(
        "Embedding output_dim 0",
        lambda: layers.Embedding(10, 0),
        LayerArgumentError,
        r"Embedding output_dim must be a positive int, got 0",
    ),
    Case(
        "Embedding vocabulary as a str",
        lambda: layers.Embedding("10", 4),
        LayerArgumentError,
        r"Embedding input_dim .*got '10' \(str\)",
    ),
    Case(
        "BatchNormalization axis a str",
        lambda: layers.BatchNormalization(axis="x"),
        LayerArgumentError,
        r"BatchNormalization axis must be an int .*got 'x' \(str\)",
    ),
    Case(
        "LayerNormalization axis a str",
        lambda: layers.LayerNormalization(axis="x"),
        LayerArgumentError,
        r"LayerNormalization axis must be an int .*got 'x' \(str\)",
    ),
    Case(
        "Reshape two unknown sizes",
        lambda: layers.Reshape((-1, -1)),
        LayerArgumentError,
        r"Reshape target_shape holds sizes >= 0 and at most one -1 \(inferred\), got \(-1, -1\)",
    ),
    Case(
        "Reshape a str",
        lambda: layers.Reshape("28x28"),
        LayerArgumentError,
        r"target_shape must be a tuple of ints .*got str '28x28'",
    ),
    Case(
        "Dense input_shape of floats",
        lambda: layers.Dense(2, input_shape=(3.5,)),
        LayerArgumentError,
        r"input_shape must be a tuple of ints .*got tuple \(3.5,\)",
    ),
    Case(
        "Input shape a str",
        lambda: layers.Input(shape="784"),
        LayerArgumentError,
        r"must be a tuple of ints .*got str '784'",
    ),
    Case(
        "Embedding input_length a str",
        lambda: layers.Embedding(10, 4, input_length="5"),
        LayerArgumentError,
        r"Embedding input_length must be a positive int, got '5' \(str\)",
    ),
    Case(
        "MultiHeadAttention no heads",
        lambda: layers.MultiHeadAttention(num_heads=0, key_dim=4),
        LayerArgumentError,
        r"MultiHeadAttention num_heads must be a positive int, got 0 \(int\)",
    ),
    Case(
        "MultiHeadAttention key_dim 0",
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=0),
        LayerArgumentError,
        r"MultiHeadAttention key_dim must be a positive int, got 0",
    ),
    Case(
        "MultiHeadAttention dropout 2",
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=2),
        LayerArgumentError,
        r"MultiHeadAttention dropout must be a fraction in \[0, 1\], got 2",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_layer_argument(case):
    run(case)


def test_conv_arguments_keras_accepts_are_kept_as_before():
    """Conv1D keeps ints, Conv2D pairs (their get_config), from ints, tuples or lists."""
    conv1d = layers.Conv1D(4, (3,), strides=[2], dilation_rate=1, padding="CAUSAL")
    assert (conv1d.kernel_size, conv1d.strides, conv1d.dilation_rate) == (3, 2, 1)
    assert conv1d.padding == "causal"
    conv2d = layers.Conv2D(4, [3, 5], strides=2)
    assert (conv2d.kernel_size, conv2d.strides, conv2d.dilation_rate) == ((3, 5), (2, 2), (1, 1))
    assert conv2d.get_config()["kernel_size"] == [3, 5]
    assert conv1d.build((10, 2)) == (5, 4)
    assert conv2d.build((9, 9, 2)) == (4, 3, 4)


def test_what_keras_accepts_is_accepted():
    """Keras 3 takes Dropout(1.0) (all dropped in training), LayerNormalization(axis=[-1])."""
    import jax
    import jax.numpy as jnp

    x = jnp.ones((2, 3))
    out = layers.Dropout(1.0)(x, training=True, rngs=jax.random.key(0))
    assert (out == 0).all()
    assert (layers.Dropout(1.0)(x) == x).all()  # not in training
    assert layers.LayerNormalization(axis=[-1]).build((4, 3)) == (4, 3)
    assert layers.BatchNormalization(axis=1).build((3,)) == (3,)
    mha = layers.MultiHeadAttention(num_heads=1, key_dim=2, dropout=1.0)
    q = jnp.ones((1, 2, 3))
    mha(q, q)  # built
    grads = jax.grad(lambda q: mha(q, q, training=True, rngs=jax.random.key(0)).sum())(q)
    assert bool(jnp.isfinite(grads).all())


def test_groups_that_do_not_divide_the_input_channels_fail_at_build():
    """Only the input channels are left to check at build (filters are checked at once)."""
    conv = layers.Conv2D(8, 3, groups=2)
    with pytest.raises(
        LayerShapeError, match=r"groups=2, which must divide the input channels \(3\)"
    ):
        conv.build((9, 9, 3))
    assert conv.build((9, 9, 4)) == (7, 7, 8)
