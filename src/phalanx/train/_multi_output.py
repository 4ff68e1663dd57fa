"""``compile`` for models with several outputs: a loss and metrics per output, as Keras.

``compile(loss=[l1, l2])`` (outputs a list) or ``loss={"a": l1, "b": l2}``
(outputs a dict) gives each output its loss; the training loss of an example
is their sum, weighted by ``loss_weights`` when given (Keras's rule). The
targets ``y`` then have the outputs' structure (a list or a dict of arrays).

Metrics: ``metrics={"a": ["accuracy"]}`` or ``[["accuracy"], []]`` give each
output its own; a flat list applies every metric to every output. As Keras 3,
each output's own loss (before ``loss_weights``) is logged too, as
``"{output}_loss"``, when more than one output has a loss. Outputs are named as Keras names them: a dict output by
its key, a list output by the name of the layer that makes it (``Model.compile``
tells ``name_outputs``; ``"output_{i}"`` until then).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from .. import losses as _losses
from .. import metrics as _metrics
from ..errors import CompileArgumentError


def _keys(structure: Any) -> list:
    return list(structure) if isinstance(structure, dict) else list(range(len(structure)))


def _label(key: Any) -> str:
    return str(key) if isinstance(key, str) else f"output_{key}"


class MultiOutputLoss:
    """Per-output losses summed into one per-example loss.

    Args:
      losses: a list (outputs a list) or dict (outputs a dict) of loss identifiers.
      loss_weights: the same structure (or None: all 1).
    """

    accuracy_kind = None

    def __init__(self, losses: Sequence[Any] | dict, loss_weights: Any = None):
        self.keys = _keys(losses)
        self.losses = {k: _losses.get(losses[k]) for k in self.keys}
        if loss_weights is None:
            self.weights = {k: 1.0 for k in self.keys}
        else:
            if _keys(loss_weights) != self.keys:
                raise ValueError(
                    f"loss_weights must have the structure of loss ({self.keys}), got "
                    f"{loss_weights!r}."
                )
            self.weights = {k: float(loss_weights[k]) for k in self.keys}
        self.name = "loss"
        for k, loss in self.losses.items():
            _check_mean_of_examples(loss, k)

    def batch_terms(self, y_true: Any, y_pred: Any, weight: Any, mask: Any, *, logits=None):
        """This piece of the batch's ``(numerator, divisor)``: the outputs' weighted sum of
        the examples' losses, and the real examples' count (see ``Loss.batch_terms``)."""
        del logits
        values = self.per_example(y_true, y_pred)
        numerator = jnp.sum(jnp.where(mask > 0, values * weight, 0.0))
        return numerator, jnp.sum(mask)

    def per_example(self, y_true: Any, y_pred: Any, sample_weight: Any = None, *, logits=None):
        """The weighted sum over outputs of each example's loss, ``[batch]``."""
        _check_structure(y_true, y_pred, self.keys)
        total = 0.0
        for k in self.keys:
            loss = self.losses[k]
            if loss is None:
                continue
            value = loss.per_example(y_true[k], y_pred[k], sample_weight)
            total = total + self.weights[k] * value
        return jnp.asarray(total)

    __call__ = per_example

    def __repr__(self) -> str:
        return f"MultiOutputLoss({self.losses!r})"


class ScaledLoss:
    """A model's one loss times ``compile(loss_weights=w)`` (Keras weighs a single loss too).

    Everything but ``per_example`` (the name, ``accuracy_kind``, the label check)
    is the wrapped loss's.
    """

    def __init__(self, loss: Any, weight: float):
        self.loss = loss
        self.weight = weight

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["loss"], name)

    def per_example(self, y_true: Any, y_pred: Any, sample_weight: Any = None, *, logits=None):
        """The wrapped loss's per-example values times the weight, ``[batch]``."""
        return self.weight * self.loss.per_example(y_true, y_pred, sample_weight, logits=logits)

    def batch_terms(self, y_true: Any, y_pred: Any, weight: Any, mask: Any, *, logits=None):
        """The wrapped loss's ``(numerator, divisor)`` with the numerator times the weight."""
        numerator, divisor = self.loss.batch_terms(y_true, y_pred, weight, mask, logits=logits)
        return self.weight * numerator, divisor

    __call__ = per_example

    def __repr__(self) -> str:
        return f"ScaledLoss({self.loss!r}, {self.weight})"


def _check_mean_of_examples(loss: Any, key: Any) -> None:
    """Raises ``CompileArgumentError`` for an output's loss that is not the mean over examples
    (another reduction, ``ignore_class``): phalanx's multi-output ``compile`` adds the
    outputs' per-example losses."""
    if loss is None:
        return
    reduction = getattr(loss, "reduction", "sum_over_batch_size")
    ignore = getattr(loss, "ignore_class", None)
    if reduction in ("sum_over_batch_size", "mean", "auto", "none") and ignore is None:
        return
    what = f"ignore_class={ignore!r}" if ignore is not None else f"reduction={reduction!r}"
    raise CompileArgumentError(
        f"The loss of output {key!r}, {type(loss).__name__}({what}), is not supported in a "
        "loss per output: phalanx's multi-output compile adds each output's mean over the "
        "examples (reduction 'sum_over_batch_size'). Use that reduction, or give an ignored "
        "class's examples sample_weight 0."
    )


