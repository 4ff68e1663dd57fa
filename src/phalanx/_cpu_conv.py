"""A convolution whose gradients XLA:CPU runs with Eigen also inside loops (issue 24).

XLA:CPU runs a convolution with Eigen's fast kernel only when its dimension
numbers are *canonical* (``b01f_01io->b01f``: batch first, features last,
kernel ``spatial..., in, out``). The gradients JAX derives for a channels-last
convolution are not: the filter gradient is ``f01b_i01o->01bf``, the input
gradient ``b01f_01oi->b01f``. XLA's ``ConvCanonicalization`` pass rewrites
them with explicit transposes, but it visits only the entry computation: a
convolution in a ``while`` body (``lax.scan``, ``fori_loop``, the branches of
``lax.cond``) keeps its labels and falls back to XLA's naive loop emitter,
17x-120x slower for the TPU guide's conv net (docs/performance.md).

``conv_general_dilated`` has ``lax.conv_general_dilated``'s signature (a drop-in
for ``nnx.Conv(..., conv_general_dilated=...)``). For channels-last inputs
with one feature group and no input dilation, its ``custom_vjp`` computes both
gradients as canonical convolutions of explicitly transposed operands (what
the pass would have written): the same arithmetic, bit-identical results, at
Eigen's speed wherever the step is placed. Any other convolution goes to
``lax.conv_general_dilated`` unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

_SPECS = {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC"), 3: ("NDHWC", "DHWIO", "NDHWC")}


def _channels_last(dimension_numbers: Any, ndim: int) -> bool:
    """Whether ``dimension_numbers`` are channels-last (``NHWC``/``HWIO``/``NHWC`` and kin)."""
    n = ndim - 2
    if n not in _SPECS:
        return False
    if dimension_numbers is None:  # lax's default is channels-first
        return False
    want = lax.conv_dimension_numbers((1,) * ndim, (1,) * ndim, _SPECS[n])
    got = lax.conv_dimension_numbers((1,) * ndim, (1,) * ndim, dimension_numbers)
    return tuple(got) == tuple(want)


def conv_general_dilated(
    lhs,
    rhs,
    window_strides: Sequence[int],
    padding: Any,
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
    out_sharding: Any = None,
):
    """``lax.conv_general_dilated``, with canonical gradient convolutions where it can."""
    n = lhs.ndim - 2
    plain = (
        _channels_last(dimension_numbers, lhs.ndim)
        and feature_group_count == 1
        and batch_group_count == 1
        and all(d == 1 for d in (lhs_dilation or (1,) * n))
        and out_sharding is None
    )
    if not plain:
        return lax.conv_general_dilated(
            lhs,
            rhs,
            window_strides,
            padding,
            lhs_dilation=lhs_dilation,
            rhs_dilation=rhs_dilation,
            dimension_numbers=dimension_numbers,
            feature_group_count=feature_group_count,
            batch_group_count=batch_group_count,
            precision=precision,
            preferred_element_type=preferred_element_type,
            **({} if out_sharding is None else {"out_sharding": out_sharding}),
        )
    strides = tuple(window_strides)
    dilation = tuple(rhs_dilation or (1,) * n)
    if isinstance(padding, str):
        window = [(k - 1) * d + 1 for k, d in zip(rhs.shape[:n], dilation, strict=True)]
        padding = lax.padtype_to_pads(lhs.shape[1:-1], window, strides, padding)
    pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    lhs, rhs = _same_variance(lhs, rhs)
    return _conv(strides, pads, dilation, precision, preferred_element_type, lhs, rhs)


def _same_variance(x: Any, w: Any) -> tuple[Any, Any]:
    """``x`` and ``w`` varying over the same manual mesh axes (inside ``shard_map``).

    A custom VJP's gradient must vary as its input does; the kernel gradient of a
    per-replica batch varies over the replica axis where a replicated kernel does not.
    Casting the kernel to varying outside the custom VJP leaves the reduction to JAX's
    own transpose of the cast (a ``psum``), exactly as for ``lax.conv_general_dilated``.
    """
    x_axes = jax.typeof(x).manual_axis_type.varying
    w_axes = jax.typeof(w).manual_axis_type.varying
    if w_axes - x_axes or x_axes - w_axes:
        if x_axes - w_axes:
            w = lax.pcast(w, tuple(sorted(x_axes - w_axes)), to="varying")
        if w_axes - x_axes:
            x = lax.pcast(x, tuple(sorted(w_axes - x_axes)), to="varying")
    return x, w


def _plain(x, w, strides, pads, lhs_dil, rhs_dil, precision, out_type):
    return lax.conv_general_dilated(
        x,
        w,
        strides,
        pads,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        dimension_numbers=_SPECS[x.ndim - 2],
        precision=precision,
        preferred_element_type=out_type,
    )


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _conv(strides, pads, dilation, precision, out_type, x, w):
    n = x.ndim - 2
    return _plain(x, w, strides, pads, (1,) * n, dilation, precision, out_type)


def _conv_fwd(strides, pads, dilation, precision, out_type, x, w):
    return _conv(strides, pads, dilation, precision, out_type, x, w), (x, w)


def _conv_bwd(strides, pads, dilation, precision, out_type, res, g):
    x, w = res
    n = x.ndim - 2
    kernel = w.shape[:n]
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True)]
    # Input gradient: g dilated by the strides, padded to the full correlation, against
    # the kernel flipped in space with in/out swapped (canonical: spatial..., in, out).
    grad_pads = []
    for i in range(n):
        size, e, s, (lo, hi) = x.shape[1 + i], span[i], strides[i], pads[i]
        reached = (g.shape[1 + i] - 1) * s + e  # input rows (padded) the windows covered
        grad_pads.append((e - 1 - lo, size + lo + hi - reached + e - 1 - hi))
    flipped = jnp.flip(w, tuple(range(n)))
    flipped = jnp.swapaxes(flipped, n, n + 1)
    gt = g.astype(x.dtype) if out_type is not None else g
    dx = _plain(gt, flipped, (1,) * n, grad_pads, strides, dilation, precision, out_type)
    # Filter gradient: the input's features as the batch, its batch as the features.
    spatial = tuple(range(1, n + 1))
    xt = jnp.transpose(x, (n + 1, *spatial, 0))  # [in, spatial..., batch]
    g_as_kernel = jnp.transpose(gt, (*spatial, 0, n + 1))  # [out spatial..., batch, out]
    dw = _plain(xt, g_as_kernel, dilation, pads, (1,) * n, strides, precision, out_type)
    dw = dw[(slice(None), *(slice(0, k) for k in kernel), slice(None))]
    dw = jnp.transpose(dw, (*spatial, 0, n + 1))  # [spatial..., in, out]
    return dx.astype(x.dtype), dw.astype(w.dtype)


_conv.defvjp(_conv_fwd, _conv_bwd)
