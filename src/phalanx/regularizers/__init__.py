"""Keras's regularizers: ``L1``, ``L2``, ``L1L2`` (and ``l1``, ``l2``, ``l1_l2``), by object or name.

Give them to layers (``Dense(64, kernel_regularizer=phalanx.regularizers.L2(1e-4))``);
``model.losses`` lists the penalties and ``fit`` adds them to the loss as Keras
does under ``tf.distribute`` (see `phalanx.regularizers._regularizers`). In a
custom loop, add ``phalanx.scale_regularization_loss(sum(net.losses))``.
"""

from ._regularizers import L1 as L1
from ._regularizers import L1L2 as L1L2
from ._regularizers import L2 as L2
from ._regularizers import Regularizer as Regularizer
from ._regularizers import get as get
from ._regularizers import serialize as serialize

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the weight and
# activity penalties that layers collect and the trainer adds to the loss.
from ._regularizers import Regularized as Regularized
from ._regularizers import has_regularizers as has_regularizers
from ._regularizers import losses as losses
from ._regularizers import pop_activity as pop_activity
from ._regularizers import weight_losses as weight_losses

l1 = L1
l2 = L2
l1_l2 = L1L2


def deserialize(config: dict) -> Regularizer:
    """Returns the regularizer a ``serialize`` dict describes (Keras's ``deserialize``).

    Examples:
      >>> deserialize({"class_name": "L2", "config": {"l2": 0.001}})
      L2(l2=0.001)
    """
    return get(config)


__all__ = [
    "L1",
    "L1L2",
    "L2",
    "Regularizer",
    "deserialize",
    "get",
    "l1",
    "l1_l2",
    "l2",
    "serialize",
]
