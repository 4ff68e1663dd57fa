"""Keras's normalization layers: BatchNormalization and LayerNormalization on flax.nnx;
GroupNormalization, RMSNormalization and UnitNormalization with Keras 3's arithmetic.

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

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from .. import regularizers
from ..errors import LayerArgumentError
from . import _initializers
from ._args import keep_constraints
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
    _weight_constraint_paths = (
        ("gamma_constraint", ("norm", "scale")),
        ("beta_constraint", ("norm", "bias")),
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
      beta_constraint: a projection of ``beta`` after each optimizer update, keyword-only.
      gamma_constraint: a projection of ``gamma`` after each update, keyword-only.
      synchronized: average batch statistics over the replicas (needs
        ``axis_name``); default False, as Keras.
      axis_name: the mesh axis to average over when ``synchronized``.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Examples:
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
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        keep_constraints(self, beta_constraint=beta_constraint, gamma_constraint=gamma_constraint)
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
      beta_constraint: a projection of ``beta`` after each optimizer update, keyword-only.
      gamma_constraint: a projection of ``gamma`` after each update, keyword-only.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Examples:
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
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        keep_constraints(self, beta_constraint=beta_constraint, gamma_constraint=gamma_constraint)
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

    def check_input(self, x) -> None:
        """Any rank with the built feature size on the last axis (Keras has no input spec)."""
        built = self.built_input_shape[-1]
        if x.ndim < 2 or (built is not None and x.shape[-1] != built):
            raise self._error(
                f"was built for inputs with {built} features on the last axis, received shape "
                f"{tuple(x.shape)}."
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


class GroupNormalization(Layer):
    """Keras's ``GroupNormalization``: normalizes each example over groups of channels.

    The channels (last axis) split into ``groups`` groups; each group is
    normalized over its channels and all the other non-batch axes, then scaled
    by ``gamma`` and shifted by ``beta`` (one per channel), with Keras's
    arithmetic (``x * inv + (beta - mean * inv)``, float32 statistics).

    Args:
      groups: the number of groups; must divide the channels. Default 32;
        ``-1`` is one group per channel (instance normalization).
      axis: the channel axis; only -1 (the last) is supported.
      epsilon: added to the variance; default 1e-3.
      center: learn ``beta``.
      scale: learn ``gamma``.
      beta_initializer: default ``zeros``.
      gamma_initializer: default ``ones``.
      beta_regularizer: a penalty on ``beta``.
      gamma_regularizer: a penalty on ``gamma``.
      beta_constraint: a projection of ``beta`` after each optimizer update.
      gamma_constraint: a projection of ``gamma`` after each update.

    Examples:
      >>> layer = GroupNormalization(groups=2)
      >>> layer.build((None, 8, 4))
      (8, 4)
      >>> [w.name for w in layer.weights]
      ['gamma', 'beta']
    """

    supports_masking = True

    def __init__(
        self,
        groups: int = 32,
        axis: int = -1,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        beta_regularizer: Any = None,
        gamma_regularizer: Any = None,
        beta_constraint: Any = None,
        gamma_constraint: Any = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        keep_constraints(self, beta_constraint=beta_constraint, gamma_constraint=gamma_constraint)
        if (
            isinstance(groups, bool)
            or not isinstance(groups, int)
            or not (groups > 0 or groups == -1)
        ):
            raise LayerArgumentError(
                f"GroupNormalization groups must be a positive int or -1, got {groups!r}; "
                "e.g. GroupNormalization(groups=8)."
            )
        self.groups = groups
        self.axis = _axis("GroupNormalization", axis)
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        _initializers.get(beta_initializer), _initializers.get(gamma_initializer)
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)

    def _check_input_shape(self, input_shape: Shape) -> None:
        if _feature_axis(self, self.axis, input_shape) != len(input_shape):
            raise self._error(
                f"supports only the last axis (axis=-1), got axis={self.axis} for inputs of "
                f"shape {format_shape(input_shape)}."
            )
        channels = input_shape[-1]
        groups = channels if self.groups == -1 else self.groups
        if channels % groups:
            raise self._error(
                f"has groups={self.groups}, which must divide the {channels} channels of "
                f"inputs of shape {format_shape(input_shape)}."
            )

    def build(self, input_shape):
        channels = input_shape[-1]
        if self.scale:
            self.gamma = self.add_weight(
                shape=(channels,),
                initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
                name="gamma",
            )
        if self.center:
            self.beta = self.add_weight(
                shape=(channels,),
                initializer=self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
                name="beta",
            )

    def call(self, x, *, training, rngs):
        dtype = x.dtype if self.dtype is None else self.dtype
        channels = x.shape[-1]
        groups = channels if self.groups == -1 else self.groups
        grouped = x.astype(jnp.float32).reshape((*x.shape[:-1], groups, channels // groups))
        axes = (*range(1, grouped.ndim - 2), grouped.ndim - 1)
        mean = jnp.mean(grouped, axis=axes, keepdims=True)
        variance = jnp.var(grouped, axis=axes, keepdims=True)
        inv = jax.lax.rsqrt(variance + self.epsilon)
        per_group = (groups, channels // groups)
        if self.scale:
            inv = inv * jnp.asarray(self.gamma, jnp.float32).reshape(per_group)
        shift = -mean * inv
        if self.center:
            shift = shift + jnp.asarray(self.beta, jnp.float32).reshape(per_group)
        return (grouped * inv + shift).reshape(x.shape).astype(_float(dtype))


def _float(dtype: Any) -> Any:
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.float32


class RMSNormalization(Layer):
    """Keras's ``RMSNormalization``: ``x * rsqrt(mean(x ** 2) + epsilon) * scale`` over ``axis``.

    Args:
      axis: the axis (or list of axes) to normalize over; default -1.
      epsilon: added to the mean square; default 1e-6.

    Examples:
      >>> import jax.numpy as jnp
      >>> [round(v, 3) for v in RMSNormalization()(jnp.array([[3.0, 4.0]]))[0].tolist()]
      [0.849, 1.131]
    """

    supports_masking = True

    def __init__(
        self,
        axis: Any = -1,
        epsilon: float = 1e-6,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
        self.axis = tuple(_axis("RMSNormalization", a) for a in axes)
        self.epsilon = float(epsilon)

    def _axes(self, rank: int) -> tuple[int, ...]:
        return tuple(sorted(a if a >= 0 else rank + a for a in self.axis))

    def _check_input_shape(self, input_shape: Shape) -> None:
        for a in self.axis:
            _feature_axis(self, a, input_shape)

    def build(self, input_shape):
        axes = self._axes(len(input_shape))
        self.scale = self.add_weight(
            shape=tuple(input_shape[a] for a in axes), initializer="ones", name="scale"
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = list(self.axis) if len(self.axis) > 1 else self.axis[0]
        return config

    def call(self, x, *, training, rngs):
        dtype = _float(x.dtype if self.dtype is None else self.dtype)
        x32 = x.astype(jnp.float32)
        axes = self._axes(x.ndim)
        rrms = jax.lax.rsqrt(jnp.mean(jnp.square(x32), axis=axes, keepdims=True) + self.epsilon)
        shape = [1] * x.ndim
        for a in axes:
            shape[a] = x.shape[a]
        scale = jnp.asarray(self.scale, jnp.float32).reshape(shape)
        return (x32 * rrms * scale).astype(dtype)


class UnitNormalization(Layer):
    """Keras's ``UnitNormalization``: each example scaled to L2 norm 1 over ``axis``.

    ``x * min(rsqrt(sum(x ** 2)), 1e12)``, as Keras's ``ops.normalize``.

    Args:
      axis: the axis (or list of axes); default -1.

    Examples:
      >>> import jax.numpy as jnp
      >>> UnitNormalization()(jnp.array([[3.0, 4.0]])).tolist()
      [[0.6000000238418579, 0.800000011920929]]
    """

    supports_masking = True

    def __init__(self, axis: Any = -1, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
        self.axis = tuple(_axis("UnitNormalization", a) for a in axes)

    def _check_input_shape(self, input_shape: Shape) -> None:
        for a in self.axis:
            _feature_axis(self, a, input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = list(self.axis) if len(self.axis) > 1 else self.axis[0]
        return config

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        axes = tuple(a if a >= 0 else x.ndim + a for a in self.axis)
        square_sum = jnp.sum(jnp.square(x), axis=axes, keepdims=True)
        return x * jnp.minimum(jax.lax.rsqrt(square_sum), 1.0 / 1e-12)
