"""Keras 3's stateless model methods, which an overridden step calls (``_override``).

``random_key`` gives the step's random keys; ``stateless_call`` runs the model on given variables and returns the new
non-trainable ones; ``compute_loss`` is the compiled loss of a batch, reduced as
Keras's ``"sum_over_batch_size"``. Both are pure: they read the compiled step's
static configuration (``Trainer._step_config``), never the model's weights.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..errors import NotCompiledError, StepOverrideError
from . import _override, _step


class StatelessMethods:
    """``stateless_call`` and ``compute_loss``, mixed into ``Trainer``."""

    def stateless_call(
        self,
        trainable_variables: Any,
        non_trainable_variables: Any,
        *args: Any,
        training: bool = False,
        **kwargs: Any,
    ) -> tuple[Any, Any]:
        """Calls the model on the given variables (Keras 3's ``stateless_call``).

        Args:
          trainable_variables: the trainable ``nnx.State`` (the state an overridden
            step received, or a gradient step's update of it).
          non_trainable_variables: the other ``nnx.State`` (moving statistics, RNG counts).
          *args: the inputs ``x``.
          training: the call's mode (dropout, batch statistics).

        Returns:
          ``(outputs, non_trainable_variables)``: the outputs, and the non-trainable
          state after the call (batch normalization's moving statistics moved).

        Raises:
          StepOverrideError: more than the inputs, or keywords other than ``training``.
          NotCompiledError: the model is not compiled and built yet (``fit`` does both).
        """
        if len(args) != 1 or kwargs:
            extra = sorted(kwargs) or f"{len(args)} positional inputs"
            raise StepOverrideError(
                f"stateless_call takes (trainable_variables, non_trainable_variables, x, "
                f"training=...); got {extra}. Pass several inputs as one list or dict x."
            )
        config = self._stateless_config("stateless_call")
        graphdef = config.train_graphdef if training else config.eval_graphdef
        y_pred, _, rest, _, _ = _step._forward(
            config,
            graphdef,
            trainable_variables,
            non_trainable_variables,
            args[0],
            training=bool(training),
            key=_override.next_key(),
        )
        return y_pred, rest

    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        training: bool = True,
    ) -> jax.Array:
        """The compiled loss of a batch (Keras 3's ``compute_loss``).

        Reduced as the loss's ``reduction`` says, as Keras: by default
        (``"sum_over_batch_size"``) the weighted losses summed and divided by the
        valid entries' count (a weight of 0 removes an example from the sum, not
        from the count).

        Raises:
          NotCompiledError: ``compile`` was given no loss.
        """
        del x, training  # as Keras's default: neither changes the compiled loss
        config = self._stateless_config("compute_loss")
        if config.loss is None:
            raise NotCompiledError(
                "compute_loss() needs the loss given to compile(), and compile() was given "
                "none: e.g. model.compile(optimizer='adam', loss='mse'), or compute your "
                "own loss in the step (a phalanx.losses object: loss_fn(y, y_pred))."
            )
        batch = jax.tree.leaves(y_pred)[0].shape[0]
        weight = jnp.ones((batch,), jnp.float32)
        if sample_weight is not None:
            weight = jnp.asarray(sample_weight, jnp.float32).reshape((batch,))
        numerator, divisor = config.loss.batch_terms(y, y_pred, weight, jnp.ones_like(weight))
        if divisor is None:
            return numerator
        return jnp.where(divisor == 0, 0.0, numerator / jnp.where(divisor == 0, 1.0, divisor))

    def random_key(self) -> jax.Array:
        """A fresh PRNG key inside an overridden step (Keras: ``keras.random`` with a
        ``SeedGenerator`` in the state).

        Each call in a step gives another key, each step other keys, from
        ``compile``'s ``seed`` and the step count (a resumed run draws the same).

        Raises:
          StepOverrideError: called outside an overridden step being compiled.
        """
        key = _override.next_key()
        if key is None:
            raise StepOverrideError(
                "random_key() gives keys inside an overridden train_step/test_step/"
                "predict_step only (they come from compile's seed and the step count). "
                "Outside one, use jax.random.key(seed)."
            )
        return key

    def _stateless_config(self, what: str) -> _step.StepConfig:
        if self._state is None:
            if self._config is None or not self.built:
                raise NotCompiledError(
                    f"{what}() needs a compiled, built model: call compile() and build() "
                    "(or fit, which does both) first."
                )
            self._init_state()
        return self._step_config
