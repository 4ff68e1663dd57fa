"""Accuracy and regression metrics: Keras's functions and their ``Mean`` wrappers.

The functions return one value per example (Keras 3's definitions: argmax
ties go to the first class, top-k counts a target whose score is tied with
the k-th as inside). ``"accuracy"`` is resolved by `resolve_accuracy`:
from the loss when it says (sparse categorical / categorical / binary
cross-entropy, Keras 2's rule), else from the shapes at trace time (Keras 3's
rule: a last output axis of 1 is binary; targets of lower rank, or a last
target axis of 1 against several classes, are sparse; otherwise categorical).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..losses import mean_absolute_error, mean_squared_error, squeeze_or_expand_to_same_rank
from ._metric import MeanMetricWrapper


def accuracy(y_true: Any, y_pred: Any) -> jax.Array:
    """1.0 where ``y_pred`` equals ``y_true`` exactly (Keras's ``Accuracy`` metric)."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(jnp.asarray(y_true), jnp.asarray(y_pred))
    return (y_true == y_pred).astype(jnp.float32)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> jax.Array:
    """1.0 where ``y_pred > threshold`` matches the 0/1 target.

    Examples:
      >>> import jax.numpy as jnp
      >>> binary_accuracy(jnp.array([[1], [1], [0], [0]]),
      ...                 jnp.array([[0.98], [1], [0], [0.6]])).ravel().tolist()
      [1.0, 1.0, 1.0, 0.0]
    """
    y_true, y_pred = squeeze_or_expand_to_same_rank(jnp.asarray(y_true), jnp.asarray(y_pred))
    predicted = (y_pred > threshold).astype(y_true.dtype)
    return (y_true == predicted).astype(jnp.float32)


def categorical_accuracy(y_true: Any, y_pred: Any) -> jax.Array:
    """1.0 where the argmax of the one-hot target equals the argmax of the prediction."""
    return (jnp.argmax(y_true, axis=-1) == jnp.argmax(y_pred, axis=-1)).astype(jnp.float32)


def _sparse_labels(y_true: Any, y_pred: jax.Array) -> jax.Array:
    y_true = jnp.asarray(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    return y_true


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> jax.Array:
    """1.0 where the integer target equals the argmax of the prediction.

    Examples:
      >>> import jax.numpy as jnp
      >>> sparse_categorical_accuracy(jnp.array([[2], [1]]),
      ...     jnp.array([[0.1, 0.6, 0.3], [0.05, 0.95, 0]])).tolist()
      [0.0, 1.0]
    """
    y_pred = jnp.asarray(y_pred)
    labels = _sparse_labels(y_true, y_pred)
    predicted = jnp.argmax(y_pred, axis=-1)
    return (labels.astype(jnp.float32) == predicted.astype(jnp.float32)).astype(jnp.float32)


def _in_top_k(labels: jax.Array, y_pred: jax.Array, k: int) -> jax.Array:
    labels = labels.astype(jnp.int32)
    at_label = jnp.take_along_axis(y_pred, labels[..., None], axis=-1)
    at_label = jnp.where(jnp.isnan(at_label), -jnp.inf, at_label)
    rank = 1 + jnp.sum(y_pred > at_label, axis=-1)
    return (rank <= k).astype(jnp.float32)


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> jax.Array:
    """1.0 where the one-hot target's class is among the ``k`` highest predictions."""
    return _in_top_k(jnp.argmax(y_true, axis=-1), jnp.asarray(y_pred), k)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> jax.Array:
    """1.0 where the integer target is among the ``k`` highest predictions."""
    y_pred = jnp.asarray(y_pred)
    return _in_top_k(_sparse_labels(y_true, y_pred), y_pred, k)


def _accuracy_by_shapes(y_true: Any, y_pred: Any) -> jax.Array:
    """Keras 3's ``"accuracy"``: chooses the accuracy from the (static) shapes."""
    y_true, y_pred = jnp.asarray(y_true), jnp.asarray(y_pred)
    if y_pred.shape[-1:] == (1,):
        return binary_accuracy(y_true, y_pred)
    sparse = y_true.ndim < y_pred.ndim or (y_true.shape[-1:] == (1,) and y_pred.shape[-1] > 1)
    if sparse:
        return sparse_categorical_accuracy(y_true, y_pred)
    return categorical_accuracy(y_true, y_pred)


_BY_KIND = {
    "sparse_categorical": sparse_categorical_accuracy,
    "categorical": categorical_accuracy,
    "binary": binary_accuracy,
}


def resolve_accuracy(name: str, loss: Any = None) -> MeanMetricWrapper:
    """Returns the metric that ``"accuracy"`` (or ``"acc"``) means with ``loss``.

    Args:
      name: the name given (``"accuracy"`` or ``"acc"``), kept as the log key.
      loss: the compiled loss (a ``phalanx.losses.Loss`` or anything else).

    Returns:
      A ``MeanMetricWrapper`` named ``name``.
    """
    kind = getattr(loss, "accuracy_kind", None)
    return MeanMetricWrapper(_BY_KIND.get(kind, _accuracy_by_shapes), name=name)


class Accuracy(MeanMetricWrapper):
    """How often predictions equal targets exactly.

    Args:
      name: default ``"accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(accuracy, name=name or "accuracy", dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches binary targets.

    Args:
      threshold: default 0.5.
      name: default ``"binary_accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None, threshold: float = 0.5):
        super().__init__(
            binary_accuracy, name=name or "binary_accuracy", dtype=dtype, threshold=threshold
        )


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the prediction's argmax matches the one-hot target's.

    Args:
      name: default ``"categorical_accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(categorical_accuracy, name=name or "categorical_accuracy", dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the prediction's argmax matches the integer target.

    Args:
      name: default ``"sparse_categorical_accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(
            sparse_categorical_accuracy, name=name or "sparse_categorical_accuracy", dtype=dtype
        )


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target is among the ``k`` highest predictions.

    Args:
      k: default 5.
      name: default ``"top_k_categorical_accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, k: int = 5, name: str | None = None, dtype: Any = None):
        super().__init__(
            top_k_categorical_accuracy, name=name or "top_k_categorical_accuracy", dtype=dtype, k=k
        )


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target is among the ``k`` highest predictions.

    Args:
      k: default 5.
      name: default ``"sparse_top_k_categorical_accuracy"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, k: int = 5, name: str | None = None, dtype: Any = None):
        super().__init__(
            sparse_top_k_categorical_accuracy,
            name=name or "sparse_top_k_categorical_accuracy",
            dtype=dtype,
            k=k,
        )


class MeanSquaredError(MeanMetricWrapper):
    """The mean over examples of the mean squared error over the last axis.

    Args:
      name: default ``"mean_squared_error"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(mean_squared_error, name=name or "mean_squared_error", dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean over examples of the mean absolute error over the last axis.

    Args:
      name: default ``"mean_absolute_error"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).
    """

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(mean_absolute_error, name=name or "mean_absolute_error", dtype=dtype)
