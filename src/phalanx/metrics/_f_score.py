"""Keras 3's ``FBetaScore`` and ``F1Score`` as additive per-class counts.

The state holds weighted true positives, false positives, false negatives and
the weight of each class's positives (Keras's ``intermediate_weights``), per
class (or summed, ``average="micro"``), so the compiled step sums it over
replicas exactly. Keras sizes the per-class state from the first batch; a
compiled state has a fixed shape, so phalanx takes ``num_classes`` up front
unless ``average="micro"``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ._metric import Metric, State

_KERAS_EPSILON = 1e-7


class FBetaScore(Metric):
    """The F-beta score of multi-label or one-hot predictions (Keras's ``FBetaScore``).

    A prediction is positive when it is the example's largest (and not 0), or,
    with ``threshold``, above it. Per class, ``(1 + beta^2) * p * r / (beta^2 * p + r)``.

    Args:
      average: None (one score per class), ``"micro"`` (over all pairs),
        ``"macro"`` (mean of the classes' scores) or ``"weighted"`` (by the
        classes' positive weight).
      beta: a float > 0; default 1.0.
      threshold: a float in (0, 1], or None for the largest prediction.
      name: default ``"fbeta_score"``.
      dtype: a floating dtype, as Keras's (the state is float32).
      num_classes: the number of classes (the predictions' last axis); needed
        unless ``average="micro"`` (phalanx only: Keras reads it from the first batch).

    Raises:
      ValueError: an argument Keras refuses, or ``num_classes`` missing.
    """

    default_name = "fbeta_score"
    direction = "up"

    def __init__(
        self,
        average: str | None = None,
        beta: float = 1.0,
        threshold: float | None = None,
        name: str | None = None,
        dtype: Any = None,
        num_classes: int | None = None,
    ):
        super().__init__(dtype=dtype, name=name or type(self).default_name)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(
                "Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                f"'weighted'}}. Received: average={average}"
            )
        if not isinstance(beta, float):
            raise ValueError(
                "Invalid `beta` argument value. It should be a Python float. "
                f"Received: beta={beta} of type '{type(beta)}'"
            )
        if beta <= 0.0:
            raise ValueError(
                f"Invalid `beta` argument value. It should be > 0. Received: beta={beta}"
            )
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError(
                    "Invalid `threshold` argument value. It should be a Python float. "
                    f"Received: threshold={threshold} of type '{type(threshold)}'"
                )
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError(
                    "Invalid `threshold` argument value. It should verify 0 < threshold <= 1. "
                    f"Received: threshold={threshold}"
                )
        if average != "micro" and num_classes is None:
            raise ValueError(
                f"{type(self).__name__}(average={average!r}) needs num_classes= in phalanx (one "
                "count per class, and compiled states have fixed shapes; Keras reads it from "
                f"the first batch): e.g. {type(self).__name__}(num_classes=y.shape[-1])."
            )
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.num_classes = num_classes

    def init(self) -> State:
        shape = () if self.average == "micro" else (self.num_classes,)
        return {k: jnp.zeros(shape, jnp.float32) for k in ("tp", "fp", "fn", "positives")}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        y_true = jnp.asarray(y_true, jnp.float32)
        y_pred = jnp.asarray(y_pred, jnp.float32)
        if y_pred.ndim != 2 or y_true.ndim != 2:
            raise ValueError(
                f"{type(self).__name__} expects 2D inputs with shape (batch_size, output_dim). "
                f"Received input shapes: y_pred.shape={y_pred.shape} and "
                f"y_true.shape={y_true.shape}."
            )
        if self.num_classes is not None and y_pred.shape[-1] != self.num_classes:
            raise ValueError(
                f"{type(self).__name__}(num_classes={self.num_classes}) got predictions of "
                f"{y_pred.shape[-1]} classes (shape {y_pred.shape})."
            )
        if self.threshold is None:
            top = jnp.max(y_pred, axis=-1, keepdims=True)
            positive = (y_pred >= top) & (jnp.abs(y_pred) > 1e-9)
        else:
            positive = y_pred > self.threshold
        positive = positive.astype(jnp.float32)
        weight = jnp.ones(y_true.shape[:1], jnp.float32)
        if sample_weight is not None:
            weight = jnp.broadcast_to(jnp.asarray(sample_weight, jnp.float32), weight.shape)
        axis = None if self.average == "micro" else 0

        def total(values: jax.Array) -> jax.Array:
            values = jnp.where(weight[:, None] != 0, values * weight[:, None], 0.0)
            return jnp.sum(values, axis=axis)

        return {
            "tp": total(positive * y_true),
            "fp": total(positive * (1 - y_true)),
            "fn": total((1 - positive) * y_true),
            "positives": total(y_true),
        }

    def result(self, state: State) -> jax.Array:
        tp, fp, fn = state["tp"], state["fp"], state["fn"]
        precision = tp / (tp + fp + _KERAS_EPSILON)
        recall = tp / (tp + fn + _KERAS_EPSILON)
        b2 = self.beta**2
        score = precision * recall / (b2 * precision + recall + _KERAS_EPSILON) * (1 + b2)
        if self.average == "weighted":
            weights = state["positives"] / (jnp.sum(state["positives"]) + _KERAS_EPSILON)
            return jnp.sum(score * weights)
        if self.average is not None:
            return jnp.mean(score)
        return score


class F1Score(FBetaScore):
    """The F1 score (``FBetaScore`` with ``beta=1``), as Keras's ``F1Score``.

    Args:
      average: None, ``"micro"``, ``"macro"`` or ``"weighted"`` (see ``FBetaScore``).
      threshold: a float in (0, 1], or None for the largest prediction.
      name: default ``"f1_score"``.
      dtype: a floating dtype, as Keras's.
      num_classes: the number of classes; needed unless ``average="micro"``.
    """

    default_name = "f1_score"

    def __init__(
        self,
        average: str | None = None,
        threshold: float | None = None,
        name: str | None = None,
        dtype: Any = None,
        num_classes: int | None = None,
    ):
        super().__init__(average, 1.0, threshold, name, dtype, num_classes)
