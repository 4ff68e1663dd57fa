"""``model.optimizer``: the compiled optimizer, its learning rate and step count read from
and written to the model's training state (Keras 3 keeps them in the optimizer's variables,
``keras/src/optimizers/base_optimizer.py``).

What it asks of the model (the trainer's): ``_state`` (its ``opt_state`` and ``step``),
``_init_state()``, ``built``, ``_config.tx`` (the compiled optax transformation),
``_step_config`` (the weights' constraints) and ``distribute_strategy``.
"""

from __future__ import annotations

from typing import Any

import jax
import optax

from ..constraints import _constraints
from ._keras_scalars import KerasFloat, KerasInt
from ._learning_rate import get_learning_rate, set_learning_rate


class OptimizerHandle:
    """``model.optimizer``: the compiled optimizer, with a live ``learning_rate``.

    Reading ``learning_rate`` returns the value in the optimizer state now
    (a schedule's value at ``iterations``, the rate of the next step, as
    Keras); setting it writes the state (no recompilation). A schedule's rate
    is read-only.
    """

    def __init__(self, model: Any, optimizer: Any):
        self._model = model
        self._optimizer = optimizer
        # A rate set before the model is built (LearningRateScheduler on a Sequential without
        # an Input): the optimizer state does not exist yet; Trainer._init_state writes it.
        self.pending_learning_rate: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._optimizer, name)

    @property
    def learning_rate(self) -> float:
        """The current learning rate (a schedule's: its value at ``iterations``, as Keras)."""
        schedule = getattr(self._optimizer, "learning_rate", None)
        if callable(schedule):  # Keras: a schedule reads every step, accumulating ones too
            rate_at = getattr(self._optimizer, "learning_rate_at", schedule)
            return KerasFloat(jax.device_get(rate_at(self._steps())))
        state = self._model._state
        if state is None and self.pending_learning_rate is not None:
            return KerasFloat(self.pending_learning_rate)
        if state is not None:
            value = get_learning_rate(state.opt_state)
            if value is not None:
                return KerasFloat(jax.device_get(value))
        lr = getattr(self._optimizer, "learning_rate", None)
        if lr is None or callable(lr):
            raise TypeError(
                "This optimizer's learning rate is not a number that phalanx can read: "
                f"{lr!r}. Use a phalanx optimizer (e.g. phalanx.optimizers.Adam) with a float "
                "learning_rate."
            )
        return KerasFloat(lr)

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        model = self._model
        if model._state is None and not model.built:  # no state yet: written once it is
            # raises as for a built model: a schedule's rate, a NaN rate
            set_learning_rate(model._config.tx.init({}), float(value))
            self.pending_learning_rate = float(value)
            return
        if model._state is None:
            model._init_state()
        opt_state = set_learning_rate(model._state.opt_state, float(value))
        model._state = model._state._replace(
            opt_state=model.distribute_strategy.distribute_variables(opt_state)
        )

    def _steps(self) -> int:
        state = self._model._state
        return 0 if state is None else int(jax.device_get(state.step))

    def stateless_apply(self, optimizer_variables: Any, grads: Any, trainable_variables: Any):
        """Keras 3's ``stateless_apply``: ``(trainable_variables, optimizer_variables)`` after
        one update by ``grads`` (pure; an overridden ``train_step`` calls it)."""
        updates, optimizer_variables = self._model._config.tx.update(
            grads, optimizer_variables, trainable_variables
        )
        trainable_variables = optax.apply_updates(trainable_variables, updates)
        step_config = getattr(self._model, "_step_config", None)
        constraints = () if step_config is None else step_config.constraints
        return _constraints.apply(constraints, trainable_variables), optimizer_variables

    @property
    def iterations(self) -> int:
        """The optimizer's updates so far (Keras's ``optimizer.iterations``: the steps, or
        the steps // ``gradient_accumulation_steps``)."""
        every = getattr(self._optimizer, "gradient_accumulation_steps", None) or 1
        return KerasInt(self._steps() // every)

    def __repr__(self) -> str:
        return f"OptimizerHandle({self._optimizer!r})"
