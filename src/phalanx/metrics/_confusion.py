"""Precision, Recall and AUC: confusion-matrix counts per threshold, as Keras 3 computes them.

Their states are weighted counts of true/false positives/negatives at each
threshold (``y_pred > threshold`` is a positive; targets are cast to bool), so
they add over replicas and steps exactly (see :mod:`phalanx.metrics._metric`).
AUC with evenly spaced thresholds puts each prediction in a bucket
(``ceil(p * (n - 1)) - 1``) and accumulates reversed cumulative sums, Keras's
optimized path; its result uses Keras's Riemann sums (ROC: trapezoids; PR:
Davis & Goadrich interpolation) and ``divide_no_nan`` everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..losses._losses import squeeze_or_expand_to_same_rank
from ._metric import Metric, State, _broadcast_weight

EPSILON = 1e-7
NEG_INF = -1e10


def divide_no_nan(x: jax.Array, y: jax.Array) -> jax.Array:
    """``x / y``, 0 where ``y == 0``."""
    safe = jnp.where(y == 0, 1.0, y)
    return jnp.where(y == 0, 0.0, x / safe)


def _prepare(y_true, y_pred, sample_weight, class_id=None, top_k=None):
    """Flattens targets, predictions and weights; zero weights zero their predictions."""
    y_true = jnp.asarray(y_true, jnp.float32)
    y_pred = jnp.asarray(y_pred, jnp.float32)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if sample_weight is None:
        weight = jnp.ones(y_pred.shape, jnp.float32)
    else:
        weight = jnp.asarray(sample_weight, jnp.float32)
        if weight.ndim == y_pred.ndim + 1 and weight.shape[-1] == 1:
            weight = weight[..., 0]
        weight = _broadcast_weight(weight, y_pred.shape)
    if top_k is not None:
        _, idx = jax.lax.top_k(y_pred, top_k)
        keep = jnp.sum(jax.nn.one_hot(idx, y_pred.shape[-1]), axis=-2)
        y_pred = y_pred * keep + NEG_INF * (1 - keep)
    if class_id is not None:
        y_true, y_pred, weight = (a[..., class_id] for a in (y_true, y_pred, weight))
    y_pred = jnp.where(weight != 0, y_pred, 0.0)
    return (y_true != 0).astype(jnp.float32).ravel(), y_pred.ravel(), weight.ravel()


def confusion_counts(y_true, y_pred, weight, thresholds: jax.Array) -> State:
    """Weighted tp/fp/tn/fn at each threshold by comparison (any thresholds)."""
    positive = y_pred[None, :] > thresholds[:, None]
    pos_w = y_true * weight
    neg_w = (1.0 - y_true) * weight
    tp = jnp.sum(jnp.where(positive, pos_w, 0.0), axis=1)
    fp = jnp.sum(jnp.where(positive, neg_w, 0.0), axis=1)
    return {"tp": tp, "fp": fp, "tn": jnp.sum(neg_w) - fp, "fn": jnp.sum(pos_w) - tp}


def bucketed_counts(y_true, y_pred, weight, num_thresholds: int) -> State:
    """Keras's optimized counts for thresholds ``[-eps, 1/(n-1), ..., 1+eps]``."""
    y_pred = jnp.clip(y_pred, 0.0, 1.0)
    bucket = jnp.maximum(jnp.ceil(y_pred * (num_thresholds - 1)) - 1, 0).astype(jnp.int32)
    pos_w = y_true * weight
    neg_w = (1.0 - y_true) * weight
    zeros = jnp.zeros((num_thresholds,), jnp.float32)
    tp = jnp.cumsum(zeros.at[bucket].add(pos_w)[::-1])[::-1]
    fp = jnp.cumsum(zeros.at[bucket].add(neg_w)[::-1])[::-1]
    return {"tp": tp, "fp": fp, "tn": jnp.sum(neg_w) - fp, "fn": jnp.sum(pos_w) - tp}


def _parse_thresholds(thresholds: Any, default: float) -> np.ndarray:
    if thresholds is None:
        thresholds = [default]
    values = np.atleast_1d(np.asarray(thresholds, np.float32))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"thresholds must be a float or a list of floats, got {thresholds!r}.")
    return values


class _ThresholdMetric(Metric):
    keys: tuple[str, ...] = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(dtype=dtype, name=name)
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else NEG_INF
        self.thresholds = _parse_thresholds(thresholds, default)

    def init(self) -> State:
        return {k: jnp.zeros(self.thresholds.shape, jnp.float32) for k in self.keys}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        prepared = _prepare(y_true, y_pred, sample_weight, self.class_id, self.top_k)
        counts = confusion_counts(*prepared, jnp.asarray(self.thresholds))
        return {k: counts[k] for k in self.keys}

    def _value(self, values: jax.Array) -> jax.Array:
        return values[0] if values.shape == (1,) else values


