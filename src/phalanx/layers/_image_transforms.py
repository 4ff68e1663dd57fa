"""Keras 3's image geometry on JAX, channels last: ``affine_transform`` and the matrices of
the random image layers (rotation, zoom, translation).

A transform is Keras's (and TensorFlow's ``ImageProjectiveTransformV3``) 8 numbers
``[a0, a1, a2, b0, b1, b2, c0, c1]`` per image mapping an *output* pixel ``(x, y)``
to the input point ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x +
c1 y + 1`` (``c0 = c1 = 0`` here). ``affine_transform`` is
``keras.src.backend.jax.image.affine_transform`` line for line, so the pixels equal
Keras 3's on JAX.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

#: Keras's interpolation names and their spline orders.
INTERPOLATIONS = {"nearest": 0, "bilinear": 1}
#: Keras's fill modes (``jax.scipy.ndimage.map_coordinates``' modes).
FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def affine_transform(
    images: jax.Array,
    transform: jax.Array,
    interpolation: str = "bilinear",
    fill_mode: str = "constant",
    fill_value: float = 0.0,
) -> jax.Array:
    """Keras 3's ``ops.image.affine_transform`` on NHWC ``images`` (one transform per image).

    Args:
      images: ``(batch, height, width, channels)``.
      transform: ``(batch, 8)`` or ``(8,)`` (the same for every image).
      interpolation: ``"nearest"`` or ``"bilinear"``.
      fill_mode: ``"reflect"``, ``"wrap"``, ``"constant"`` or ``"nearest"``.
      fill_value: the value outside the image when ``fill_mode="constant"``.

    Returns:
      The transformed images, shape and dtype of ``images``.
    """
    transform = jnp.asarray(transform)
    if transform.ndim == 1:
        transform = transform[None]
    batch = images.shape[0]
    grid = jnp.meshgrid(*[jnp.arange(size) for size in images.shape[1:]], indexing="ij")
    indices = jnp.concatenate([g[..., None] for g in grid], axis=-1)
    indices = jnp.tile(indices, (batch, 1, 1, 1, 1))
    # Keras's order is (x, y); the image's axes are (row, column): swap the roles
    a0, a2, b1, b2 = transform[:, 0], transform[:, 2], transform[:, 4], transform[:, 5]
    transform = transform.at[:, 0].set(b1).at[:, 2].set(b2).at[:, 4].set(a0).at[:, 5].set(a2)
    transform = jnp.pad(transform, [[0, 0], [0, 1]], constant_values=1)
    transform = jnp.reshape(transform, (batch, 3, 3))
    offset = jnp.pad(transform[:, 0:2, 2], [[0, 0], [0, 1]])
    transform = transform.at[:, 0:2, 2].set(0)
    coordinates = jnp.einsum("Bhwij, Bjk -> Bhwik", indices, transform)
    coordinates = jnp.moveaxis(coordinates, source=-1, destination=1)
    coordinates += jnp.reshape(offset, (*offset.shape, 1, 1, 1))
    sample = functools.partial(
        jax.scipy.ndimage.map_coordinates,
        order=INTERPOLATIONS[interpolation],
        mode=fill_mode,
        cval=fill_value,
    )
    return jax.vmap(sample)(images, coordinates)


def affine_matrix(
    angle: jax.Array,
    height: int,
    width: int,
    *,
    translate_x: jax.Array | None = None,
    translate_y: jax.Array | None = None,
    scale: jax.Array | None = None,
    shear_x: jax.Array | None = None,
    shear_y: jax.Array | None = None,
    center_x: float = 0.5,
    center_y: float = 0.5,
) -> jax.Array:
    """Keras's ``_compute_affine_matrix``: ``(batch, 8)`` transforms rotating by ``angle``
    degrees (counter-clockwise) about the centre, with optional translation, scale, shear.
    """
    batch = angle.shape[0]
    zeros, ones = jnp.zeros([batch], angle.dtype), jnp.ones([batch], angle.dtype)
    translate_x = zeros if translate_x is None else translate_x
    translate_y = zeros if translate_y is None else translate_y
    scale = ones if scale is None else scale
    to_radians = math.pi / 180.0
    angle = angle * to_radians
    shear_x = jnp.tan((zeros if shear_x is None else shear_x) * to_radians)
    shear_y = jnp.tan((zeros if shear_y is None else shear_y) * to_radians)
    cx = center_x * (jnp.asarray(width, angle.dtype) - 1)
    cy = center_y * (jnp.asarray(height, angle.dtype) - 1)
    cos, sin = jnp.cos(angle), jnp.sin(angle)
    a0 = scale * (cos + shear_x * sin)
    a1 = scale * (-sin + shear_x * cos)
    a2 = translate_x + cx - cx * a0 - cy * a1
    b0 = scale * (shear_y * cos + sin)
    b1 = scale * (shear_y * -sin + cos)
    b2 = translate_y + cy - cx * b0 - cy * b1
    columns = [a0, a1, a2, b0, b1, b2]
    return jnp.concatenate([c[:, None] for c in columns] + [jnp.zeros((batch, 2))], axis=1)


def zoom_matrix(zooms: jax.Array, height: int, width: int) -> jax.Array:
    """Keras's ``RandomZoom._get_zoom_matrix``: ``zooms`` ``(batch, 2)`` as (width, height)
    factors about the image's centre (above 1: zoom out)."""
    n = zooms.shape[0]
    x_offset = ((jnp.float32(width) - 1.0) / 2.0) * (1.0 - zooms[:, 0:1])
    y_offset = ((jnp.float32(height) - 1.0) / 2.0) * (1.0 - zooms[:, 1:])
    zero = jnp.zeros((n, 1))
    return jnp.concatenate(
        [zooms[:, 0:1], zero, x_offset, zero, zooms[:, 1:], y_offset, jnp.zeros((n, 2))], axis=1
    )


def translation_matrix(translations: jax.Array) -> jax.Array:
    """Keras's ``RandomTranslation._get_translation_matrix``: ``translations`` ``(batch, 2)``
    in pixels as (dx, dy)."""
    n = translations.shape[0]
    one, zero = jnp.ones((n, 1)), jnp.zeros((n, 1))
    return jnp.concatenate(
        [one, zero, -translations[:, 0:1], zero, one, -translations[:, 1:], jnp.zeros((n, 2))],
        axis=1,
    )
