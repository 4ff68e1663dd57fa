"""``Conv1D``/``Conv2D`` with ``strides > 1`` and ``dilation_rate > 1`` are refused, as Keras 3.

Keras 3.15 (jax backend), at construction::

    keras.layers.Conv2D(4, 3, strides=2, dilation_rate=2)
    ValueError: `strides > 1` not supported in conjunction with `dilation_rate > 1`.
    Received: strides=(2, 2) and dilation_rate=(2, 2)

on any axes (``strides=(1, 2), dilation_rate=(2, 1)`` too). phalanx used to build the layer
and compute the strided, dilated convolution.
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx import layers
from phalanx.errors import LayerArgumentError


@pytest.mark.parametrize(
    ("make", "received"),
    [
        (
            lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2),
            "strides=(2, 2) and dilation_rate=(2, 2)",
        ),
        (
            lambda: layers.Conv2D(4, 3, strides=(1, 2), dilation_rate=(2, 1)),
            "strides=(1, 2) and dilation_rate=(2, 1)",
        ),
        (
            lambda: layers.Conv1D(4, 3, strides=2, dilation_rate=3, padding="causal"),
            "strides=(2,) and dilation_rate=(3,)",
        ),
    ],
)
def test_strides_with_dilation_are_refused_at_construction(make, received):
    with pytest.raises(ValueError, match=r"`strides > 1` not supported in conjunction with") as e:
        make()
    assert isinstance(e.value, LayerArgumentError)
    assert f"Received: {received}." in str(e.value)
    assert "Use strides=1 with the dilation" in str(e.value)  # what to do


@pytest.mark.parametrize(
    "kwargs", [dict(strides=2, dilation_rate=1), dict(strides=1, dilation_rate=2)]
)
def test_strides_or_dilation_alone_still_convolve(kwargs):
    layer = layers.Conv2D(2, 3, padding="same", **kwargs)
    out = layer(np.ones((1, 8, 8, 1), np.float32))
    side = 4 if kwargs["strides"] == 2 else 8
    assert out.shape == (1, side, side, 2)
