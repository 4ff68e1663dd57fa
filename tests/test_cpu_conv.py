"""phalanx._cpu_conv: lax's convolution with gradients XLA:CPU keeps on Eigen inside loops.

The values and both gradients must equal ``lax.conv_general_dilated``'s bit for bit;
inside ``lax.scan`` every compiled convolution must carry the canonical labels
(``b01f_01io->b01f``; JAX's own gradients there are ``f01b_i01o->01bf`` and
``b01f_01oi->b01f``, which XLA:CPU emits as naive loops).
"""

from __future__ import annotations

import re

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from phalanx._cpu_conv import _SPECS, conv_general_dilated

CASES = [  # spatial shape, kernel, strides, dilation, padding
    ((9, 10), (3, 4), (1, 1), (1, 1), "VALID"),
    ((10, 11), (3, 3), (2, 2), (1, 1), "SAME"),
    ((11, 12), (3, 2), (2, 3), (2, 1), ((2, 1), (0, 2))),
    ((8, 8), (2, 2), (3, 3), (1, 1), ((0, 0), (1, 0))),
    ((7, 7), (1, 1), (1, 1), (1, 1), "VALID"),
    ((13,), (5,), (2,), (2,), "SAME"),
    ((6, 7, 5), (3, 2, 2), (1, 2, 1), (1, 1, 2), "VALID"),
]


@pytest.mark.parametrize("spatial,kernel,strides,dilation,padding", CASES)
def test_values_and_gradients_equal_lax(spatial, kernel, strides, dilation, padding):
    k = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(k[0], (2, *spatial, 3))
    w = jax.random.normal(k[1], (*kernel, 3, 4))
    dn = _SPECS[len(spatial)]

    def ref(x, w):
        return lax.conv_general_dilated(
            x, w, strides, padding, rhs_dilation=dilation, dimension_numbers=dn
        )

    def ours(x, w):
        return conv_general_dilated(
            x, w, strides, padding, rhs_dilation=dilation, dimension_numbers=dn
        )

    y_ref, vjp_ref = jax.vjp(ref, x, w)
    y, vjp = jax.vjp(ours, x, w)
    np.testing.assert_array_equal(y, y_ref)
    g = jax.random.normal(k[2], y.shape)
    for a, b in zip(vjp(g), vjp_ref(g), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-5)


def test_other_convolutions_go_to_lax():
    x = jnp.ones((1, 4, 6, 6))  # channels first: lax's default numbers
    w = jnp.ones((2, 4, 3, 3))
    np.testing.assert_array_equal(
        conv_general_dilated(x, w, (1, 1), "SAME"), lax.conv_general_dilated(x, w, (1, 1), "SAME")
    )
    xg, wg = jnp.ones((1, 6, 6, 4)), jnp.ones((3, 3, 2, 4))  # two feature groups
    args = ((1, 1), "VALID")
    kw = {"dimension_numbers": _SPECS[2], "feature_group_count": 2}
    np.testing.assert_array_equal(
        conv_general_dilated(xg, wg, *args, **kw), lax.conv_general_dilated(xg, wg, *args, **kw)
    )


def _conv_labels(fn, *args) -> list[str]:
    text = jax.jit(fn).lower(*args).compile().as_text()
    return re.findall(r"convolution\(.*?dim_labels=([^,\s]+)", text)


def _scan_step(conv):
    model = nnx.Conv(2, 8, (3, 3), padding="VALID", conv_general_dilated=conv, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)

    def loss(p, x):
        return jnp.sum(nnx.merge(graphdef, p)(x) ** 2)

    def body(p, xs):
        def one(p, x):
            g = jax.grad(loss)(p, x)
            return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), None

        return jax.lax.scan(one, p, xs)[0]

    return body, params, jnp.ones((3, 4, 12, 12, 2))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's convolution labels")
def test_gradient_convolutions_in_a_scan_are_canonical():
    body, params, xs = _scan_step(conv_general_dilated)
    labels = _conv_labels(body, params, xs)
    assert len(labels) == 2, labels  # forward, filter gradient (x is data: no input gradient)
    assert set(labels) == {"b01f_01io->b01f"}, labels
    body, params, xs = _scan_step(lax.conv_general_dilated)  # what JAX derives by itself
    assert set(_conv_labels(body, params, xs)) != {"b01f_01io->b01f"}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's convolution labels")
def test_the_conv_layers_gradients_in_a_scan_are_canonical():
    """phalanx.layers.Conv2D runs this convolution on CPU: fit's scanned steps stay on Eigen."""
    import phalanx
    from phalanx import layers

    model = phalanx.Sequential([layers.Input(shape=(12, 12, 2)), layers.Conv2D(8, 3)])
    graphdef, params = nnx.split(model.module)

    def loss(p, x):
        return jnp.sum(nnx.merge(graphdef, p)(x) ** 2)

    def body(p, xs):
        def one(p, x):
            g = jax.grad(loss)(p, x)
            return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), None

        return jax.lax.scan(one, p, xs)[0]

    labels = _conv_labels(body, params, jnp.ones((3, 4, 12, 12, 2)))
    assert labels and set(labels) == {"b01f_01io->b01f"}, labels


def test_gradients_under_shard_map_equal_lax_with_a_replicated_kernel():
    """Inside shard_map (fit's replicas): a per-replica batch, a replicated kernel, as lax."""
    from jax.sharding import PartitionSpec as P

    n = min(2, len(jax.devices()))
    mesh = jax.make_mesh((n,), ("replica",))
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2 * n, 9, 9, 3)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(1).normal(size=(3, 3, 3, 4)), jnp.float32)

    def grads(conv):
        def loss(x, w):
            y = conv(x, w, (1, 1), "SAME", dimension_numbers=_SPECS[2])
            return jax.lax.psum(jnp.sum(y**2), "replica")

        step = jax.shard_map(
            jax.grad(loss, argnums=(0, 1)),
            mesh=mesh,
            in_specs=(P("replica"), P()),
            out_specs=(P("replica"), P()),
        )
        sharded = jax.device_put(x, jax.sharding.NamedSharding(mesh, P("replica")))
        return jax.jit(step)(sharded, jax.device_put(w, jax.sharding.NamedSharding(mesh, P())))

    ours, theirs = grads(conv_general_dilated), grads(lax.conv_general_dilated)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
