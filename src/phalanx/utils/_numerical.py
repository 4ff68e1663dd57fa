"""Keras's ``keras.utils.normalize``: an array divided by its norm along an axis."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import UtilsArgumentError

#: Keras's ``backend.epsilon()``, the floor of the norm for a non-numpy input.
_EPSILON = 1e-7


def normalize(x: Any, axis: int | None = -1, order: int = 2) -> Any:
    """Divides ``x`` by its ``order``-norm along ``axis``, as Keras's ``normalize``.

    A numpy array takes Keras's numpy path: ``np.linalg.norm``, a zero norm left as
    it is (divided by 1), the result float64 for an integer array. Anything else
    (a ``jax.Array``, a list) takes ``keras.ops.nn.normalize``'s path: the norm is
    floored at 1e-7 (Keras's ``epsilon()``), L2 through ``x * rsqrt(sum(x**2))``.

    Args:
      x: the array.
      axis: the axis along which to normalize.
      order: the norm's order (2 for L2); an int >= 1 outside numpy.

    Returns:
      The normalized array (numpy for numpy, a ``jax.Array`` otherwise).

    Raises:
      UtilsArgumentError: ``order`` is not an int >= 1 for a non-numpy ``x`` (a
        ``ValueError``, as Keras).

    Examples:
      >>> normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
      array([[0.6, 0.8],
             [0. , 0. ]])
    """
    if isinstance(x, np.ndarray):
        norm = np.atleast_1d(np.linalg.norm(x, order, axis))
        norm[norm == 0] = 1
        return x / np.expand_dims(norm, axis or -1)
    if isinstance(order, bool) or not isinstance(order, int) or not order >= 1:
        raise UtilsArgumentError(
            f"Argument `order` must be an int >= 1. Received: order={order}; pass e.g. "
            "order=1 or order=2 (or a numpy array for numpy's norms)."
        )
    x = jnp.asarray(x)
    if x.ndim == 0:
        x = jnp.expand_dims(x, 0)
    if order == 2:
        inv_norm = jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=True))
        return x * jnp.minimum(inv_norm, 1.0 / _EPSILON)
    norm = jnp.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return x / jnp.maximum(norm, _EPSILON)
