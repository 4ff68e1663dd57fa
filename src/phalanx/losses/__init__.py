"""Keras losses on optax, by name or class, returning one value per example.

See `phalanx.losses._losses` for the per-example contract and
`phalanx.losses._logits` for the logits protocol that keeps the
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
from ._more import CTC as CTC
from ._more import BinaryFocalCrossentropy as BinaryFocalCrossentropy
from ._more import CategoricalFocalCrossentropy as CategoricalFocalCrossentropy
from ._more import CategoricalHinge as CategoricalHinge
from ._more import CosineSimilarity as CosineSimilarity
from ._more import Dice as Dice
from ._more import Hinge as Hinge
from ._more import KLDivergence as KLDivergence
from ._more import LogCosh as LogCosh
from ._more import MeanAbsolutePercentageError as MeanAbsolutePercentageError
from ._more import MeanSquaredLogarithmicError as MeanSquaredLogarithmicError
from ._more import Poisson as Poisson
from ._more import SquaredHinge as SquaredHinge
from ._more import Tversky as Tversky
from ._more import binary_focal_crossentropy as binary_focal_crossentropy
from ._more import categorical_focal_crossentropy as categorical_focal_crossentropy
from ._more import categorical_hinge as categorical_hinge
from ._more import cosine_similarity as cosine_similarity
from ._more import ctc as ctc
from ._more import dice as dice
from ._more import hinge as hinge
from ._more import kl_divergence as kl_divergence
from ._more import log_cosh as log_cosh
from ._more import mean_absolute_percentage_error as mean_absolute_percentage_error
from ._more import mean_squared_logarithmic_error as mean_squared_logarithmic_error
from ._more import poisson as poisson
from ._more import squared_hinge as squared_hinge
from ._more import tversky as tversky

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the rank alignment of
# labels and predictions that `phalanx.metrics` shares with the losses, and the merge of a
# model output's Keras mask into the compiled loss's weights (`phalanx.train`'s step).
from ._losses import squeeze_or_expand_to_same_rank as squeeze_or_expand_to_same_rank
from ._reduction import apply_output_mask as apply_output_mask

mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kl_divergence

__all__ = [
    "BinaryCrossentropy",
    "BinaryFocalCrossentropy",
    "CTC",
    "CategoricalCrossentropy",
    "CategoricalFocalCrossentropy",
    "CategoricalHinge",
    "CosineSimilarity",
    "Dice",
    "Hinge",
    "Huber",
    "KLD",
    "KLDivergence",
    "LogCosh",
    "Logits",
    "Loss",
    "LossFunctionWrapper",
    "MAE",
    "MAPE",
    "MSE",
    "MSLE",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "MeanSquaredLogarithmicError",
    "Poisson",
    "Reduction",
    "SparseCategoricalCrossentropy",
    "SquaredHinge",
    "Tversky",
    "binary_crossentropy",
    "binary_focal_crossentropy",
    "categorical_crossentropy",
    "categorical_focal_crossentropy",
    "categorical_hinge",
    "cosine_similarity",
    "ctc",
    "dice",
    "get",
    "hinge",
    "huber",
    "kl_divergence",
    "kld",
    "log_cosh",
    "mae",
    "mape",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_error",
    "mean_squared_logarithmic_error",
    "mse",
    "msle",
    "poisson",
    "sparse_categorical_crossentropy",
    "squared_hinge",
    "tversky",
]
