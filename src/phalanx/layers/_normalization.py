"""Keras's BatchNormalization and LayerNormalization on flax.nnx, with Keras's defaults.

``BatchNormalization`` (momentum 0.99, epsilon 1e-3, as Keras) keeps its
moving mean and variance in ``nnx.BatchStat`` variables: non-trainable state
that a training call updates in place. Under a distribution strategy each
replica normalizes with its own batch's statistics and updates its own copy
(Keras's default under ``MirroredStrategy``, no cross-replica sync); the step
averages the ``nnx.BatchStat`` collection over replicas afterwards
(``phalanx.train.NON_TRAINABLE`` is that filter). ``synchronized=True``
averages the batch statistics over the replica axis named ``axis_name``
instead (Keras's ``synchronized``), which requires calling it inside
``strategy.run``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flax import nnx

from ..errors import LayerArgumentError
from ..regularizers import _regularizers
from . import _initializers
from ._layer import Layer, Shape, format_shape


def _feature_axis(layer: Layer, axis: int, input_shape: Shape) -> int:
    """Resolves a Keras ``axis`` (counted with the batch axis) to a per-example axis."""
    rank = len(input_shape) + 1
    full = axis if axis >= 0 else rank + axis
    if not 1 <= full < rank:
        raise layer._error(
            f"has axis={axis}, which is not a feature axis of inputs of shape "
            f"{format_shape(input_shape)} (the batch axis 0 cannot be normalized over)."
        )
    if input_shape[full - 1] is None:
        raise layer._error(f"needs a known size on axis {axis}, received {input_shape}.")
    return full


def _axis(layer: str, axis: Any) -> int:
    """Keras's ``axis``: an int (or a list of one int), counted with the batch axis."""
    one = axis[0] if isinstance(axis, list | tuple) and len(axis) == 1 else axis
    if isinstance(one, bool) or not isinstance(one, int | np.integer):
        raise LayerArgumentError(
            f"{layer} axis must be an int (the feature axis, counted with the batch axis: "
            f"-1 for the last), got {axis!r} ({type(axis).__name__}); e.g. {layer}(axis=-1)."
        )
    return int(one)


class _Normalization(Layer):
    _weight_regularizer_paths = (
        ("gamma_regularizer", ("norm", "scale")),
        ("beta_regularizer", ("norm", "bias")),
    )


class BatchNormalization(_Normalization):
    """Normalizes each feature with batch statistics in training and moving ones in inference.

    A frozen layer (``trainable = False``, itself or through a model's
    ``trainable = False``) runs in inference mode even in training, as Keras.

    Args:
      axis: the feature axis (counted with the batch axis); default -1 (channels).
      momentum: the moving average's momentum; default 0.99 (Keras).
      epsilon: added to the variance; default 1e-3 (Keras).
      center: learn a bias (``beta``).
      scale: learn a scale (``gamma``).
      beta_initializer: default ``zeros``.
      gamma_initializer: default ``ones``.
      beta_regularizer: a penalty on ``beta`` (``"l2"``, ``L2(0.01)``, ...), keyword-only.
      gamma_regularizer: a penalty on ``gamma``, keyword-only.
      synchronized: average batch statistics over the replicas (needs
        ``axis_name``); default False, as Keras.
      axis_name: the mesh axis to average over when ``synchronized``.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Example:
      >>> layer = BatchNormalization()
      >>> layer.build((16,))
      (16,)
      >>> layer.count_params()  # gamma, beta, moving mean, moving variance
      64
    """

    supports_masking = True

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        synchronized: bool = False,
        axis_name: str | None = None,
        *,
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.beta_regularizer = _regularizers.get(beta_regularizer)
        self.gamma_regularizer = _regularizers.get(gamma_regularizer)
        if synchronized and axis_name is None:
            raise LayerArgumentError(
                "BatchNormalization(synchronized=True) needs axis_name, the replica mesh "
                "axis to average the statistics over (e.g. 'replica')."
            )
        self.axis = _axis("BatchNormalization", axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        _initializers.get(beta_initializer), _initializers.get(gamma_initializer)
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.synchronized = synchronized
        self.axis_name = axis_name if synchronized else None
        self.norm = nnx.data(None)

    def _check_input_shape(self, input_shape: Shape) -> None:
        _feature_axis(self, self.axis, input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        full = _feature_axis(self, self.axis, input_shape)
        self.norm = nnx.BatchNorm(
            input_shape[full - 1],
            axis=full,
            momentum=self.momentum,
            epsilon=self.epsilon,
            use_bias=self.center,
            use_scale=self.scale,
            bias_init=_initializers.get(self.beta_initializer),
            scale_init=_initializers.get(self.gamma_initializer),
            axis_name=self.axis_name,
            rngs=rngs,
        )

    def call(self, x, *, training, rngs):
        # Keras: a frozen BatchNormalization (trainable=False) runs in inference mode, also
        # with training=True and inside fit: moving statistics, which it does not update.
        batch_stats = training and self.trainable is not False
        return self.norm(self._cast(x), use_running_average=not batch_stats)


class LayerNormalization(_Normalization):
    """Normalizes each example over its last axis (``nnx.LayerNorm``), with Keras's epsilon 1e-3.

    Args:
      axis: the axis to normalize over; only the last axis (-1) is supported.
      epsilon: added to the variance; default 1e-3 (Keras).
      center: learn a bias (``beta``).
      scale: learn a scale (``gamma``).
      beta_initializer: default ``zeros``.
      gamma_initializer: default ``ones``.
      beta_regularizer: a penalty on ``beta`` (``"l2"``, ``L2(0.01)``, ...), keyword-only.
      gamma_regularizer: a penalty on ``gamma``, keyword-only.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Example:
      >>> layer = LayerNormalization()
      >>> layer.build((10, 16))
      (10, 16)
      >>> layer.count_params()
      32
    """

    supports_masking = True

    def __init__(
        self,
        axis: int = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        *,
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.beta_regularizer = _regularizers.get(beta_regularizer)
        self.gamma_regularizer = _regularizers.get(gamma_regularizer)
        self.axis = _axis("LayerNormalization", axis)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        _initializers.get(beta_initializer), _initializers.get(gamma_initializer)
        self.beta_initializer = beta_initializer
        self.gamma_initializer = gamma_initializer
        self.norm = nnx.data(None)

    def _check_input_shape(self, input_shape: Shape) -> None:
        full = _feature_axis(self, self.axis, input_shape)
        if full != len(input_shape):
            raise self._error(
                f"supports only the last axis (axis=-1), got axis={self.axis} for inputs "
                f"of shape {format_shape(input_shape)}."
            )

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        self.norm = nnx.LayerNorm(
            input_shape[-1],
            epsilon=self.epsilon,
            use_bias=self.center,
            use_scale=self.scale,
            bias_init=_initializers.get(self.beta_initializer),
            scale_init=_initializers.get(self.gamma_initializer),
            rngs=rngs,
        )

    def call(self, x, *, training, rngs):
        return self.norm(self._cast(x))
