"""Which model state is trained and which is carried: the filters a training step splits by.

``TRAINABLE`` (``nnx.Param``) are the weights the optimizer updates;
``NON_TRAINABLE`` (``nnx.BatchStat``) are the moving statistics of batch
normalization, updated by training calls and averaged over replicas by the
step. Anything else in a module's state (e.g. a user module's own
``nnx.RngState``) is neither: carry it unchanged.
"""

from __future__ import annotations

from flax import nnx

from ..layers import count_params

#: The nnx filter of trainable weights (Keras's ``trainable_weights``).
TRAINABLE = nnx.Param
#: The nnx filter of non-trainable state averaged over replicas (moving statistics).
NON_TRAINABLE = nnx.BatchStat


def split_state(module: nnx.Module):
    """Splits a built module into ``(graphdef, trainable, non_trainable, rest)``.

    ``nnx.merge(graphdef, trainable, non_trainable, rest)`` rebuilds it.

    Args:
      module: a built ``Sequential`` or any ``nnx.Module``.

    Returns:
      The graph definition and three ``nnx.State`` pytrees.

    Examples:
      >>> from phalanx import layers
      >>> from phalanx.models._network import Sequential
      >>> net = Sequential([layers.Dense(2, input_shape=(3,)), layers.BatchNormalization()])
      >>> _ = net.build()
      >>> graphdef, params, stats, rest = split_state(net)
      >>> count_params(net, TRAINABLE), count_params(net, NON_TRAINABLE)
      (12, 4)
    """
    return nnx.split(module, TRAINABLE, NON_TRAINABLE, ...)


__all__ = ["NON_TRAINABLE", "TRAINABLE", "count_params", "split_state"]
