"""``Logits``: the pre-activation values a network hands to its loss.

The logits protocol (how phalanx keeps cross-entropy stable when the last layer
applies ``softmax`` or ``sigmoid``, as Keras does on TensorFlow):

1. ``Sequential.__call__(x, training=..., return_logits=True)`` returns
   ``(y_pred, logits)``. ``logits`` is a `Logits` when the network's last
   layer ends in ``softmax`` or ``sigmoid`` (``Dense(10, activation="softmax")``
   or ``Activation("sigmoid")``), else None. ``y_pred`` is always the
   probabilities the user asked for.
2. Every phalanx loss takes ``logits=`` (``loss(y_true, y_pred, logits=logits)``).
   A cross-entropy loss with ``from_logits=False`` whose kind matches
   ``logits.activation`` (softmax for the categorical losses, sigmoid for the
   binary one) computes its value from ``logits.value`` with ``log_softmax`` /
   ``log_sigmoid``: finite and exact where probabilities saturate at 0 or 1.
   Any other loss (``mse``, a mismatched activation, ``from_logits=True``)
   ignores ``logits`` and uses ``y_pred``.
3. A user's own ``nnx.Module`` has no such output: pass ``logits=None`` and the
   loss clips probabilities at ``1e-7`` as Keras does.

``Logits`` is a pytree (``value`` is a leaf, ``activation`` static), so it can
be returned from a jitted or ``shard_map``-ped function.
"""

from __future__ import annotations

import dataclasses

import jax


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Logits:
    """Pre-activation outputs of a network whose last activation is softmax or sigmoid.

    Attributes:
      value: the logits, the same shape as the network's output.
      activation: ``"softmax"`` (over the last axis) or ``"sigmoid"``: the
        function that turned ``value`` into the network's output.

    Examples:
      >>> import jax.numpy as jnp
      >>> Logits(jnp.zeros((2, 3)), "softmax").activation
      'softmax'
    """

    value: jax.Array
    activation: str = dataclasses.field(metadata={"static": True})

    def __post_init__(self):
        if self.activation not in ("softmax", "sigmoid"):
            raise ValueError(
                f"Logits.activation must be 'softmax' or 'sigmoid', got {self.activation!r}."
            )
