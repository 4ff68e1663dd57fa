"""Keras 3's activation functions (``keras.activations``), by function or by name.

``phalanx.activations.relu(x)``, ``activations.get("gelu")`` and a layer's
``activation="celu"`` are Keras's: the same names, signatures and defaults, and
the values and gradients of Keras's JAX backend (see
`phalanx.activations._functions`). ``get``, ``serialize`` and ``deserialize``
convert between names, Keras's config dicts and functions
(`phalanx.activations._lookup`).
"""

from ._functions import celu as celu
from ._functions import elu as elu
from ._functions import exponential as exponential
from ._functions import gelu as gelu
from ._functions import glu as glu
from ._functions import hard_shrink as hard_shrink
from ._functions import hard_sigmoid as hard_sigmoid
from ._functions import hard_silu as hard_silu
from ._functions import hard_swish as hard_swish
from ._functions import hard_tanh as hard_tanh
from ._functions import leaky_relu as leaky_relu
from ._functions import linear as linear
from ._functions import log_sigmoid as log_sigmoid
from ._functions import log_softmax as log_softmax
from ._functions import mish as mish
from ._functions import relu as relu
from ._functions import relu6 as relu6
from ._functions import selu as selu
from ._functions import sigmoid as sigmoid
from ._functions import silu as silu
from ._functions import soft_shrink as soft_shrink
from ._functions import softmax as softmax
from ._functions import softplus as softplus
from ._functions import softsign as softsign
from ._functions import sparse_plus as sparse_plus
from ._functions import sparse_sigmoid as sparse_sigmoid
from ._functions import sparsemax as sparsemax
from ._functions import squareplus as squareplus
from ._functions import swish as swish
from ._functions import tanh as tanh
from ._functions import tanh_shrink as tanh_shrink
from ._functions import threshold as threshold
from ._lookup import deserialize as deserialize
from ._lookup import get as get
from ._lookup import serialize as serialize

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the names whose
# logits the losses use, a layer's activation by name, and the known names.
from ._lookup import LOGIT_ACTIVATIONS as LOGIT_ACTIVATIONS
from ._lookup import name_of as name_of
from ._lookup import names as names

__all__ = [
    "celu",
    "deserialize",
    "elu",
    "exponential",
    "gelu",
    "get",
    "glu",
    "hard_shrink",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "leaky_relu",
    "linear",
    "log_sigmoid",
    "log_softmax",
    "mish",
    "relu",
    "relu6",
    "selu",
    "serialize",
    "sigmoid",
    "silu",
    "soft_shrink",
    "softmax",
    "softplus",
    "softsign",
    "sparse_plus",
    "sparse_sigmoid",
    "sparsemax",
    "squareplus",
    "swish",
    "tanh",
    "tanh_shrink",
    "threshold",
]
