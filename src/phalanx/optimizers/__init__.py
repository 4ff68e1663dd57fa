"""Keras's optimizers by name, with Keras's defaults, as optax transformations.

``optimizers.get("adam")`` (or ``optimizers.Adam(learning_rate=...)``) gives an
optimizer whose ``to_optax()`` keeps the learning rate in its state, so
``get_learning_rate``/``set_learning_rate`` read and change it at run time
without recompiling. Any optax ``GradientTransformation`` is accepted as is.
Schedules with Keras's names are in `phalanx.optimizers.schedules`.
"""

from . import schedules as schedules
from ._learning_rate import get_learning_rate as get_learning_rate
from ._learning_rate import learning_rate_is_schedule as learning_rate_is_schedule
from ._learning_rate import set_learning_rate as set_learning_rate
from ._optimizer import Optimizer as Optimizer
from ._optimizers import SGD as SGD
from ._optimizers import Adadelta as Adadelta
from ._optimizers import Adafactor as Adafactor
from ._optimizers import Adagrad as Adagrad
from ._optimizers import Adam as Adam
from ._optimizers import Adamax as Adamax
from ._optimizers import AdamW as AdamW
from ._optimizers import Ftrl as Ftrl
from ._optimizers import Lamb as Lamb
from ._optimizers import Lion as Lion
from ._optimizers import Nadam as Nadam
from ._optimizers import RMSprop as RMSprop
from ._optimizers import get as get

# isort: split
# For phalanx's own packages (not public API, absent from __all__): Keras's scalar
# variables, schedule steps, the moving average and the gradient accumulation that
# compile and saving read; model.optimizer's handle; one optimizer per part of a model
# (compile's dict).
from ._handle import OptimizerHandle as OptimizerHandle
from ._keras_scalars import KerasFloat as KerasFloat
from ._keras_scalars import KerasInt as KerasInt
from ._learning_rate import check_schedule as check_schedule
from ._learning_rate import schedule_count as schedule_count
from ._optimizer import reset_names as reset_names
from ._options import AccumulateState as AccumulateState
from ._options import MovingAverageState as MovingAverageState
from ._options import moving_average_of as moving_average_of
from ._part_optimizers import PartOptimizers as PartOptimizers

__all__ = [
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Ftrl",
    "Lamb",
    "Lion",
    "Nadam",
    "Optimizer",
    "RMSprop",
    "get",
    "get_learning_rate",
    "learning_rate_is_schedule",
    "schedules",
    "set_learning_rate",
]
