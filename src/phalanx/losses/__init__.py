"""Keras losses on optax, by name or class, returning one value per example.

See :mod:`phalanx.losses._losses` for the per-example contract and
:mod:`phalanx.losses._logits` for the logits protocol that keeps the
cross-entropies finite when the last layer applies softmax or sigmoid.
"""

from ._logits import Logits as Logits
from ._losses import BinaryCrossentropy as BinaryCrossentropy
from ._losses import CategoricalCrossentropy as CategoricalCrossentropy
from ._losses import Huber as Huber
from ._losses import Loss as Loss
from ._losses import LossFunctionWrapper as LossFunctionWrapper
from ._losses import MeanAbsoluteError as MeanAbsoluteError
from ._losses import MeanSquaredError as MeanSquaredError
from ._losses import Reduction as Reduction
from ._losses import SparseCategoricalCrossentropy as SparseCategoricalCrossentropy
from ._losses import binary_crossentropy as binary_crossentropy
from ._losses import categorical_crossentropy as categorical_crossentropy
from ._losses import get as get
from ._losses import huber as huber
from ._losses import mean_absolute_error as mean_absolute_error
from ._losses import mean_squared_error as mean_squared_error
from ._losses import sparse_categorical_crossentropy as sparse_categorical_crossentropy

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

__all__ = [
    "MAE",
    "MSE",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "Huber",
    "Logits",
    "Loss",
    "LossFunctionWrapper",
    "MeanAbsoluteError",
    "MeanSquaredError",
    "Reduction",
    "SparseCategoricalCrossentropy",
    "binary_crossentropy",
    "categorical_crossentropy",
    "get",
    "huber",
    "mae",
    "mean_absolute_error",
    "mean_squared_error",
    "mse",
    "sparse_categorical_crossentropy",
]
