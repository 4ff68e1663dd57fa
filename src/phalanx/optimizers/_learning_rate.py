"""Reading and setting the learning rate that lives in an optimizer state.

Every phalanx optimizer's ``to_optax()`` is built with
``optax.inject_hyperparams``: its state holds ``hyperparams["learning_rate"]``,
a float32 scalar array that the update reads each step. Changing that array
changes the rate without recompiling the step (the state's structure, shape
and dtype stay the same). A learning rate given as a schedule is recomputed
from the step count at every update, so it can be read but not set.

These helpers find the (outermost) injected-hyperparameter state anywhere in
a pytree, so they also work on a user's own ``optax.inject_hyperparams(...)``
transformation, on chains containing one, and on a whole train state.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import optax

from ..errors import LearningRateError, LearningRateValueError
from ._schedules import check_finite

_INJECTED = (optax.InjectStatefulHyperparamsState, optax.InjectHyperparamsState)
_KEY = "learning_rate"


def _is_injected(x: Any) -> bool:
    return isinstance(x, _INJECTED) and _KEY in x.hyperparams


def _injected_states(tree: Any) -> list:
    return [x for x in jax.tree.leaves(tree, is_leaf=_is_injected) if _is_injected(x)]


def _is_schedule(state: Any) -> bool:
    return _KEY in getattr(state, "hyperparams_states", {})


def get_learning_rate(opt_state: Any) -> float | jax.Array | None:
    """Returns the learning rate held in an optimizer state, or None if it holds none.

    With a schedule, this is the rate used by the latest update (at step 0 before
    any update).

    Args:
      opt_state: the state of a phalanx optimizer's ``to_optax()`` (or of any
        ``optax.inject_hyperparams`` transformation, or a pytree containing one).

    Returns:
      A Python float; the array itself when called on traced values (inside
      ``jit``); None when the state has no injected ``learning_rate``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from phalanx import optimizers
      >>> state = optimizers.Adam(learning_rate=0.01).to_optax().init({"w": jnp.zeros(2)})
      >>> round(get_learning_rate(state), 6)
      0.01
    """
    states = _injected_states(opt_state)
    if not states:
        return None
    value = states[0].hyperparams[_KEY]
    if isinstance(value, jax.core.Tracer):
        return value
    return float(jax.device_get(value))


def schedule_count(opt_state: Any) -> jax.Array | None:
    """The step count a schedule is evaluated at by the next update; None without one."""
    for state in _injected_states(opt_state):
        if _is_schedule(state):
            return state.count
    return None


def learning_rate_is_schedule(opt_state: Any) -> bool:
    """True when the state's learning rate comes from a schedule (read-only)."""
    return any(_is_schedule(s) for s in _injected_states(opt_state))


def _replace(old: Any, value: float) -> jax.Array:
    dtype = getattr(old, "dtype", jnp.float32)
    new = jnp.asarray(value, dtype=dtype)
    sharding = getattr(old, "sharding", None)
    if isinstance(old, jax.Array) and not isinstance(old, jax.core.Tracer):
        new = jax.device_put(new, sharding)
    return new


def set_learning_rate(opt_state: Any, value: float) -> Any:
    """Returns ``opt_state`` with its learning rate set to ``value`` (no recompilation).

    The new value keeps the old one's dtype, shape and sharding, so a compiled
    step accepts the new state as it is.

    Args:
      opt_state: the state of a phalanx optimizer's ``to_optax()`` (or any
        pytree containing an ``optax.inject_hyperparams`` state).
      value: the new learning rate.

    Returns:
      A new state; the argument is not modified.

    Raises:
      LearningRateError: the state holds no injected learning rate, or its rate
        comes from a schedule.
      LearningRateValueError: ``value`` is NaN or infinite (every weight would be).

    Examples:
      >>> import jax.numpy as jnp
      >>> from phalanx import optimizers
      >>> state = optimizers.SGD().to_optax().init({"w": jnp.zeros(2)})
      >>> round(get_learning_rate(set_learning_rate(state, 0.5)), 6)
      0.5
    """
    if not isinstance(value, jax.core.Tracer) and not math.isfinite(float(value)):
        raise LearningRateValueError(
            f"A learning rate must be a finite number; got {float(value)} (every weight would "
            "turn NaN at the next step). If a callback computed it (LearningRateScheduler's "
            "schedule, ReduceLROnPlateau), fix what it computes for this epoch."
        )
    states = _injected_states(opt_state)
    if not states:
        raise LearningRateError(
            "This optimizer state holds no learning rate that phalanx can set: build the "
            "optimizer with phalanx.optimizers (e.g. optimizers.Adam(learning_rate=1e-3)) or "
            "wrap your optax factory in optax.inject_hyperparams(...)(learning_rate=...)."
        )
    if any(_is_schedule(s) for s in states):
        raise LearningRateError(
            "The learning rate comes from a schedule, which is read-only: it is recomputed "
            "from the step count at every update. Use a float learning_rate to set it at run "
            "time (e.g. from LearningRateScheduler or ReduceLROnPlateau)."
        )

    def replace(node):
        if not _is_injected(node):
            return node
        hyperparams = dict(node.hyperparams)
        hyperparams[_KEY] = _replace(hyperparams[_KEY], value)
        return node._replace(hyperparams=hyperparams)

    return jax.tree.map(replace, opt_state, is_leaf=_is_injected)


def check_schedule(optimizer: Any, opt_state: Any, steps: int) -> None:
    """Refuses a learning-rate schedule that gives NaN or infinity at a step ``fit`` will take.

    Only a schedule (a callable ``step -> rate`` of a phalanx optimizer) is
    evaluated, once per ``fit``, at ``steps`` steps from the optimizer's count in
    ``opt_state`` on (0 without a state; ``steps`` is 0 when an epoch's length is
    unknown). A float rate costs nothing here.

    Raises:
      LearningRateValueError: the schedule's value at some step is not finite.
    """
    schedule = getattr(optimizer, "learning_rate", None)
    if not callable(schedule) or steps <= 0:
        return
    count = None if opt_state is None else schedule_count(opt_state)
    check_finite(schedule, 0 if count is None else int(jax.device_get(count)), steps)
