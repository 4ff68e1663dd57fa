"""Keras metrics as pure, additive accumulator states (see :mod:`phalanx.train._metric`).

``metric.init()``, ``metric.update(state, y_true, y_pred, sample_weight)``,
``metric.result(state)`` and ``metric.name``; states add over replicas and
steps, so accumulating them inside a compiled, distributed step gives one
device's value, AUC and precision included.
"""

from ._accuracy_metrics import Accuracy as Accuracy
from ._accuracy_metrics import BinaryAccuracy as BinaryAccuracy
from ._accuracy_metrics import CategoricalAccuracy as CategoricalAccuracy
from ._accuracy_metrics import MeanAbsoluteError as MeanAbsoluteError
from ._accuracy_metrics import MeanSquaredError as MeanSquaredError
from ._accuracy_metrics import SparseCategoricalAccuracy as SparseCategoricalAccuracy
from ._accuracy_metrics import SparseTopKCategoricalAccuracy as SparseTopKCategoricalAccuracy
from ._accuracy_metrics import TopKCategoricalAccuracy as TopKCategoricalAccuracy
from ._accuracy_metrics import accuracy as accuracy
from ._accuracy_metrics import binary_accuracy as binary_accuracy
from ._accuracy_metrics import categorical_accuracy as categorical_accuracy
from ._accuracy_metrics import sparse_categorical_accuracy as sparse_categorical_accuracy
from ._accuracy_metrics import (
    sparse_top_k_categorical_accuracy as sparse_top_k_categorical_accuracy,
)
from ._accuracy_metrics import top_k_categorical_accuracy as top_k_categorical_accuracy
from ._confusion_metrics import AUC as AUC
from ._confusion_metrics import Precision as Precision
from ._confusion_metrics import Recall as Recall
from ._losses import mean_absolute_error as mean_absolute_error
from ._losses import mean_squared_error as mean_squared_error
from ._metric import Mean as Mean
from ._metric import MeanMetricWrapper as MeanMetricWrapper
from ._metric import Metric as Metric
from ._metric import merge_states as merge_states
from ._metric_registry import get as get

mse = mean_squared_error
mae = mean_absolute_error

__all__ = [
    "AUC",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "Mean",
    "MeanAbsoluteError",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "Metric",
    "Precision",
    "Recall",
    "SparseCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "get",
    "mae",
    "mean_absolute_error",
    "mean_squared_error",
    "merge_states",
    "mse",
    "sparse_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "top_k_categorical_accuracy",
]
