"""Keras's optimizer options as optax transformations around an update rule.

Keras 3's ``BaseOptimizer.apply`` (the JAX backend's ``_backend_apply_gradients``)
does, per step: clip the gradients, decay the weights
(``w -= lr * weight_decay * w``, before the update reads them), run the
optimizer's ``update_step``, then update the moving average of the weights
(EMA) and, every ``ema_overwrite_frequency`` steps, overwrite the weights with
it. With ``gradient_accumulation_steps=k`` the gradients are summed for ``k``
steps and the update runs on their mean every ``k``-th step (the weights and
the optimizer's moments do not move in between); the optimizer's
``iterations`` (bias corrections, EMA) then count updates, while a
learning-rate schedule still sees every step.

* `decay_weights`: Keras's weight decay, before the update, with
  ``exclude_from_weight_decay``'s names left out.
* `accumulate_gradients`: ``gradient_accumulation_steps``.
* `moving_average`: ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``;
  `moving_average_of` reads the average from a state (``fit`` writes it
  to the weights at the end, as Keras's ``finalize_variable_values``).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


def variable_name(path: tuple) -> str:
    """A parameter's own name (``"kernel"``, ``"bias"``) from its pytree path, as Keras's
    ``variable.name``: the last key that is not nnx's ``value``."""
    for key in reversed(path):
        name = getattr(key, "key", getattr(key, "name", getattr(key, "idx", None)))
        if isinstance(name, str) and name != "value":
            return name
    return ""


def decay_mask(params: Any, exclude: re.Pattern | None) -> Any:
    """True for each parameter that weight decay applies to (its name does not match)."""
    if exclude is None:
        return jax.tree.map(lambda _: True, params)
    return jax.tree_util.tree_map_with_path(
        lambda path, _: exclude.search(variable_name(path)) is None, params
    )


def decay_weights(
    inner: optax.GradientTransformation,
    learning_rate: Any,
    weight_decay: float,
    exclude: re.Pattern | None = None,
) -> optax.GradientTransformation:
    """Keras's weight decay: ``w -= lr * weight_decay * w`` before ``inner`` reads ``w``.

    ``inner`` sees the decayed weights as its ``params`` (Lamb, Ftrl and Adafactor
    read them); the returned update is the decay plus ``inner``'s update.
    """

    def update(updates, state, params=None):
        if params is None:
            raise ValueError(
                "weight_decay needs the weights: call update(grads, opt_state, params)."
            )
        mask = decay_mask(params, exclude)
        decay = jax.tree.map(
            lambda p, m: (
                (learning_rate * weight_decay * p).astype(p.dtype) if m else jnp.zeros_like(p)
            ),
            params,
            mask,
        )
        decayed = jax.tree.map(lambda p, d: p - d, params, decay)
        new, state = inner.update(updates, state, decayed)
        return jax.tree.map(lambda u, d: u - d, new, decay), state

    return optax.GradientTransformation(inner.init, update)


class AccumulateState(NamedTuple):
    """State of `accumulate_gradients`."""

    count: jax.Array  # int32: steps so far (updates and accumulating steps)
    grads: optax.Updates  # the gradients summed since the last update
    inner: Any


def accumulate_gradients(
    inner: optax.GradientTransformation, steps: int
) -> optax.GradientTransformation:
    """Runs ``inner`` every ``steps``-th step on the mean of the gradients since the last.

    In between, the update is zero and ``inner``'s state does not change (Keras 3's
    ``gradient_accumulation_steps``).
    """

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return AccumulateState(jnp.zeros([], jnp.int32), zeros, inner.init(params))

    def update(grads, state, params=None):
        is_update = (state.count + 1) % steps == 0
        mean = jax.tree.map(lambda g, a: (g + a) / steps, grads, state.grads)
        new, inner_state = inner.update(mean, state.inner, params)
        new = jax.tree.map(lambda u: jnp.where(is_update, u, jnp.zeros_like(u)), new)
        inner_state = jax.tree.map(
            lambda n, o: jnp.where(is_update, n, o), inner_state, state.inner
        )
        summed = jax.tree.map(
            lambda g, a: jnp.where(is_update, jnp.zeros_like(a), g + a), grads, state.grads
        )
        return new, AccumulateState(optax.safe_increment(state.count), summed, inner_state)

    return optax.GradientTransformation(init, update)


class MovingAverageState(NamedTuple):
    """State of `moving_average`: the weights' exponential moving average."""

    count: jax.Array  # int32: steps so far
    average: optax.Params
    inner: Any


def moving_average(
    inner: optax.GradientTransformation,
    momentum: float,
    overwrite_frequency: int | None,
    accumulation_steps: int = 1,
) -> optax.GradientTransformation:
    """Keeps Keras's EMA of the weights after each ``inner`` update.

    ``average = m * average + (1 - m) * w_new`` with ``m = 0`` at the first
    iteration (the average starts at the weights) and ``momentum`` after; every
    ``overwrite_frequency`` iterations the update sets the weights to the
    average. Iterations count updates (steps // ``accumulation_steps``), as Keras.
    """

    def init(params):
        average = jax.tree.map(jnp.zeros_like, params)
        return MovingAverageState(jnp.zeros([], jnp.int32), average, inner.init(params))

    def update(grads, state, params=None):
        if params is None:
            raise ValueError("use_ema needs the weights: call update(grads, opt_state, params).")
        new, inner_state = inner.update(grads, state.inner, params)
        iterations = state.count // accumulation_steps
        m = jnp.where(iterations != 0, momentum, 0.0)

        def average_of(avg, p, u):
            return (m * avg + (1 - m) * (p + u)).astype(avg.dtype)

        average = jax.tree.map(average_of, state.average, params, new)
        if overwrite_frequency is not None:
            overwrite = (iterations + 1) % overwrite_frequency == 0
            new = jax.tree.map(
                lambda u, a, p: jnp.where(overwrite, (a - p).astype(u.dtype), u),
                new,
                average,
                params,
            )
        count = optax.safe_increment(state.count)
        return new, MovingAverageState(count, average, inner_state)

    return optax.GradientTransformation(init, update)


def moving_average_of(opt_state: Any) -> Any:
    """The weights' moving average held in an optimizer state, or None (no ``use_ema``)."""
    found = [
        x
        for x in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, MovingAverageState))
        if isinstance(x, MovingAverageState)
    ]
    return found[0].average if found else None
