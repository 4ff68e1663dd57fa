"""Keras's 1-D layers on flax.nnx: ``Conv1D``, ``GlobalAveragePooling1D``, ``GlobalMaxPooling1D``.

Inputs are ``(batch, steps, channels)`` (``channels_last``, Keras's default).
``Conv1D``'s kernel is ``(kernel_size, in_channels, filters)`` as Keras's, so
weights move between the two with ``set_weights``; ``padding`` is
``"valid"``, ``"same"`` or ``"causal"`` (left padding by ``dilation_rate *
(kernel_size - 1)``, as Keras).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._convolutional import Conv, check_data_format
from ._layer import Layer, Shape

_SEQUENCE = "(batch, steps, channels)"
_CHANNELS_LAST_HINT = (
    "phalanx's 1-D layers use 'channels_last' (batch, steps, channels). Transpose with "
    "jnp.swapaxes(x, 1, 2)."
)


class Conv1D(Conv):
    """A 1-D convolution over ``(batch, steps, channels)``, on ``nnx.Conv``.

    Takes Keras's ``Conv1D`` arguments (listed on ``Conv``): ``kernel_size``,
    ``strides`` and ``dilation_rate`` are ints (or tuples of one), kept as ints;
    ``padding`` may also be ``"causal"`` (left padding by ``dilation_rate *
    (kernel_size - 1)``); ``input_shape`` is ``(steps, channels)``.

    Example:
      >>> layer = Conv1D(8, 3, activation="relu")
      >>> layer.build((10, 4))
      (8, 8)
      >>> layer.count_params()
      104
    """

    rank = 1
    _paddings = ("valid", "same", "causal")
    _layout = _SEQUENCE
    _data_format_hint = _CHANNELS_LAST_HINT


class _GlobalPooling1D(Layer):
    def __init__(
        self,
        data_format: str | None = None,
        keepdims: bool = False,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        check_data_format(data_format, _CHANNELS_LAST_HINT)
        self.keepdims = bool(keepdims)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (1, input_shape[-1]) if self.keepdims else (input_shape[-1],)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 2, _SEQUENCE)

    def call(self, x, *, training, rngs):
        return self._reduce(self._cast(x), axis=1, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Averages over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Example:
      >>> GlobalAveragePooling1D().compute_output_shape((10, 16))
      (16,)
    """

    _reduce = staticmethod(jnp.mean)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps: ``(batch, steps, channels)`` -> ``(batch, channels)``.

    Args:
      data_format: ``"channels_last"`` or None.
      keepdims: keep the steps axis with size 1, as Keras.
      name: the layer's name.

    Example:
      >>> GlobalMaxPooling1D(keepdims=True).compute_output_shape((10, 16))
      (1, 16)
    """

    _reduce = staticmethod(jnp.max)
