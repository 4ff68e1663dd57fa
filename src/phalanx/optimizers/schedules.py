"""Keras's learning-rate schedules (``step -> learning rate``, jittable).

Give one as an optimizer's ``learning_rate``; optax schedules work the same way.
"""

from ._schedules import CosineDecay as CosineDecay
from ._schedules import CosineDecayRestarts as CosineDecayRestarts
from ._schedules import ExponentialDecay as ExponentialDecay
from ._schedules import InverseTimeDecay as InverseTimeDecay
from ._schedules import LearningRateSchedule as LearningRateSchedule
from ._schedules import PiecewiseConstantDecay as PiecewiseConstantDecay
from ._schedules import PolynomialDecay as PolynomialDecay

__all__ = [
    "CosineDecay",
    "CosineDecayRestarts",
    "ExponentialDecay",
    "InverseTimeDecay",
    "LearningRateSchedule",
    "PiecewiseConstantDecay",
    "PolynomialDecay",
]
