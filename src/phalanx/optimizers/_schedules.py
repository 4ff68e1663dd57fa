"""Keras's learning-rate schedules as jittable callables ``step -> learning rate``.

A schedule is evaluated by ``optax.inject_hyperparams`` at the optimizer's
update count before each update (0 for the first), as Keras evaluates it at
``optimizer.iterations``. Any callable ``step -> lr`` (an optax schedule
included) works the same way.

``check_finite`` evaluates a schedule on the host over the steps a ``fit``
will take (vectorized, once per ``fit``), so a schedule that gives NaN or
infinity at some step is refused, naming the schedule and the step, before it
silently turns every weight into NaN.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import LearningRateValueError

#: Steps evaluated per call when checking a schedule (``check_finite``); a power of two so
#: that fits of different lengths share a few compiled shapes.
_CHECK_BLOCK = 1 << 16


class LearningRateSchedule:
    """Base class of phalanx's Keras-named schedules: ``schedule(step) -> lr`` (float32)."""

    def __call__(self, step: Any) -> jax.Array:
        """Returns the learning rate at ``step`` (an int or int array; jittable)."""
        raise NotImplementedError

    def get_config(self) -> dict:
        """Returns the constructor arguments, as Keras."""
        return dict(self.__dict__)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (floored when ``staircase``).

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: the steps over which the rate is multiplied by ``decay_rate``.
      decay_rate: the factor per ``decay_steps``.
      staircase: decay at whole multiples of ``decay_steps`` only.
      name: the schedule's name (Keras's default ``"ExponentialDecay"``).

    Examples:
      >>> round(float(ExponentialDecay(0.1, 10, 0.5)(20)), 6)
      0.025
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str = "ExponentialDecay",
    ):
        if decay_steps <= 0:
            raise ValueError(f"decay_steps must be > 0, got {decay_steps}.")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.decay_rate = float(decay_rate)
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = jnp.asarray(step, jnp.float32) / self.decay_steps
        if self.staircase:
            p = jnp.floor(p)
        return jnp.float32(self.initial_learning_rate) * jnp.float32(self.decay_rate) ** p


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[i]`` for steps in ``(boundaries[i-1], boundaries[i]]``, as Keras.

    Args:
      boundaries: increasing step numbers.
      values: one more value than boundaries.
      name: the schedule's name (Keras's default ``"PiecewiseConstant"``).

    Examples:
      >>> s = PiecewiseConstantDecay([100, 200], [1.0, 0.5, 0.1])
      >>> [float(s(t)) for t in (0, 100, 101, 201)]
      [1.0, 1.0, 0.5, 0.10000000149011612]
    """

    def __init__(
        self, boundaries: Sequence[int], values: Sequence[float], name: str = "PiecewiseConstant"
    ):
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                "PiecewiseConstantDecay needs one more value than boundaries, got "
                f"{len(boundaries)} boundaries and {len(values)} values."
            )
        self.boundaries = list(boundaries)
        self.values = [float(v) for v in values]
        self.name = name

    def __call__(self, step):
        index = jnp.sum(jnp.asarray(step) > jnp.asarray(self.boundaries))
        return jnp.asarray(self.values, jnp.float32)[index]


class CosineDecay(LearningRateSchedule):
    """Cosine decay from the initial (or warm-up target) rate to ``alpha`` times it, as Keras.

    With ``warmup_target``, the rate first rises linearly from
    ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``, then
    decays over ``decay_steps``.

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: the steps of the cosine decay.
      alpha: the final rate as a fraction of the decayed-from rate.
      name: the schedule's name (Keras's default ``"CosineDecay"``).
      warmup_target: the rate reached after the warm-up, or None for no warm-up.
      warmup_steps: the steps of the linear warm-up.

    Examples:
      >>> s = CosineDecay(1.0, 100)
      >>> [round(float(s(t)), 4) for t in (0, 50, 100, 150)]
      [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        alpha: float = 0.0,
        name: str = "CosineDecay",
        warmup_target: float | None = None,
        warmup_steps: int = 0,
    ):
        if decay_steps <= 0:
            raise ValueError(f"decay_steps must be > 0, got {decay_steps}.")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step, start):
        fraction = step / self.decay_steps
        cosine = 0.5 * (1.0 + jnp.cos(jnp.float32(math.pi) * fraction))
        return start * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = jnp.asarray(step, jnp.float32)
        if self.warmup_target is None:
            return self._decay(jnp.minimum(step, self.decay_steps), self.initial_learning_rate)
        step = jnp.minimum(step, self.decay_steps + self.warmup_steps)
        target = jnp.float32(self.warmup_target)
        warm = (target - self.initial_learning_rate) * (
            step / max(self.warmup_steps, 1)
        ) + self.initial_learning_rate
        decayed = self._decay(step - self.warmup_steps, target)
        return jnp.where(step < self.warmup_steps, warm, decayed).astype(jnp.float32)


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored when ``staircase``).

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: the step scale.
      decay_rate: the decay factor.
      staircase: decay at whole multiples of ``decay_steps`` only.
      name: the schedule's name (Keras's default ``"InverseTimeDecay"``).
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str = "InverseTimeDecay",
    ):
        if decay_steps <= 0:
            raise ValueError(f"decay_steps must be > 0, got {decay_steps}.")
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = decay_steps
        self.decay_rate = float(decay_rate)
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = jnp.asarray(step, jnp.float32) / self.decay_steps
        if self.staircase:
            p = jnp.floor(p)
        return jnp.float32(self.initial_learning_rate) / (1.0 + self.decay_rate * p)


