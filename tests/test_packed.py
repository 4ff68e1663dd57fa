"""phalanx._packed: a pytree packed into one vector comes back bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np

from phalanx._packed import Packed, Packing


def test_every_dtype_comes_back_bit_for_bit():
    tree = {
        "nan": jnp.array([np.nan, -0.0, 1e-45], jnp.float32),
        "bf16": jnp.array([1.5, -2.25], jnp.bfloat16),
        "int": jnp.arange(-2, 3, dtype=jnp.int32).reshape(5, 1),
        "bool": jnp.array([True, False]),
        "int8": jnp.array(-7, jnp.int8),
        "scalar": jnp.float32(0.1),
        "complex": jnp.array([1 - 0j, complex(-0.0, np.nan), complex(np.inf, -0.0)], jnp.complex64),
        "float8": jnp.array([0.5, -1.0], jnp.float8_e4m3fn),
        "uint16": jnp.array([65535], jnp.uint16),
    }
    packing = Packing()
    vector = jax.jit(packing.pack)(tree)
    assert vector.dtype == jnp.uint32 and vector.ndim == 1
    back = Packed(vector, packing).fetch()
    for name, want in tree.items():
        got = back[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(
            np.asarray(want).reshape(-1).view(np.uint8),
            np.asarray(got).reshape(-1).view(np.uint8),
            err_msg=name,
        )


def test_an_empty_tree_packs_to_an_empty_vector():
    packing = Packing()
    assert Packed(jax.jit(packing.pack)({}), packing).fetch() == {}
