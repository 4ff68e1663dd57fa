"""``summary()``'s "Optimizer params" line, counted as Keras 3 counts its optimizer variables.

Once ``fit`` has built the optimizer, Keras adds a line ``Optimizer params: 56 (228.00 B)``
and counts those in "Total params". Keras's optimizer holds an ``iterations`` counter
(int64), a ``learning_rate`` (float32) and, per trainable weight, one slot variable of
its shape for each of the optimizer's slots (Adam: momentum and velocity). phalanx's
optimizer state is optax's, whose leaves differ (an int32 count, hyperparameters), so
the count follows Keras's rule from the optimizer's configuration; an optax
transformation given to ``compile`` is counted from its state's leaves.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..optimizers import _optimizers as o

# Bytes of Keras's iterations (int64) and learning_rate (float32) variables.
_COUNTERS = (2, 8 + 4)


def _slots(optimizer: Any) -> int | None:
    """Keras's slot variables per trainable weight, or None for a non-Keras optimizer."""
    if isinstance(optimizer, o.Adam | o.AdamW):
        return 3 if getattr(optimizer, "amsgrad", False) else 2
    if isinstance(optimizer, o.SGD):
        return 1 if getattr(optimizer, "momentum", 0) else 0
    if isinstance(optimizer, o.RMSprop):
        momentum = 1 if getattr(optimizer, "momentum", 0) else 0
        return 1 + momentum + (1 if getattr(optimizer, "centered", False) else 0)
    if isinstance(optimizer, o.Adagrad):
        return 1
    return None


def optimizer_params(model: Any) -> tuple[int, int] | None:
    """``(count, bytes)`` of the optimizer's variables, or None before ``fit`` trained."""
    state, config = model._state, model._config
    if state is None or config is None or model.optimizer.iterations == 0:
        return None
    slots = _slots(getattr(config, "optimizer", None))
    if slots is None:
        leaves = jax.tree.leaves(state.opt_state)
        return sum(int(np.size(x)) for x in leaves), sum(int(x.nbytes) for x in leaves)
    trainable = [np.asarray(w) for w in model.trainable_weights]
    count = sum(int(w.size) for w in trainable)
    size = sum(int(w.size) * w.dtype.itemsize for w in trainable)
    return _COUNTERS[0] + slots * count, _COUNTERS[1] + slots * size
