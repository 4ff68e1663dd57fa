"""Keras metrics as pure, additive accumulator states (see `phalanx.metrics._metric`).

``metric.init()``, ``metric.update(state, y_true, y_pred, sample_weight)``,
``metric.result(state)`` and ``metric.name``; states add over replicas and
steps, so accumulating them inside a compiled, distributed step gives one
device's value, AUC and precision included.
"""

from ..losses import mean_absolute_error as mean_absolute_error
from ..losses import mean_squared_error as mean_squared_error
from ._accuracy import Accuracy as Accuracy
from ._accuracy import BinaryAccuracy as BinaryAccuracy
from ._accuracy import CategoricalAccuracy as CategoricalAccuracy
from ._accuracy import MeanAbsoluteError as MeanAbsoluteError
from ._accuracy import MeanSquaredError as MeanSquaredError
from ._accuracy import SparseCategoricalAccuracy as SparseCategoricalAccuracy
from ._accuracy import SparseTopKCategoricalAccuracy as SparseTopKCategoricalAccuracy
from ._accuracy import TopKCategoricalAccuracy as TopKCategoricalAccuracy
from ._accuracy import accuracy as accuracy
from ._accuracy import binary_accuracy as binary_accuracy
from ._accuracy import categorical_accuracy as categorical_accuracy
from ._accuracy import sparse_categorical_accuracy as sparse_categorical_accuracy
from ._accuracy import (
    sparse_top_k_categorical_accuracy as sparse_top_k_categorical_accuracy,
)
from ._accuracy import top_k_categorical_accuracy as top_k_categorical_accuracy
from ._confusion import AUC as AUC
from ._confusion import FalseNegatives as FalseNegatives
from ._confusion import FalsePositives as FalsePositives
from ._confusion import Precision as Precision
from ._confusion import PrecisionAtRecall as PrecisionAtRecall
from ._confusion import Recall as Recall
from ._confusion import RecallAtPrecision as RecallAtPrecision
from ._confusion import SensitivityAtSpecificity as SensitivityAtSpecificity
from ._confusion import SpecificityAtSensitivity as SpecificityAtSensitivity
from ._confusion import TrueNegatives as TrueNegatives
from ._confusion import TruePositives as TruePositives
from ._f_score import F1Score as F1Score
from ._f_score import FBetaScore as FBetaScore
from ._iou import BinaryIoU as BinaryIoU
from ._iou import IoU as IoU
from ._iou import MeanIoU as MeanIoU
from ._iou import OneHotIoU as OneHotIoU
from ._iou import OneHotMeanIoU as OneHotMeanIoU
from ._metric import Mean as Mean
from ._metric import MeanMetricWrapper as MeanMetricWrapper
from ._metric import Metric as Metric
from ._metric import merge_states as merge_states
from ._more import BinaryCrossentropy as BinaryCrossentropy
from ._more import CategoricalCrossentropy as CategoricalCrossentropy
from ._more import CategoricalHinge as CategoricalHinge
from ._more import CosineSimilarity as CosineSimilarity
from ._more import Hinge as Hinge
from ._more import KLDivergence as KLDivergence
from ._more import LogCoshError as LogCoshError
from ._more import MeanAbsolutePercentageError as MeanAbsolutePercentageError
from ._more import MeanSquaredLogarithmicError as MeanSquaredLogarithmicError
from ._more import Poisson as Poisson
from ._more import R2Score as R2Score
from ._more import RootMeanSquaredError as RootMeanSquaredError
from ._more import SparseCategoricalCrossentropy as SparseCategoricalCrossentropy
from ._more import SquaredHinge as SquaredHinge
from ._more import Sum as Sum
from ._registry import get as get

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the merge of a model
# output's Keras mask into a compiled metric's weights (`phalanx.train`'s step).
from ._metric import apply_output_mask as apply_output_mask

mse = mean_squared_error
mae = mean_absolute_error

__all__ = [
    "AUC",
    "Accuracy",
    "BinaryAccuracy",
    "BinaryCrossentropy",
    "BinaryIoU",
    "CategoricalAccuracy",
    "CategoricalCrossentropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "F1Score",
    "FBetaScore",
    "FalseNegatives",
    "FalsePositives",
    "Hinge",
    "IoU",
    "KLDivergence",
    "LogCoshError",
    "Mean",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanIoU",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Metric",
    "OneHotIoU",
    "OneHotMeanIoU",
    "Poisson",
    "Precision",
    "PrecisionAtRecall",
    "R2Score",
    "Recall",
    "RecallAtPrecision",
    "RootMeanSquaredError",
    "SensitivityAtSpecificity",
    "SparseCategoricalAccuracy",
    "SparseCategoricalCrossentropy",
    "SparseTopKCategoricalAccuracy",
    "SpecificityAtSensitivity",
    "SquaredHinge",
    "Sum",
    "TopKCategoricalAccuracy",
    "TrueNegatives",
    "TruePositives",
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