def _positive_steps(name: str, value: Any) -> None:
    if value <= 0:
        raise ValueError(f"Argument `{name}` must be > 0. Received: {name}={value}")


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``, as Keras 3.

    The step is held at ``decay_steps`` (the rate stays at ``end_learning_rate``),
    or with ``cycle=True`` ``decay_steps`` grows to the next multiple above the step.

    Args:
      initial_learning_rate: the rate at step 0.
      decay_steps: the steps of the decay (> 0).
      end_learning_rate: the final rate; default 1e-4.
      power: the polynomial's power; default 1.0 (linear).
      cycle: restart past ``decay_steps`` instead of staying at the end.
      name: the schedule's name (Keras's default ``"PolynomialDecay"``).

    Examples:
      >>> s = PolynomialDecay(0.1, 10, end_learning_rate=0.0)
      >>> [round(float(s(t)), 4) for t in (0, 5, 10, 20)]
      [0.1, 0.05, 0.0, 0.0]
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        name: str = "PolynomialDecay",
    ):
        _positive_steps("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step) -> jax.Array:
        step = jnp.asarray(step, jnp.float32)
        decay_steps = jnp.float32(self.decay_steps)
        if self.cycle:
            multiplier = jnp.where(step == 0, 1.0, jnp.ceil(step / self.decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            step = jnp.minimum(step, decay_steps)
        p = step / decay_steps
        initial, end = jnp.float32(self.initial_learning_rate), jnp.float32(self.end_learning_rate)
        return (initial - end) * jnp.power(1 - p, jnp.float32(self.power)) + end


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter), as Keras 3.

    Each period decays from ``m_mul ** i`` times the initial rate to ``alpha``
    times it; period ``i`` lasts ``first_decay_steps * t_mul ** i`` steps.

    Args:
      initial_learning_rate: the rate at step 0.
      first_decay_steps: the first period's steps (> 0).
      t_mul: how much longer each period is; default 2.0.
      m_mul: how much lower each restart starts; default 1.0.
      alpha: the least rate as a fraction of the initial one.
      name: the schedule's name (Keras's default ``"SGDRDecay"``).

    Examples:
      >>> s = CosineDecayRestarts(1.0, 10, t_mul=1.0)
      >>> [round(float(s(t)), 4) for t in (0, 5, 10, 15)]
      [1.0, 0.5, 1.0, 0.5]
    """

    def __init__(
        self,
        initial_learning_rate: float,
        first_decay_steps: int,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        alpha: float = 0.0,
        name: str = "SGDRDecay",
    ):
        _positive_steps("first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self.t_mul = t_mul
        self.m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step) -> jax.Array:
        fraction = jnp.asarray(step, jnp.float32) / jnp.float32(self.first_decay_steps)
        t_mul = jnp.float32(self.t_mul)
        if self.t_mul == 1.0:
            i_restart = jnp.floor(fraction)
            fraction = fraction - i_restart
        else:
            i_restart = jnp.floor(jnp.log(1.0 - fraction * (1.0 - t_mul)) / jnp.log(t_mul))
            sum_r = (1.0 - jnp.power(t_mul, i_restart)) / (1.0 - t_mul)
            fraction = (fraction - sum_r) / jnp.power(t_mul, i_restart)
        m_fac = jnp.power(jnp.float32(self.m_mul), i_restart)
        cosine = 0.5 * m_fac * (1.0 + jnp.cos(jnp.float32(math.pi) * fraction))
        alpha = jnp.float32(self.alpha)
        return jnp.float32(self.initial_learning_rate) * ((1 - alpha) * cosine + alpha)


def check_finite(schedule: Callable[[Any], Any], first: int, steps: int) -> None:
    """Raises unless ``schedule(step)`` is a finite number for every step in ``[first, first + steps)``.

    The schedule is evaluated with ``jax.vmap`` over blocks of at most
    ``_CHECK_BLOCK`` steps (a power of two >= 1024: a million steps take 16
    calls). One that cannot be vectorized is left to the optimizer, which
    traces it anyway.

    Raises:
      LearningRateValueError: the first step whose rate is NaN or infinite.

    Examples:
      >>> check_finite(ExponentialDecay(0.1, 10, 0.5), 0, 1000)
      >>> check_finite(lambda step: 1.0 / (step - 3), 0, 10)
      Traceback (most recent call last):
      ...
      phalanx.errors.LearningRateValueError: The learning-rate schedule <lambda> gave inf at step 3 ...
    """
    if steps <= 0:
        return
    evaluate = _vectorized(schedule)
    size = min(_CHECK_BLOCK, max(1024, 1 << (steps - 1).bit_length()))  # few compiled shapes
    for start in range(first, first + steps, size):
        block = np.arange(start, start + size, dtype=np.int32)
        try:
            rates = np.asarray(evaluate(block))
        except Exception:  # not vectorizable (or not a step -> rate function): not ours to judge
            return
        count = min(size, first + steps - start)
        bad = np.flatnonzero(~np.isfinite(rates[:count]))
        if bad.size:
            raise LearningRateValueError.of(
                _describe(schedule), int(block[bad[0]]), float(rates[bad[0]]), first, first + steps
            )


@functools.lru_cache(maxsize=8)
def _vectorized(schedule: Callable[[Any], Any]) -> Callable[[np.ndarray], jax.Array]:
    """``schedule`` over a block of steps, compiled once per schedule (repeated ``fit`` calls)."""
    return jax.jit(jax.vmap(lambda step: jnp.asarray(schedule(step), jnp.float32)))


def _describe(schedule: Any) -> str:
    if isinstance(schedule, LearningRateSchedule):
        return repr(schedule)
    return getattr(schedule, "__qualname__", None) or repr(schedule)
