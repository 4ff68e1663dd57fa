"""Keras's weight constraints: ``MaxNorm``, ``MinMaxNorm``, ``NonNeg``, ``UnitNorm`` (and
``max_norm``, ``min_max_norm``, ``non_neg``, ``unit_norm``), by object or name.

Give them to layers (``Dense(64, kernel_constraint=phalanx.constraints.MaxNorm(3))``,
``add_weight(constraint=...)``); ``fit`` projects each constrained weight right after
every optimizer update, inside the compiled step, as Keras 3's optimizer does.
"""

from ._constraints import Constraint as Constraint
from ._constraints import MaxNorm as MaxNorm
from ._constraints import MinMaxNorm as MinMaxNorm
from ._constraints import NonNeg as NonNeg
from ._constraints import UnitNorm as UnitNorm
from ._constraints import deserialize as deserialize
from ._constraints import get as get
from ._constraints import serialize as serialize

max_norm = MaxNorm
min_max_norm = MinMaxNorm
non_neg = NonNeg
unit_norm = UnitNorm

__all__ = [
    "Constraint",
    "MaxNorm",
    "MinMaxNorm",
    "NonNeg",
    "UnitNorm",
    "deserialize",
    "get",
    "max_norm",
    "min_max_norm",
    "non_neg",
    "serialize",
    "unit_norm",
]
