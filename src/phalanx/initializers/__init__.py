"""Keras 3's ``keras.initializers``: the classes, their snake-case names, ``get``/``serialize``."""

from ._initializers import Constant as Constant
from ._initializers import GlorotNormal as GlorotNormal
from ._initializers import GlorotUniform as GlorotUniform
from ._initializers import HeNormal as HeNormal
from ._initializers import HeUniform as HeUniform
from ._initializers import Identity as Identity
from ._initializers import Initializer as Initializer
from ._initializers import LecunNormal as LecunNormal
from ._initializers import LecunUniform as LecunUniform
from ._initializers import Ones as Ones
from ._initializers import Orthogonal as Orthogonal
from ._initializers import RandomNormal as RandomNormal
from ._initializers import RandomUniform as RandomUniform
from ._initializers import TruncatedNormal as TruncatedNormal
from ._initializers import VarianceScaling as VarianceScaling
from ._initializers import Zeros as Zeros
from ._initializers import deserialize as deserialize
from ._initializers import get as get
from ._initializers import serialize as serialize

__all__ = [
    "Constant",
    "GlorotNormal",
    "GlorotUniform",
    "HeNormal",
    "HeUniform",
    "Identity",
    "Initializer",
    "LecunNormal",
    "LecunUniform",
    "Ones",
    "Orthogonal",
    "RandomNormal",
    "RandomUniform",
    "TruncatedNormal",
    "VarianceScaling",
    "Zeros",
    "deserialize",
    "get",
    "serialize",
]
