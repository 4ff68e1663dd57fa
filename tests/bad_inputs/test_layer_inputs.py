"""Bad arguments to ``phalanx.layers`` constructors: each raises a phalanx error at once, naming
the layer, the argument and what it got (not an error at build time, or a numpy one)."""

import pytest
from catalog import Case, run

from phalanx import layers
from phalanx.errors import LayerArgumentError

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
