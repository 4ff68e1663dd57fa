"""Masks through the merge layers, as Keras 3: ``Embedding(mask_zero=True)`` on two inputs,
a merge layer, then an ``LSTM`` gives Keras's outputs, and each layer's ``compute_mask``
gives Keras's for masks of which some are None."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402

RNG = np.random.default_rng(3)
A = RNG.integers(1, 9, (3, 6)).astype(np.int32)
B = RNG.integers(1, 9, (3, 6)).astype(np.int32)
A[0, 3:] = 0
A[1, 5:] = 0
B[0, 4:] = 0
B[2, 1:] = 0
ELEMENTWISE = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"]


def _model(lib, merge, mask_zero=True, **kwargs):
    a, b = lib.Input((6,), dtype="int32"), lib.Input((6,), dtype="int32")
    ea = lib.layers.Embedding(9, 4, mask_zero=mask_zero)(a)
    eb = lib.layers.Embedding(9, 4, mask_zero=mask_zero)(b)
    x = getattr(lib.layers, merge)(**kwargs)([ea, eb])
    return lib.Model([a, b], lib.layers.LSTM(3, return_sequences=True)(x))


@pytest.mark.parametrize(
    "merge, kwargs",
    [(name, {}) for name in ELEMENTWISE] + [("Concatenate", {}), ("Concatenate", {"axis": 1})],
)
def test_merge_passes_masks_to_lstm_as_keras(merge, kwargs):
    ours, theirs = _model(phalanx, merge, **kwargs), _model(keras, merge, **kwargs)
    theirs.set_weights(ours.get_weights())
    out = ours.predict([A, B], verbose=0)
    np.testing.assert_allclose(out, np.asarray(theirs([A, B])), atol=2e-5, rtol=1e-5)


def test_merge_masks_changed_the_output():
    """Without the masks (the old behaviour) the LSTM runs over the padded steps."""
    ours, plain = _model(phalanx, "Add"), _model(phalanx, "Add", mask_zero=False)
    plain.set_weights(ours.get_weights())
    out = ours.predict([A, B], verbose=0)
    assert not np.allclose(plain.predict([A, B], verbose=0), out, atol=1e-4)


def _masks():
    x = [RNG.normal(size=(2, 5, 3)).astype(np.float32) for _ in range(2)]
    m = [RNG.random((2, 5)) > 0.4 for _ in range(2)]
    return x, m


@pytest.mark.parametrize("name", [*ELEMENTWISE, "Concatenate", "Dot"])
@pytest.mark.parametrize("which", [(0, 1), (0,), (1,), ()])
def test_compute_mask_matches_keras(name, which):
    x, m = _masks()
    mask = [m[i] if i in which else None for i in range(2)]
    kwargs = {"axes": 2} if name == "Dot" else {}
    ours = getattr(layers, name)(**kwargs).compute_mask(x, mask)
    theirs = getattr(keras.layers, name)(**kwargs).compute_mask(x, mask)
    if theirs is None:
        assert ours is None
    else:
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert getattr(layers, name)(**kwargs).compute_mask(x, None) is None


@pytest.mark.parametrize("axis", [-1, 1, 2])
def test_concatenate_compute_mask_axes_and_ranks_match_keras(axis):
    x, m = _masks()
    for mask in ([m[0], None], [None, m[1]], [m[0], m[1]]):
        ours = layers.Concatenate(axis=axis).compute_mask(x, mask)
        theirs = keras.layers.Concatenate(axis=axis).compute_mask(x, mask)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    # masks of the inputs' rank are joined as they are (Keras reduces the last axis after)
    flat = [a[..., 0] for a in x]
    ours = layers.Concatenate(axis=1).compute_mask(flat, m)
    theirs = keras.layers.Concatenate(axis=1).compute_mask(flat, m)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_compute_mask_bad_arguments():
    x, m = _masks()
    with pytest.raises(phalanx.errors.LayerShapeError, match="`mask` to be a list"):
        layers.Add().compute_mask(x, m[0])
    with pytest.raises(phalanx.errors.LayerShapeError, match="one mask .or None. per input"):
        layers.Concatenate().compute_mask(x, [m[0]])