def _check_structure(y_true: Any, y_pred: Any, keys: list) -> None:
    for what, value in (("targets", y_true), ("outputs", y_pred)):
        if not isinstance(value, list | tuple | dict) or _keys(value) != keys:
            raise ValueError(
                f"A loss per output was compiled for outputs {keys}, but the {what} are "
                f"{type(value).__name__}"
                + (f" with keys {_keys(value)}" if isinstance(value, list | tuple | dict) else "")
                + ". Give y the structure of the model's outputs (a list or a dict of arrays)."
            )


class OutputMetric:
    """A metric of one output of a multi-output model (logged as ``"{output}_{name}"``)."""

    def __init__(self, metric: Any, key: Any):
        self.metric = metric
        self.key = key
        self.name = f"{_label(key)}_{metric.name}"

    def rename(self, output: str) -> None:
        """Logs under ``"{output}_{name}"`` (the output layer's name, for list outputs)."""
        self.name = f"{output}_{self.metric.name}"

    def init(self):
        """The wrapped metric's fresh state."""
        return self.metric.init()

    def update(self, state, y_true, y_pred, sample_weight=None):
        """Updates with output ``key``'s targets and predictions."""
        return self.metric.update(state, y_true[self.key], y_pred[self.key], sample_weight)

    def result(self, state):
        """The wrapped metric's result."""
        return self.metric.result(state)


class OutputLoss:
    """One output's loss as a metric: the mean over real examples, as ``fit``'s ``loss``.

    State ``total`` (sum of weighted per-example losses) and ``count`` (examples
    with a weight above 0: padding has weight 0), so the outputs' totals add up
    to the model's ``loss`` (with unit ``loss_weights``).
    """

    def __init__(self, loss: Any, key: Any):
        self.loss = loss
        self.key = key
        self.name = f"{_label(key)}_loss"

    def rename(self, output: str) -> None:
        """Logs under ``"{output}_loss"``."""
        self.name = f"{output}_loss"

    def init(self):
        """Zero total and count."""
        return {"total": jnp.zeros((), jnp.float32), "count": jnp.zeros((), jnp.float32)}

    def update(self, state, y_true, y_pred, sample_weight=None):
        """Adds this batch's weighted losses of output ``key`` and its example count."""
        values = self.loss.per_example(y_true[self.key], y_pred[self.key])
        weight = jnp.ones_like(values) if sample_weight is None else jnp.asarray(sample_weight)
        weight = weight.reshape(values.shape).astype(jnp.float32)
        total = jnp.sum(jnp.where(weight > 0, values * weight, 0.0))
        count = jnp.sum((weight > 0).astype(jnp.float32))
        return {"total": state["total"] + total, "count": state["count"] + count}

    def result(self, state):
        """The mean loss (0 before any example)."""
        return state["total"] / jnp.maximum(state["count"], 1.0)


def name_outputs(metrics: Sequence[Any], names: Sequence[str] | None) -> None:
    """Renames list outputs' metrics after the layers that make the outputs (Keras's names)."""
    if not names:
        return
    for metric in metrics:
        key = getattr(metric, "key", None)
        if (
            isinstance(metric, OutputMetric | OutputLoss)
            and isinstance(key, int)
            and key < len(names)
        ):
            metric.rename(names[key])


def is_multi(loss: Any) -> bool:
    """True for a list/tuple/dict of losses (one per output)."""
    return isinstance(loss, list | tuple | dict)


def resolve(
    loss: Any, metrics: Any, loss_weights: Any = None, weighted_metrics: Any = None
) -> tuple[Any, tuple, tuple]:
    """``(loss, metrics, weighted)`` for a multi-output ``compile`` (``loss`` a list or dict).

    ``weighted`` flags each metric weighted by ``sample_weight``: each output's
    loss and the ``weighted_metrics``, not the ``metrics`` (Keras 3).

    Raises:
      ValueError: metrics of another structure than the losses.
    """
    multi = MultiOutputLoss(loss, loss_weights)
    keys = [k for k in multi.keys if multi.losses[k] is not None]
    # Keras logs each output's loss only when there are several (CompileLoss.build).
    resolved = [OutputLoss(multi.losses[k], k) for k in keys] if len(keys) > 1 else []
    weighted = [True] * len(resolved)
    for value, flag in ((metrics, False), (weighted_metrics, True)):
        more = _output_metrics(multi, value)
        resolved += more
        weighted += [flag] * len(more)
    return multi, tuple(resolved), tuple(weighted)


def _output_metrics(multi: MultiOutputLoss, metrics: Any) -> list:
    """One ``OutputMetric`` per (output, metric) that ``metrics`` gives."""
    resolved = []
    if metrics is None:
        metrics = []
    if isinstance(metrics, dict):
        per_output = {k: list(metrics.get(k, []) or []) for k in multi.keys}
        unknown = [k for k in metrics if k not in multi.keys]
        if unknown:
            raise ValueError(f"metrics names outputs {unknown}; the outputs are {multi.keys}.")
    elif metrics and all(isinstance(m, list | tuple) for m in metrics):
        if len(metrics) != len(multi.keys):
            raise ValueError(
                f"metrics has {len(metrics)} lists for {len(multi.keys)} outputs; give one "
                "list per output."
            )
        per_output = dict(zip(multi.keys, (list(m) for m in metrics), strict=True))
    else:
        per_output = {k: list(metrics) for k in multi.keys}
    for k in multi.keys:
        for m in per_output[k]:
            resolved.append(OutputMetric(_metrics.get(m, loss=multi.losses[k]), k))
    return resolved
