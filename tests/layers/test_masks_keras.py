"""Keras's masks through models: ``Embedding(mask_zero=True)`` and ``Masking`` mask the padded
steps for the recurrent layers after them, in a ``Sequential`` and a functional model, as Keras 3.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402

RNG = np.random.default_rng(0)
TOKENS = RNG.integers(1, 20, (4, 7)).astype(np.int32)
TOKENS[0, 4:] = 0  # padding at the end
TOKENS[1, 2:] = 0
TOKENS[2, 6:] = 0


def _stack(lib):
    return [
        lib.layers.Embedding(20, 8, mask_zero=True),
        lib.layers.LSTM(5, return_sequences=True),
        lib.layers.Dropout(0.2),
        lib.layers.GRU(4),
        lib.layers.Dense(3),
    ]


def _compare(ours, theirs, x):
    ours.build((None, *x.shape[1:]))
    theirs(x)
    theirs.set_weights(ours.get_weights())
    out = ours.predict(x, verbose=0)
    np.testing.assert_allclose(out, np.asarray(theirs(x)), atol=2e-5, rtol=1e-5)
    return out


def test_sequential_embedding_mask_zero_matches_keras():
    ours = phalanx.Sequential([layers.Input((7,), dtype="int32"), *_stack(phalanx)])
    theirs = keras.Sequential([keras.Input((7,), dtype="int32"), *_stack(keras)])
    out = _compare(ours, theirs, TOKENS)
    # without the mask the padded sequences give other outputs
    plain = phalanx.Sequential([layers.Input((7,), dtype="int32"), *_stack(phalanx)])
    plain.layers[0].mask_zero = False
    plain.build((None, 7))
    plain.set_weights(ours.get_weights())
    assert not np.allclose(plain.predict(TOKENS, verbose=0)[:3], out[:3], atol=1e-4)
    assert (
        layers.Embedding(20, 8, mask_zero=True).compute_mask(TOKENS).tolist()
        == (TOKENS != 0).tolist()
    )


def test_functional_embedding_mask_and_bidirectional_match_keras():
    def build(lib):
        inputs = lib.Input((7,), dtype="int32")
        x = lib.layers.Embedding(20, 6, mask_zero=True)(inputs)
        x = lib.layers.Bidirectional(lib.layers.GRU(4, return_sequences=True))(x)
        x = lib.layers.LSTM(3)(x)
        return lib.Model(inputs, lib.layers.Dense(2)(x))

    _compare(build(phalanx), build(keras), TOKENS)


def test_masking_layer_in_sequential_matches_keras():
    x = RNG.normal(size=(3, 6, 2)).astype(np.float32)
    x[0, 3:] = 0.0
    x[1, :2] = 0.0

    def stack(lib):
        return [
            lib.Input((6, 2)),
            lib.layers.Masking(),
            lib.layers.SimpleRNN(4, return_sequences=True),
            lib.layers.LSTM(3),
        ]

    _compare(phalanx.Sequential(stack(phalanx)), keras.Sequential(stack(keras)), x)
