"""optax transformations with Keras 3's update math where optax's differs or is missing.

* `scale_by_keras_adam`: Keras's Adam puts epsilon outside the bias
  correction: ``sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``, where
  optax's ``scale_by_adam`` computes ``m_hat / (sqrt(v_hat) + eps)``. The two
  differ by ``eps * (1 - sqrt(1 - b2^t))`` in the denominator, which matters in
  the first steps with Keras's ``epsilon=1e-7``.
* `clip_by_norm`: Keras's ``clipnorm`` clips each gradient tensor to a
  norm separately (optax has only the global version).
* `scale_by_keras_nadam`: Keras's Nadam keeps the product of the momentum
  schedule ``beta_1 * (1 - 0.5 * 0.96^t)`` (optax's ``nadam`` has none).
* `scale_by_keras_adamax`: epsilon added to the infinity norm once, in
  the denominator (optax adds it to ``|g|`` inside the running maximum).
* `scale_by_keras_lamb`: Keras's Lamb: Adam's bias-corrected direction
  scaled by ``||w|| / ||update||`` per tensor, epsilon after the square root.
* `keras_ftrl` and `keras_adafactor`: these read the learning
  rate inside their math, so they return the final update (lr included);
  optax has no FTRL, and its Adafactor is not Keras's.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


class KerasAdamState(NamedTuple):
    """State of `scale_by_keras_adam`: step count and moment estimates."""

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


class KerasNadamState(NamedTuple):
    """State of `scale_by_keras_nadam`."""

    count: jax.Array  # int32 scalar
    u_product: jax.Array  # float32 scalar: the product of the momentum schedule so far
    mu: optax.Updates
    nu: optax.Updates


def scale_by_keras_nadam(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-7
) -> optax.GradientTransformation:
    """Nadam's direction exactly as Keras 3's ``Nadam`` (apply the learning rate after it)."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        one = jnp.ones([], jnp.float32)
        return KerasNadamState(jnp.zeros([], jnp.int32), one, zeros, zeros)

    def update(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        t = count.astype(jnp.float32)
        u_t = b1 * (1.0 - 0.5 * jnp.power(0.96, t))
        u_t_1 = b1 * (1.0 - 0.5 * jnp.power(0.96, t + 1))
        u_product = state.u_product * u_t
        u_product_1 = u_product * u_t_1
        mu = jax.tree.map(lambda m, g: m + (g - m) * (1 - b1), state.mu, updates)
        nu = jax.tree.map(lambda v, g: v + (jnp.square(g) - v) * (1 - b2), state.nu, updates)

        def direction(m, v, g):
            m_hat = u_t_1 * m / (1 - u_product_1) + (1 - u_t) * g / (1 - u_product)
            v_hat = v / (1 - jnp.power(b2, t))
            return (m_hat / (jnp.sqrt(v_hat) + eps)).astype(g.dtype)

        new = jax.tree.map(direction, mu, nu, updates)
        return new, KerasNadamState(count, u_product, mu, nu)

    return optax.GradientTransformation(init, update)


class KerasAdamaxState(NamedTuple):
    """State of `scale_by_keras_adamax`."""

    count: jax.Array
    mu: optax.Updates  # first moments
    nu: optax.Updates  # exponentially weighted infinity norms


def scale_by_keras_adamax(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-7
) -> optax.GradientTransformation:
    """Adamax's direction exactly as Keras 3's ``Adamax``: ``m / ((1 - b1^t) (u + eps))``."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return KerasAdamaxState(jnp.zeros([], jnp.int32), zeros, zeros)

    def update(updates, state, params=None):
        del params
        count = optax.safe_increment(state.count)
        correction = 1 - jnp.power(b1, count.astype(jnp.float32))
        mu = jax.tree.map(lambda m, g: m + (g - m) * (1 - b1), state.mu, updates)
        nu = jax.tree.map(lambda u, g: jnp.maximum(b2 * u, jnp.abs(g)), state.nu, updates)
        new = jax.tree.map(lambda m, u: (m / (correction * (u + eps))).astype(m.dtype), mu, nu)
        return new, KerasAdamaxState(count, mu, nu)

    return optax.GradientTransformation(init, update)


def scale_by_keras_lamb(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-7
) -> optax.GradientTransformation:
    """Lamb's direction as Keras 3's ``Lamb`` (needs ``params``; apply the learning rate after).

    The Adam direction ``m_hat / (sqrt(v_hat) + eps)`` of each tensor is scaled by
    ``||w|| / ||direction||`` (1 where either norm is 0).
    """
    adam = scale_by_keras_adam_moments(b1, b2)

    def update(updates, state, params=None):
        if params is None:
            raise ValueError(_NEEDS_PARAMS.format(name="Lamb"))
        (mu, nu), state = adam.update(updates, state)
        t = state.count.astype(jnp.float32)

        def direction(m, v, w):
            step = (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps)
            w_norm = jnp.sqrt(jnp.sum(jnp.square(w)))
            g_norm = jnp.sqrt(jnp.sum(jnp.square(step)))
            ratio = jnp.where(w_norm > 0, jnp.where(g_norm > 0, w_norm / g_norm, 1.0), 1.0)
            return (ratio * step).astype(w.dtype)

        return jax.tree.map(direction, mu, nu, params), state

    return optax.GradientTransformation(adam.init, update)


def scale_by_keras_adam_moments(b1: float, b2: float) -> optax.GradientTransformation:
    """Adam's moments updated as Keras; the "updates" it returns are ``(mu, nu)``."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return KerasAdamState(jnp.zeros([], jnp.int32), zeros, zeros, ())

    def update(updates, state, params=None):
        del params
        mu = jax.tree.map(lambda m, g: m + (g - m) * (1 - b1), state.mu, updates)
        nu = jax.tree.map(lambda v, g: v + (jnp.square(g) - v) * (1 - b2), state.nu, updates)
        count = optax.safe_increment(state.count)
        return (mu, nu), KerasAdamState(count, mu, nu, ())

    return optax.GradientTransformation(init, update)


class KerasFtrlState(NamedTuple):
    """State of `keras_ftrl`: the squared-gradient accumulators and the linear terms."""

    accumulator: optax.Updates
    linear: optax.Updates


def keras_ftrl(
    learning_rate,
    learning_rate_power: float = -0.5,
    initial_accumulator_value: float = 0.1,
    l1: float = 0.0,
    l2: float = 0.0,
    l2_shrinkage: float = 0.0,
    beta: float = 0.0,
) -> optax.GradientTransformation:
    """FTRL-proximal exactly as Keras 3's ``Ftrl``; returns the final update (``new - w``)."""

    def init(params):
        acc = jax.tree.map(lambda p: jnp.full_like(p, initial_accumulator_value), params)
        return KerasFtrlState(acc, jax.tree.map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError(_NEEDS_PARAMS.format(name="Ftrl"))
        lr = learning_rate
        l2_reg = l2 + beta / (2.0 * lr)

        def one(g, w, accum, linear):
            grad = g + 2 * l2_shrinkage * w
            new_accum = accum + jnp.square(g)
            linear = (
                linear
                + grad
                - (
                    (
                        jnp.power(new_accum, -learning_rate_power)
                        - jnp.power(accum, -learning_rate_power)
                    )
                    / lr
                )
                * w
            )
            quadratic = jnp.power(new_accum, -learning_rate_power) / lr + 2 * l2_reg
            new_w = (jnp.clip(linear, -l1, l1) - linear) / quadratic
            return (new_w - w).astype(w.dtype), new_accum, linear

        new, accumulator, linear = _map_unzip(
            3, one, updates, params, state.accumulator, state.linear
        )
        return new, KerasFtrlState(accumulator, linear)

    return optax.GradientTransformation(init, update)


class KerasAdafactorState(NamedTuple):
    """State of `keras_adafactor`: row and column averages (factored), velocities."""

    count: jax.Array
    r: optax.Updates  # per tensor of rank >= 2: shape[:-1]; else a scalar placeholder
    c: optax.Updates  # per tensor of rank >= 2: shape[:-2] + shape[-1:]; else a scalar
    v: optax.Updates


def keras_adafactor(
    learning_rate,
    beta_2_decay: float = -0.8,
    epsilon_1: float = 1e-30,
    epsilon_2: float = 1e-3,
    clip_threshold: float = 1.0,
) -> optax.GradientTransformation:
    """Adafactor exactly as Keras 3's ``Adafactor``; returns the final update (lr included).

    The step size is ``max(epsilon_2, rms(w)) * min(lr, 1 / sqrt(t))``; tensors of
    rank 2 and more keep factored second moments over their last two axes.
    """

    def init(params):
        def r(p):
            return jnp.zeros(p.shape[:-1], p.dtype) if p.ndim >= 2 else jnp.zeros([], p.dtype)

        def c(p):
            shape = p.shape[:-2] + p.shape[-1:]
            return jnp.zeros(shape, p.dtype) if p.ndim >= 2 else jnp.zeros([], p.dtype)

        return KerasAdafactorState(
            jnp.zeros([], jnp.int32),
            jax.tree.map(r, params),
            jax.tree.map(c, params),
            jax.tree.map(jnp.zeros_like, params),
        )

    def rms(x):
        return jnp.sqrt(jnp.mean(jnp.square(x)))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError(_NEEDS_PARAMS.format(name="Adafactor"))
        count = optax.safe_increment(state.count)
        t = count.astype(jnp.float32)
        rho_t = jnp.minimum(learning_rate, 1 / jnp.sqrt(t))
        beta_2_t = 1 - jnp.power(t, beta_2_decay)

        def one(g, w, r, c, v):
            alpha_t = jnp.maximum(epsilon_2, rms(w)) * rho_t
            g2 = jnp.square(g) + epsilon_1
            if w.ndim >= 2:
                r = beta_2_t * r + (1 - beta_2_t) * jnp.mean(g2, axis=-1)
                c = beta_2_t * c + (1 - beta_2_t) * jnp.mean(g2, axis=-2)
                v = jnp.expand_dims(r / jnp.mean(r, axis=-1, keepdims=True), -1) * (
                    jnp.expand_dims(c, -2)
                )
            else:
                v = beta_2_t * v + (1 - beta_2_t) * g2
            u = g / jnp.sqrt(v)
            u_hat = u / jnp.maximum(1.0, rms(u) / clip_threshold)
            return (-alpha_t * u_hat).astype(w.dtype), r, c, v

        new, r, c, v = _map_unzip(4, one, updates, params, state.r, state.c, state.v)
        return new, KerasAdafactorState(count, r, c, v)

    return optax.GradientTransformation(init, update)


def _map_unzip(n, fn, tree, *rest):
    """``jax.tree.map(fn, tree, *rest)`` for an ``fn`` returning ``n`` values: ``n`` trees."""
    treedef = jax.tree.structure(tree)
    leaves = [treedef.flatten_up_to(t) for t in (tree, *rest)]
    results = [fn(*xs) for xs in zip(*leaves, strict=True)]
    columns = list(zip(*results, strict=True)) or [()] * n
    return tuple(treedef.unflatten(list(col)) for col in columns)


_NEEDS_PARAMS = (
    "{name}'s update reads the weights: call update(grads, opt_state, params) with the "
    "current parameters as the third argument."
)