class Precision(_ThresholdMetric):
    """The fraction of predicted positives (``y_pred > threshold``) that are positive.

    Args:
      thresholds: a float or list of floats in [0, 1]; default 0.5 (or, with
        ``top_k``, every top-k prediction). A list gives one value per threshold.
      top_k: consider only the ``k`` highest predictions of each example.
      class_id: consider only this class (last axis index).
      name: default ``"precision"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Example:
      >>> import jax.numpy as jnp
      >>> m = Precision()
      >>> round(m.result(m.update(m.init(), jnp.array([0, 1, 1, 1]),
      ...                          jnp.array([1, 0, 1, 1]))).item(), 5)
      0.66667
    """

    default_name = "precision"
    keys = ("tp", "fp")

    def result(self, state: State) -> jax.Array:
        return self._value(divide_no_nan(state["tp"], state["tp"] + state["fp"]))


class Recall(_ThresholdMetric):
    """The fraction of positives predicted positive (``y_pred > threshold``).

    Args:
      thresholds: a float or list of floats in [0, 1]; default 0.5.
      top_k: consider only the ``k`` highest predictions of each example.
      class_id: consider only this class (last axis index).
      name: default ``"recall"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Example:
      >>> import jax.numpy as jnp
      >>> m = Recall()
      >>> round(m.result(m.update(m.init(), jnp.array([0, 1, 1, 1]),
      ...                          jnp.array([1, 0, 1, 1]))).item(), 5)
      0.66667
    """

    default_name = "recall"
    keys = ("tp", "fn")

    def result(self, state: State) -> jax.Array:
        return self._value(divide_no_nan(state["tp"], state["tp"] + state["fn"]))


class AUC(Metric):
    """Area under the ROC or precision-recall curve, approximated over thresholds (Keras's AUC).

    Multi-class predictions are flattened (each label-prediction pair counts),
    as Keras with ``multi_label=False``.

    Args:
      num_thresholds: the number of thresholds (> 1); default 200.
      curve: ``"ROC"`` (default) or ``"PR"``.
      summation_method: ``"interpolation"`` (default), ``"minoring"`` or ``"majoring"``.
      thresholds: explicit thresholds in [0, 1] (then ``num_thresholds`` is
        ``len(thresholds) + 2``: ``-eps`` and ``1 + eps`` are added).
      from_logits: apply a sigmoid to predictions first.
      name: default ``"auc"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Example:
      >>> import jax.numpy as jnp
      >>> m = AUC(num_thresholds=3)
      >>> m.result(m.update(m.init(), jnp.array([0, 0, 1, 1]),
      ...                   jnp.array([0, 0.5, 0.3, 0.9]))).item()
      0.75
    """

    default_name = "auc"

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Sequence[float] | None = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ):
        super().__init__(dtype=dtype, name=name)
        if num_labels is not None or label_weights is not None:
            raise NotImplementedError(
                "AUC(num_labels=, label_weights=) are for multi_label=True, which phalanx "
                "does not support; use one AUC per label (Precision/Recall take class_id)."
            )
        if multi_label:
            raise NotImplementedError(
                "AUC(multi_label=True) is not supported; use one AUC per label (class_id)."
            )
        if curve.upper() not in ("ROC", "PR"):
            raise ValueError(f"curve must be 'ROC' or 'PR', got {curve!r}.")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(
                "summation_method must be 'interpolation', 'minoring' or 'majoring', "
                f"got {summation_method!r}."
            )
        self.curve = curve.upper()
        self.summation_method = summation_method
        self.from_logits = from_logits
        self._evenly = thresholds is None
        if thresholds is None:
            if num_thresholds <= 1:
                raise ValueError(f"num_thresholds must be an int > 1, got {num_thresholds}.")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
        self.num_thresholds = num_thresholds
        self.thresholds = np.array([0.0 - EPSILON, *inner, 1.0 + EPSILON], np.float32)

    def init(self) -> State:
        shape = (self.num_thresholds,)
        return {k: jnp.zeros(shape, jnp.float32) for k in ("tp", "fp", "tn", "fn")}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        y_pred = jnp.asarray(y_pred, jnp.float32)
        if self.from_logits:
            y_pred = jax.nn.sigmoid(y_pred)
        prepared = _prepare(y_true, y_pred, sample_weight)
        if self._evenly:
            return bucketed_counts(*prepared, self.num_thresholds)
        return confusion_counts(*prepared, jnp.asarray(self.thresholds))

    def result(self, state: State) -> jax.Array:
        tp, fp, tn, fn = (state[k] for k in ("tp", "fp", "tn", "fn"))
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolate_pr_auc(tp, fp, fn)
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, divide_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = jnp.minimum(y[:-1], y[1:])
        else:
            heights = jnp.maximum(y[:-1], y[1:])
        return jnp.sum((x[:-1] - x[1:]) * heights)


def _interpolate_pr_auc(tp: jax.Array, fp: jax.Array, fn: jax.Array) -> jax.Array:
    """Keras's PR-AUC interpolation (Davis & Goadrich 2006), on accumulated counts."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = divide_no_nan(dtp, jnp.maximum(dp, 0.0))
    intercept = tp[1:] - slope * p[1:]
    both = (p[:-1] > 0) & (p[1:] > 0)
    ratio = jnp.where(both, divide_no_nan(p[:-1], jnp.maximum(p[1:], 0.0)), 1.0)
    increment = divide_no_nan(
        slope * (dtp + intercept * jnp.log(ratio)), jnp.maximum(tp[1:] + fn[1:], 0.0)
    )
    return jnp.sum(increment)
