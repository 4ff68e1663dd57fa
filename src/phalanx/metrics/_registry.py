"""``metrics.get``: metric objects from Keras names, classes, instances or functions."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import CompileArgumentError, UnknownNameError
from ..losses import _losses as losses_
from ..losses import _more as more_losses
from ..losses import get as get_loss
from ..losses import mean_absolute_error, mean_squared_error
from . import _accuracy as acc
from . import _confusion, _more
from ._confusion import AUC, Precision, Recall
from ._metric import Mean, MeanMetricWrapper, Metric

_FUNCTIONS = {
    "sparse_categorical_accuracy": acc.sparse_categorical_accuracy,
    "categorical_accuracy": acc.categorical_accuracy,
    "binary_accuracy": acc.binary_accuracy,
    "top_k_categorical_accuracy": acc.top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": acc.sparse_top_k_categorical_accuracy,
    "mean_squared_error": mean_squared_error,
    "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error,
    "mae": mean_absolute_error,
    "mean_absolute_percentage_error": more_losses.mean_absolute_percentage_error,
    "mape": more_losses.mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": more_losses.mean_squared_logarithmic_error,
    "msle": more_losses.mean_squared_logarithmic_error,
    "kl_divergence": more_losses.kl_divergence,
    "poisson": more_losses.poisson,
    "hinge": more_losses.hinge,
    "squared_hinge": more_losses.squared_hinge,
    "categorical_hinge": more_losses.categorical_hinge,
    "binary_crossentropy": losses_.binary_crossentropy,
    "categorical_crossentropy": losses_.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses_.sparse_categorical_crossentropy,
}
_CLASSES: dict[str, type[Metric]] = {
    cls.__name__.lower(): cls
    for cls in (
        AUC,
        Precision,
        Recall,
        Mean,
        acc.Accuracy,
        acc.BinaryAccuracy,
        acc.CategoricalAccuracy,
        acc.SparseCategoricalAccuracy,
        acc.TopKCategoricalAccuracy,
        acc.SparseTopKCategoricalAccuracy,
        acc.MeanSquaredError,
        acc.MeanAbsoluteError,
        _more.MeanAbsolutePercentageError,
        _more.MeanSquaredLogarithmicError,
        _more.CosineSimilarity,
        _more.LogCoshError,
        _more.KLDivergence,
        _more.Poisson,
        _more.Hinge,
        _more.SquaredHinge,
        _more.CategoricalHinge,
        _more.BinaryCrossentropy,
        _more.CategoricalCrossentropy,
        _more.SparseCategoricalCrossentropy,
        _more.RootMeanSquaredError,
        _more.Sum,
        _more.R2Score,
        _confusion.TruePositives,
        _confusion.FalsePositives,
        _confusion.TrueNegatives,
        _confusion.FalseNegatives,
    )
}


def get(identifier: Any, *, loss: Any = None) -> Metric:
    """Returns a metric object (see `phalanx.metrics._metric` for its protocol).

    Args:
      identifier: ``"accuracy"``/``"acc"`` (resolved from ``loss``, else from
        the shapes, as Keras), a function name (``"sparse_categorical_accuracy"``,
        ``"top_k_categorical_accuracy"``, ``"mse"``, ``"mae"``, ...), a class
        name (``"AUC"``, ``"Precision"``, ``"Recall"``, case-insensitive), a
        ``Metric`` class or instance, or any ``fn(y_true, y_pred)`` returning
        per-example values.
      loss: the compiled loss, for ``"accuracy"``.

    Returns:
      A ``Metric``. A function given by name logs under that name (``"mse"``);
      a class logs under its default name (``"AUC"`` -> ``auc``), as Keras.

    Raises:
      UnknownNameError: an unknown name (the message lists the known ones and the closest).
      CompileArgumentError: something that is not a metric.

    Examples:
      >>> get("accuracy", loss="sparse_categorical_crossentropy").name
      'accuracy'
      >>> get("AUC").name
      'auc'
    """
    if isinstance(identifier, Metric):
        return identifier
    if inspect.isclass(identifier) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        if identifier.lower() in ("accuracy", "acc"):
            resolved = get_loss(loss) if isinstance(loss, str) else loss
            return acc.resolve_accuracy(identifier, resolved)
        if identifier in _FUNCTIONS:
            return MeanMetricWrapper(_FUNCTIONS[identifier], name=identifier)
        if identifier.lower() in _CLASSES:
            return _CLASSES[identifier.lower()]()
        raise UnknownNameError.of(
            "metric",
            identifier,
            ["accuracy", *_FUNCTIONS, *(cls.__name__ for cls in _CLASSES.values())],
            hint="Or give a phalanx.metrics object, or a function (y_true, y_pred) -> "
            "per-example values.",
        )
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise CompileArgumentError(
        f"Cannot use {type(identifier).__name__} {identifier!r} as a metric: give a name "
        "('accuracy'), a phalanx.metrics object, or a function (y_true, y_pred) -> values."
    )
