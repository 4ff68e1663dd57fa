"""``compile``'s arguments resolved into what the step functions call.

Optimizers, losses and metrics are resolved by their own modules
(``optimizers.get``, ``losses.get``, ``metrics.get``); this module ties them
together (``"accuracy"`` depends on the loss) and gives ``model.optimizer``,
the handle through which callbacks read and set the learning rate in the
optimizer state without recompiling.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import optax

from .. import losses as _losses
from .. import metrics as _metrics
from .. import optimizers as _optimizers
from ..constraints import _constraints
from ..errors import CompileArgumentError
from ..mixed_precision import _policy as _mixed_precision
from ..optimizers import KerasFloat, KerasInt, PartOptimizers, moving_average_of
from . import _multi_output

if TYPE_CHECKING:
    from ._trainer import Trainer as Model


@dataclasses.dataclass(frozen=True, eq=False)
class CompileConfig:
    """What ``compile`` was given, resolved."""

    optimizer: Any  # the phalanx optimizer object, or the optax transformation given
    tx: optax.GradientTransformation
    loss: Any
    metrics: tuple
    steps_per_execution: int
    seed: int
    # One flag per metric: True when it is weighted by sample_weight (``weighted_metrics=``
    # and each output's loss), False for ``metrics=`` (only padding is masked), as Keras 3.
    weighted: tuple = ()

    def optimizer_handle(self, model: Model) -> OptimizerHandle:
        """The ``model.optimizer`` object callbacks use; the optimizer object given to
        ``compile`` reads its ``iterations`` from ``model`` from now on, as in Keras."""
        if isinstance(self.optimizer, _optimizers.Optimizer | _mixed_precision.LossScaleOptimizer):
            self.optimizer._bind_model(model)  # not an optax transform
        if isinstance(self.optimizer, _mixed_precision.LossScaleOptimizer):
            return LossScaleOptimizerHandle(model, self.optimizer)
        return OptimizerHandle(model, self.optimizer)


class OptimizerHandle:
    """``model.optimizer``: the compiled optimizer, with a live ``learning_rate``.

    Reading ``learning_rate`` returns the value in the optimizer state now
    (a schedule's value at ``iterations``, the rate of the next step, as
    Keras); setting it writes the state (no recompilation). A schedule's rate
    is read-only.
    """

    def __init__(self, model: Model, optimizer: Any):
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
            value = _optimizers.get_learning_rate(state.opt_state)
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
            _optimizers.set_learning_rate(model._config.tx.init({}), float(value))
            self.pending_learning_rate = float(value)
            return
        if model._state is None:
            model._init_state()
        opt_state = _optimizers.set_learning_rate(model._state.opt_state, float(value))
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


class LossScaleOptimizerHandle(OptimizerHandle, _mixed_precision.LossScaleOptimizer):
    """``model.optimizer`` under ``mixed_float16``: a ``LossScaleOptimizer``, as Keras 3's
    (``isinstance`` holds), with the live ``learning_rate``/``iterations`` of the handle and
    the live ``dynamic_scale``; everything else is the wrapped optimizer's."""

    @property
    def dynamic_scale(self) -> float:  # type: ignore[override]
        """The loss scale now (Keras's ``dynamic_scale`` variable)."""
        state = self._model._state
        scale = None if state is None else _mixed_precision.loss_scale(state.opt_state)
        if scale is None:
            return KerasFloat(self._optimizer.initial_scale)
        return KerasFloat(jax.device_get(scale))

    def to_optax(self) -> optax.GradientTransformation:
        """The wrapped optimizer's transformation."""
        return self._optimizer.to_optax()

    def get_config(self) -> dict:
        """The wrapped optimizer's config."""
        return self._optimizer.get_config()

    def scale_loss(self, loss: Any, opt_state: Any = None) -> Any:
        """``loss`` times the scale of ``opt_state`` (default: the model's state now)."""
        if opt_state is None and self._model._state is not None:
            opt_state = self._model._state.opt_state
        return self._optimizer.scale_loss(loss, opt_state)


def finalize_weights(state: Any) -> Any:
    """``state`` with the weights set to their moving average when the optimizer keeps one
    (``use_ema``; Keras's ``finalize_variable_values`` at the end of ``fit``)."""
    average = None if state is None else moving_average_of(state.opt_state)
    if average is None:
        return state
    params = jax.tree.map(
        lambda a, p: jax.device_put(a.astype(p.dtype), p.sharding), average, state.params
    )
    return state._replace(params=params)


