"""``MultiHeadAttention``'s projection kernels start with Keras 3's spread: Keras builds them
as ``EinsumDense`` layers whose variance-scaling initializers count the contracted axes as
fan-in and the others as fan-out (query ``(64, 4, 16)``: 64 in, 64 out), where the
convolution rule of ``jax.nn.initializers`` (64 * 4 in, 64 * 16 out) drew them narrower."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402

D, HEADS, KEY_DIM, T = 64, 4, 16, 5
NAMES = ("query", "key", "value", "attention_output")


def _kernels(lib, initializer):
    keras.utils.set_random_seed(0)  # Keras's draws do not depend on the tests run before
    mha = lib.layers.MultiHeadAttention(HEADS, KEY_DIM, kernel_initializer=initializer)
    x = np.zeros((1, T, D), np.float32)
    mha(x, x)
    weights = mha.get_weights()  # kernel, bias per projection, in Keras's order
    return dict(zip(NAMES, (np.asarray(w) for w in weights[::2]), strict=True))


def _stats(kernel):
    return float(np.std(kernel)), float(np.max(np.abs(kernel)))


@pytest.mark.parametrize(
    "initializer, uniform",
    [
        ("glorot_uniform", True),
        ("he_normal", False),
        ({"class_name": "VarianceScaling", "config": {"scale": 2.0, "mode": "fan_out"}}, False),
        ("lecun_uniform", True),
    ],
)
def test_projection_kernels_spread_as_keras(initializer, uniform):
    ours = _kernels(phalanx, initializer)
    theirs = _kernels(keras, initializer)
    for name in NAMES:
        assert ours[name].shape == theirs[name].shape, name
        (std, top), (k_std, k_top) = _stats(ours[name]), _stats(theirs[name])
        # 4096 draws: the std's sampling error is ~1.1% (normal) / ~0.7% (uniform)
        assert std == pytest.approx(k_std, rel=0.06), name
        if uniform:  # the bound sqrt(3 * scale / fan), reached to within a fraction of 1%
            assert top == pytest.approx(k_top, rel=0.02), name
        else:  # truncated at 2 sigma of the untruncated normal (Keras's empirical std
            # stands in for the truncated one: a kernel of 4096 draws leaves ~1-2% of noise)
            assert top <= k_std / 0.8796 * 2 * 1.05, name


def test_old_spread_was_narrower():
    """The convolution rule's spread (what phalanx drew before) is far from Keras's."""
    theirs = _kernels(keras, "glorot_uniform")
    old = np.sqrt(6 / (D * HEADS + D * KEY_DIM)) / np.sqrt(3)  # fans 256 and 1024
    assert not np.isclose(old, np.std(theirs["query"]), rtol=0.2)
    assert np.std(_kernels(phalanx, "glorot_uniform")["query"]) == pytest.approx(
        np.std(theirs["query"]), rel=0.06
    )


def test_weights_still_move_to_keras():
    ours = layers.MultiHeadAttention(HEADS, KEY_DIM)
    theirs = keras.layers.MultiHeadAttention(HEADS, KEY_DIM)
    x = np.random.default_rng(0).normal(size=(2, T, D)).astype(np.float32)
    ours(x, x)
    theirs(x, x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(np.asarray(ours(x, x)), np.asarray(theirs(x, x)), atol=1e-5)
