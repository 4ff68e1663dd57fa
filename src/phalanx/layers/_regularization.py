"""Keras's regularization layers: ``Dropout``, ``SpatialDropout1D/2D``, ``GaussianDropout``, ``GaussianNoise``.

They act in training only and draw from the key the call is given
(``__call__(..., rngs=key)``: ``fit`` gives a fresh one per step and replica, see
`phalanx.models._network`; a subclassed model's ``call`` gets it from the
random context). Spatial dropout drops whole channels: one mask per example and
channel, shared over the steps (1-D) or the pixels (2-D), as Keras.
"""

from __future__ import annotations

import math
from typing import Any

import jax
from flax import nnx

from ..errors import LayerArgumentError
from ..regularizers import L1L2
from . import _args as _layer_args
from ._layer import Layer, Shape, format_shape, normalize_shape


def _key(layer: Layer, rngs: Any, seed: int | None):
    if rngs is None:
        raise ValueError(
            f"Layer '{layer.name}' ({type(layer).__name__}) needs a random key in training: "
            "fit gives one; call it with rngs=jax.random.key(seed)."
        )
    if isinstance(rngs, nnx.Rngs):
        rngs = rngs.dropout()
    return rngs if seed is None else jax.random.fold_in(rngs, seed)


class Dropout(Layer):
    """Sets a fraction ``rate`` of inputs to 0 in training and scales the rest by ``1/(1-rate)``.

    Built on ``nnx.Dropout``; holds no random state. In training it needs a key:
    ``layer(x, training=True, rngs=key)`` with ``key`` a ``jax.random`` key or
    an ``nnx.Rngs`` (its ``dropout`` stream). A network derives each layer's
    key from the one given to it; the training step gives a fresh key per step
    and replica.

    Args:
      rate: the fraction of inputs to drop, in [0, 1).
      noise_shape: a shape broadcastable to the input (batch axis included)
        whose 1-sized axes share the mask, as Keras.
      seed: an int folded into the key given at call time (so two dropouts fed
        the same key differ).
      name: the layer's name.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> Dropout(0.5)(jnp.ones((1, 4))).tolist()  # inference: identity
      [[1.0, 1.0, 1.0, 1.0]]
    """

    supports_masking = True

    def __init__(
        self,
        rate: float,
        noise_shape: Any = None,
        seed: int | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.rate = _layer_args.rate(type(self).__name__, "rate", rate, one=True)
        self.noise_shape = (
            None if noise_shape is None else normalize_shape(noise_shape, "noise_shape")
        )
        if self.noise_shape is not None and any(d is not None and d < 1 for d in self.noise_shape):
            raise LayerArgumentError(
                f"{type(self).__name__} noise_shape must hold positive sizes or None, got "
                f"{noise_shape!r}; e.g. noise_shape=(None, 1, 8) (batch included) drops the "
                "same features at every step."
            )
        self.seed = seed
        self.dropout = nnx.data(None)

    @property
    def uses_rng(self) -> bool:
        """True when the layer draws random numbers in training (``rate > 0``)."""
        return self.rate > 0.0

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        broadcast = ()
        if self.noise_shape is not None:
            if len(self.noise_shape) != len(input_shape) + 1:
                raise self._error(
                    f"noise_shape {self.noise_shape} must have the input's rank "
                    f"{len(input_shape) + 1} (batch included); input shape "
                    f"{format_shape(input_shape)}."
                )
            broadcast = tuple(i for i, d in enumerate(self.noise_shape) if d == 1)
        self.dropout = nnx.Dropout(self.rate, broadcast_dims=broadcast, rngs=None)

    def call(self, x, *, training, rngs):
        if not training or self.rate == 0.0:
            return x
        if rngs is None:
            raise ValueError(
                f"Layer '{self.name}' (Dropout) needs a random key in training: call "
                "model(x, training=True, rngs=jax.random.key(seed)) with a fresh key "
                "per step (Model.fit does this for you)."
            )
        if isinstance(rngs, nnx.Rngs):
            rngs = rngs.dropout()
        if self.seed is not None:
            rngs = jax.random.fold_in(rngs, self.seed)
        return self.dropout(x, deterministic=False, rngs=rngs)


class SpatialDropout1D(Dropout):
    """Drops whole channels of ``(batch, steps, channels)`` inputs in training.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      seed: an int folded into the call's key.
      name: the layer's name.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> out = SpatialDropout1D(0.5)(jnp.ones((1, 4, 3)), training=True, rngs=jax.random.key(0))
      >>> bool((out == out[:, :1]).all())  # one mask per channel, shared by the steps
      True
    """

    _rank = 2

    def __init__(self, rate: float, seed: int | None = None, *, name: str | None = None):
        super().__init__(rate, seed=seed, name=name)

    def _check_input_shape(self, input_shape: Shape) -> None:
        layout = {
            2: "(batch, steps, channels)",
            3: "(batch, h, w, channels)",
            4: "(batch, d, h, w, channels)",
        }[self._rank]
        self._require_rank(input_shape, self._rank, layout)

    def get_config(self) -> dict:
        """Keras's: the rate and seed (the noise shape follows from the layer)."""
        config = super().get_config()
        config.pop("noise_shape", None)
        return config

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        self.noise_shape = (None, *([1] * (self._rank - 1)), None)
        self.dropout = nnx.Dropout(self.rate, broadcast_dims=tuple(range(1, self._rank)), rngs=None)


class SpatialDropout2D(SpatialDropout1D):
    """Drops whole channels of NHWC images in training.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      data_format: ``"channels_last"`` or None.
      seed: an int folded into the call's key.
      name: the layer's name.
    """

    _rank = 3

    def __init__(
        self,
        rate: float,
        data_format: str | None = None,
        seed: int | None = None,
        *,
        name: str | None = None,
    ):
        if data_format not in (None, "channels_last"):
            raise LayerArgumentError(
                f"data_format={data_format!r} is not supported: SpatialDropout2D takes "
                "'channels_last' (NHWC) inputs. Transpose with jnp.transpose(x, (0, 2, 3, 1))."
            )
        super().__init__(rate, seed=seed, name=name)


class SpatialDropout3D(SpatialDropout1D):
    """Drops whole channels of NDHWC volumes in training.

    Args:
      rate: the fraction of channels to drop, in [0, 1).
      data_format: ``"channels_last"`` or None.
      seed: an int folded into the call's key.
      name: the layer's name.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.ones((1, 2, 2, 2, 3))
      >>> out = SpatialDropout3D(0.5)(x, training=True, rngs=jax.random.key(0))
      >>> bool((out == out[:, :1, :1, :1]).all())  # one mask per channel
      True
    """

    _rank = 4

    def __init__(
        self,
        rate: float,
        data_format: str | None = None,
        seed: int | None = None,
        *,
        name: str | None = None,
    ):
        if data_format not in (None, "channels_last"):
            raise LayerArgumentError(
                f"data_format={data_format!r} is not supported: SpatialDropout3D takes "
                "'channels_last' (NDHWC) inputs. Transpose with "
                "jnp.transpose(x, (0, 2, 3, 4, 1))."
            )
        super().__init__(rate, seed=seed, name=name)


class GaussianDropout(Layer):
    """Multiplies inputs by noise ``N(1, rate / (1 - rate))`` in training, as Keras.

    Args:
      rate: the drop probability the noise imitates, in [0, 1).
      seed: an int folded into the call's key.
      name: the layer's name.

    Examples:
      >>> import jax.numpy as jnp
      >>> GaussianDropout(0.3)(jnp.ones((1, 2))).tolist()  # inference: identity
      [[1.0, 1.0]]
    """

    supports_masking = True

    def __init__(self, rate: float, seed: int | None = None, *, name: str | None = None):
        super().__init__(name=name)
        self.rate = _layer_args.rate("GaussianDropout", "rate", rate, one=False)
        self.seed = seed

    @property
    def uses_rng(self) -> bool:
        """True when the layer draws noise in training."""
        return self.rate > 0.0

    def call(self, x, *, training, rngs):
        if not training or self.rate == 0.0:
            return x
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = jax.random.normal(_key(self, rngs, self.seed), x.shape, x.dtype)
        return x * (1.0 + stddev * noise)


class GaussianNoise(Layer):
    """Adds noise ``N(0, stddev**2)`` in training, as Keras.

    Args:
      stddev: the noise's standard deviation (>= 0).
      seed: an int folded into the call's key.
      name: the layer's name.

    Examples:
      >>> import jax.numpy as jnp
      >>> GaussianNoise(0.1)(jnp.zeros((1, 2))).tolist()  # inference: identity
      [[0.0, 0.0]]
    """

    supports_masking = True

    def __init__(self, stddev: float, seed: int | None = None, *, name: str | None = None):
        super().__init__(name=name)
        self.stddev = _layer_args.non_negative("GaussianNoise", "stddev", stddev)
        self.seed = seed

    @property
    def uses_rng(self) -> bool:
        """True when the layer draws noise in training."""
        return self.stddev > 0.0

    def call(self, x, *, training, rngs):
        if not training or self.stddev == 0.0:
            return x
        noise = jax.random.normal(_key(self, rngs, self.seed), x.shape, x.dtype)
        return x + self.stddev * noise


class AlphaDropout(Layer):
    """Keras's ``AlphaDropout``: dropout that keeps a SELU network's mean and variance.

    In training, dropped entries are set to ``-alpha * scale`` of SELU and the
    result is transformed by ``a * x + b`` (Keras 3's constants), so that the
    mean and variance of the inputs are kept; in inference, the identity.

    Args:
      rate: the drop probability, in [0, 1].
      noise_shape: a shape broadcastable to the input (batch included), None
        entries filled from the input.
      seed: an int folded into the call's key.

    Examples:
      >>> import jax.numpy as jnp
      >>> AlphaDropout(0.2)(jnp.ones((1, 2))).tolist()  # inference: identity
      [[1.0, 1.0]]
    """

    supports_masking = True

    def __init__(
        self,
        rate: float,
        noise_shape: Any = None,
        seed: int | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.rate = _layer_args.rate("AlphaDropout", "rate", rate, one=True)
        self.noise_shape = (
            None if noise_shape is None else normalize_shape(noise_shape, "noise_shape")
        )
        if self.noise_shape is not None and any(d is not None and d < 1 for d in self.noise_shape):
            raise LayerArgumentError(
                f"AlphaDropout noise_shape must hold positive sizes or None, got {noise_shape!r}."
            )
        self.seed = seed

    @property
    def uses_rng(self) -> bool:
        """True when the layer draws a mask in training (``rate > 0``)."""
        return self.rate > 0.0

    def call(self, x, *, training, rngs):
        if not training or self.rate == 0.0:
            return x
        shape = x.shape
        if self.noise_shape is not None:
            shape = tuple(x.shape[i] if d is None else d for i, d in enumerate(self.noise_shape))
        alpha = 1.6732632423543772848170429916717
        scale = 1.0507009873554804934193349852946
        alpha_p = -alpha * scale
        uniform = jax.random.uniform(_key(self, rngs, self.seed), shape, x.dtype)
        kept = (uniform >= self.rate).astype(x.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p**2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (x * kept + alpha_p * (1 - kept)) + b


class ActivityRegularization(Layer):
    """Keras's ``ActivityRegularization``: the identity, adding ``L1L2(l1, l2)`` of its output
    (divided by the batch size) to the loss.

    Args:
      l1: the L1 factor, >= 0; default 0.
      l2: the L2 factor, >= 0; default 0.

    Examples:
      >>> import jax.numpy as jnp
      >>> layer = ActivityRegularization(l2=0.5)
      >>> _ = layer(jnp.array([[1.0, 2.0]]))
      >>> float(layer.losses[0])
      2.5
    """

    supports_masking = True

    def __init__(
        self,
        l1: float = 0.0,
        l2: float = 0.0,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        self.activity_regularizer = L1L2(l1=l1, l2=l2)
        self.l1, self.l2 = self.activity_regularizer.l1, self.activity_regularizer.l2

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return config

    def call(self, x, *, training, rngs):
        return x
