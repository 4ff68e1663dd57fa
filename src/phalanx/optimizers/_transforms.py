"""Two optax transformations with Keras's update math where optax's differs.

* :func:`scale_by_keras_adam`: Keras's Adam puts epsilon outside the bias
  correction: ``sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``, where
  optax's ``scale_by_adam`` computes ``m_hat / (sqrt(v_hat) + eps)``. The two
  differ by ``eps * (1 - sqrt(1 - b2^t))`` in the denominator, which matters in
  the first steps with Keras's ``epsilon=1e-7``.
* :func:`clip_by_norm`: Keras's ``clipnorm`` clips each gradient tensor to a
  norm separately (optax has only the global version).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


class KerasAdamState(NamedTuple):
    """State of :func:`scale_by_keras_adam`: step count and moment estimates."""

    count: jax.Array  # int32 scalar, updates applied so far
    mu: optax.Updates  # first moments, like the parameters
    nu: optax.Updates  # second moments, like the parameters
    nu_max: optax.Updates  # running max of nu (AMSGrad); empty tuple when unused


def scale_by_keras_adam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-7, amsgrad: bool = False
) -> optax.GradientTransformation:
    """Rescales updates by Adam's moments exactly as Keras 3's ``Adam.update_step``.

    Args:
      b1: decay of the first moment (Keras ``beta_1``).
      b2: decay of the second moment (Keras ``beta_2``).
      eps: added to ``sqrt(v)`` after the bias correction (Keras ``epsilon``).
      amsgrad: use the maximum of past second moments.

    Returns:
      An optax ``GradientTransformation`` (apply a learning rate after it).
    """

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return KerasAdamState(
            count=jnp.zeros([], jnp.int32),
            mu=zeros,
            nu=jax.tree.map(jnp.zeros_like, params),
            nu_max=jax.tree.map(jnp.zeros_like, params) if amsgrad else (),
        )

    def update(updates, state, params=None):
        del params
        mu = jax.tree.map(lambda m, g: m + (g - m) * (1 - b1), state.mu, updates)
        nu = jax.tree.map(lambda v, g: v + (jnp.square(g) - v) * (1 - b2), state.nu, updates)
        nu_max = jax.tree.map(jnp.maximum, state.nu_max, nu) if amsgrad else ()
        count = optax.safe_increment(state.count)
        t = count.astype(jnp.float32)
        alpha = jnp.sqrt(1 - b2**t) / (1 - b1**t)
        denom = nu_max if amsgrad else nu
        new = jax.tree.map(
            lambda m, v: (alpha * m / (jnp.sqrt(v) + eps)).astype(m.dtype), mu, denom
        )
        return new, KerasAdamState(count=count, mu=mu, nu=nu, nu_max=nu_max)

    return optax.GradientTransformation(init, update)


def clip_by_norm(max_norm: float) -> optax.GradientTransformation:
    """Clips each gradient leaf to L2 norm at most ``max_norm`` (Keras's ``clipnorm``).

    Args:
      max_norm: the largest norm a single gradient tensor may have.

    Returns:
      A stateless optax ``GradientTransformation``.
    """

    def clip(g):
        norm = jnp.sqrt(jnp.sum(jnp.square(g)))
        return g * max_norm / jnp.maximum(norm, max_norm)

    def update(updates, state, params=None):
        del params
        return jax.tree.map(clip, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)