def resolve_compile(
    optimizer: Any,
    loss: Any,
    metrics: Sequence[Any] | None,
    steps_per_execution: int,
    seed: int,
    *,
    loss_weights: Any = None,
    weighted_metrics: Sequence[Any] | None = None,
) -> CompileConfig:
    """Resolves ``compile``'s arguments; raises with the accepted names on a mistake.

    ``metrics`` are not weighted by ``sample_weight`` (nor ``class_weight``),
    ``weighted_metrics`` are, as Keras 3 (``CompileMetrics.update_state``).
    """
    _check_steps_per_execution(steps_per_execution)
    _check_seed(seed)
    if optimizer is None:
        raise CompileArgumentError(
            "compile(optimizer=None): give an optimizer (a name such as 'rmsprop', Keras's "
            "default, a phalanx.optimizers object or an optax transformation)."
        )
    if isinstance(optimizer, _mixed_precision.LossScaleOptimizer):
        opt = optimizer
    elif isinstance(optimizer, dict):  # one optimizer per part of the model (a GAN's two)
        opt = PartOptimizers(optimizer)
    else:  # under mixed_float16, wrapped in a LossScaleOptimizer as Keras does
        opt = _mixed_precision.wrap_for_policy(_optimizers.get(optimizer))
    tx = opt if isinstance(opt, optax.GradientTransformation) else opt.to_optax()
    if _multi_output.is_multi(loss):  # a loss per output (list or dict), as Keras
        loss_fn, resolved, weighted = _multi_output.resolve(
            loss, metrics, loss_weights, weighted_metrics
        )
    else:
        _check_reduced(loss)
        loss_fn = None if loss is None else _losses.get(loss)
        loss_fn = _single_loss_weight(loss_fn, loss_weights)
        resolved, weighted = (), ()
        for argument, value in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
            if value is not None and not isinstance(value, list | tuple):
                raise CompileArgumentError(
                    f"{argument} must be a list, got {type(value).__name__}: write "
                    f"{argument}=[{value!r}]."
                )
            more = tuple(_metrics.get(m, loss=loss_fn) for m in (value or ()))
            resolved += more
            weighted += (argument == "weighted_metrics",) * len(more)
    names = [m.name for m in resolved]
    if len(set(names)) != len(names) or "loss" in names:
        raise CompileArgumentError(
            f"Metric names must be unique and not 'loss'; got {names}. Name them apart: "
            "phalanx.metrics.AUC(name='auc_2'), or a function with another __name__."
        )
    return CompileConfig(opt, tx, loss_fn, resolved, steps_per_execution, seed, weighted)


def _check_reduced(loss: Any) -> None:
    """Raises ``CompileArgumentError`` for a loss object of ``reduction="none"`` (or None): it
    gives one value per example, and ``fit`` needs one per batch (Keras 3's JAX ``fit`` fails
    on it: 'Gradient only defined for scalar-output functions')."""
    if isinstance(loss, _losses.Loss) and loss.reduction in (None, "none"):
        raise CompileArgumentError(
            f"compile(loss={type(loss).__name__}(reduction={loss.reduction!r})): a loss that "
            "returns one value per example cannot be minimized; Keras 3's fit fails on it "
            "('Gradient only defined for scalar-output functions'). Give it "
            "reduction='sum_over_batch_size' (the default), 'mean_with_sample_weight' or "
            "'sum', or pass the loss's name ('mse')."
        )


def _single_loss_weight(loss_fn: Any, loss_weights: Any) -> Any:
    """One output's loss scaled by ``loss_weights`` (a number, or a list/dict of one), as Keras."""
    if loss_weights is None:
        return loss_fn
    weight = loss_weights
    if isinstance(weight, list | tuple) and len(weight) == 1:
        weight = weight[0]
    elif isinstance(weight, dict) and len(weight) == 1:
        weight = next(iter(weight.values()))
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise CompileArgumentError(
            f"loss_weights for a model with one loss must be a number (or a list of one), "
            f"got {loss_weights!r}. With a loss per output, give loss as a list or dict too."
        )
    if loss_fn is None:
        return None
    return _multi_output.ScaledLoss(loss_fn, float(weight))


def _check_seed(value: Any) -> None:
    """``seed`` is an int that ``jax.random.key`` takes (a 64-bit signed integer)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CompileArgumentError(
            f"compile's seed must be an int (the seed of the dropout keys and of fit's "
            f"shuffling), got {value!r} ({type(value).__name__}). Pass e.g. seed=0, or "
            "seed=hash('a') % 2**31 to derive one from a name."
        )
    if not -(2**63) <= int(value) < 2**63:
        raise CompileArgumentError(
            f"compile's seed must fit in 64 bits (-2**63 <= seed < 2**63), got {value!r}. "
            "Pass seed % 2**63."
        )


def _check_steps_per_execution(value: Any) -> None:
    """``steps_per_execution`` is an int >= 1 (Keras refuses 0 and floats too)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CompileArgumentError(
            f"steps_per_execution must be >= 1 (an int: the number of training steps fused "
            f"into one compiled program), got {value!r} ({type(value).__name__}). Use 1 for "
            "one step per program, or e.g. compile(..., steps_per_execution=32) to run 32 "
            "steps between host round trips."
        )
