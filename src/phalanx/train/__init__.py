"""The Keras-style surface: ``Model``, ``Sequential``, layers, losses, metrics, optimizers.

``Model`` (``_model``) gives any flax.nnx module Keras's ``compile``/``fit``/
``evaluate``/``predict``; its compiled steps are pure functions (``_step``) fed
by data adapters (``_adapter``). The pieces it builds on document their
protocols in
:mod:`phalanx.train._network` (build, call, random keys, batch statistics),
:mod:`phalanx.train._logits` (stable cross-entropy), :mod:`phalanx.train._metric`
(pure, additive metric states) and :mod:`phalanx.train._learning_rate`
(reading and setting an optimizer state's learning rate).
"""

from . import layers as layers
from . import losses as losses
from . import metrics as metrics
from . import optimizers as optimizers
from . import regularizers as regularizers
from ._core_layers import Input as Input
from ._logits import Logits as Logits
from ._model import Model as Model
from ._network import Sequential as SequentialNetwork
from ._sequential import Sequential as Sequential
from ._state import NON_TRAINABLE as NON_TRAINABLE
from ._state import TRAINABLE as TRAINABLE
from ._state import count_params as count_params
from ._state import split_state as split_state

__all__ = [
    "Input",
    "NON_TRAINABLE",
    "TRAINABLE",
    "Logits",
    "Model",
    "Sequential",
    "SequentialNetwork",
    "count_params",
    "layers",
    "losses",
    "metrics",
    "optimizers",
    "regularizers",
    "split_state",
]
