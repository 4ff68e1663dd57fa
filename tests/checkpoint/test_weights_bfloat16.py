"""bfloat16 weights: ``save_weights`` writes them (as numpy's 2-byte void) and ``load_weights``
reads them back, into a bfloat16 model bit for bit and into a float32 one by value."""

from __future__ import annotations

import flax.nnx as nnx
import jax.numpy as jnp
import numpy as np

import phalanx


def _model(dtype, seed):
    return phalanx.Model(nnx.Linear(3, 2, param_dtype=dtype, rngs=nnx.Rngs(seed)))


def test_bfloat16_weights_save_and_load(tmp_path):
    model = _model(jnp.bfloat16, 0)
    weights = model.get_weights()
    assert {w.dtype for w in weights} == {np.dtype(jnp.bfloat16)}
    path = tmp_path / "w.npz"
    model.save_weights(path)

    same = _model(jnp.bfloat16, 1)
    same.load_weights(path)
    for a, b in zip(weights, same.get_weights(), strict=True):
        assert b.dtype == a.dtype
        np.testing.assert_array_equal(a.view(np.uint16), b.view(np.uint16))

    wider = _model(jnp.float32, 1)
    wider.load_weights(path)
    for a, b in zip(weights, wider.get_weights(), strict=True):
        assert b.dtype == np.float32
        np.testing.assert_array_equal(a.astype(np.float32), b)
