"""``compile``'s arguments resolved into what the step functions call.

Optimizers, losses and metrics are resolved by their own modules
(``optimizers.get``, ``losses.get``, ``metrics.get``); this module ties them
together (``"accuracy"`` depends on the loss) and gives ``model.optimizer``,
the handle (``phalanx.optimizers``' ``OptimizerHandle``) through which callbacks
read and set the learning rate in the optimizer state without recompiling.
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
from ..errors import CompileArgumentError
from ..mixed_precision import _policy as _mixed_precision
from ..optimizers import OptimizerHandle, PartOptimizers, moving_average_of
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
            return _mixed_precision.LossScaleOptimizerHandle(model, self.optimizer)
        return OptimizerHandle(model, self.optimizer)


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
