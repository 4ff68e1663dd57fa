"""Keras 3's preprocessing layers used inside models: ``Rescaling``, ``Resizing``,
``CenterCrop``, ``Normalization`` (with ``adapt``) and ``CategoryEncoding``.

Keras's arithmetic: ``Rescaling`` is ``x * scale + offset``; ``Resizing`` is
``jax.image.resize`` (as Keras 3 on JAX, no antialiasing by default);
``CenterCrop`` crops the centre (inputs smaller than the target are resized to
it after a centre crop to its aspect ratio, as Keras); ``Normalization`` is
``(x - mean) / max(sqrt(variance), 1e-7)`` with the statistics given or
computed by ``adapt`` over the non-kept axes; ``CategoryEncoding`` is one-hot,
multi-hot or count encoding of integer indices. Images are channels last.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import LayerArgumentError
from ._args import positive_int
from ._convolutional import _IMAGE, _data_format
from ._layer import Layer, Shape

_EPSILON = 1e-7  # Keras's backend.epsilon()
_METHODS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")


class Rescaling(Layer):
    """Keras's ``Rescaling``: ``x * scale + offset`` (e.g. ``1 / 255`` for pixels).

    Args:
      scale: a number (or an array broadcastable to the inputs).
      offset: a number (or array); default 0.

    Examples:
      >>> import jax.numpy as jnp
      >>> Rescaling(1 / 255)(jnp.array([[255.0, 0.0]])).tolist()
      [[1.0, 0.0]]
    """

    supports_masking = True

    def __init__(
        self,
        scale: Any,
        offset: Any = 0.0,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        self.scale = scale if isinstance(scale, int | float) else tuple(np.ravel(scale).tolist())
        self.offset = (
            offset if isinstance(offset, int | float) else tuple(np.ravel(offset).tolist())
        )

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        scale = jnp.asarray(self.scale, x.dtype)
        offset = jnp.asarray(self.offset, x.dtype)
        return x * scale + offset


def _size(layer: str, what: str, value: Any) -> int:
    return positive_int(layer, what, value, f"{layer}(224, 224)")


class Resizing(Layer):
    """Keras's ``Resizing``: resizes NHWC images to ``(height, width)``.

    Args:
      height: the output height.
      width: the output width.
      interpolation: ``"bilinear"`` (default), ``"nearest"``, ``"bicubic"``,
        ``"lanczos3"`` or ``"lanczos5"``.
      crop_to_aspect_ratio: not supported when True (raises).
      pad_to_aspect_ratio: not supported when True (raises).
      antialias: antialias when downsampling; default False (Keras).
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> Resizing(8, 6).compute_output_shape((4, 4, 3))
      (8, 6, 3)
    """

    def __init__(
        self,
        height: int,
        width: int,
        interpolation: str = "bilinear",
        crop_to_aspect_ratio: bool = False,
        pad_to_aspect_ratio: bool = False,
        fill_mode: str = "constant",
        fill_value: float = 0.0,
        antialias: bool = False,
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        _data_format(data_format)
        self.height = _size("Resizing", "height", height)
        self.width = _size("Resizing", "width", width)
        if interpolation not in _METHODS:
            raise LayerArgumentError(
                f"Resizing interpolation must be one of {_METHODS}, got {interpolation!r}."
            )
        for key, value in (
            ("crop_to_aspect_ratio", crop_to_aspect_ratio),
            ("pad_to_aspect_ratio", pad_to_aspect_ratio),
        ):
            if value:
                raise LayerArgumentError(f"Resizing: {key}=True is not supported by phalanx.")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = False
        self.pad_to_aspect_ratio = False
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = bool(antialias)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (self.height, self.width, input_shape[-1])

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        shape = (x.shape[0], self.height, self.width, x.shape[-1])
        return jax.image.resize(x, shape, method=self.interpolation, antialias=self.antialias)


class CenterCrop(Layer):
    """Keras's ``CenterCrop``: the central ``(height, width)`` of NHWC images.

    An input smaller than the target on an axis is first centre-cropped to the
    target's aspect ratio and then resized (bilinear) to it, as Keras.

    Args:
      height: the output height.
      width: the output width.
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> import jax.numpy as jnp
      >>> CenterCrop(2, 2)(jnp.arange(16.0).reshape(1, 4, 4, 1))[0, :, :, 0].tolist()
      [[5.0, 6.0], [9.0, 10.0]]
    """

    def __init__(
        self,
        height: int,
        width: int,
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        _data_format(data_format)
        self.height = _size("CenterCrop", "height", height)
        self.width = _size("CenterCrop", "width", width)

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (self.height, self.width, input_shape[-1])

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        h, w = x.shape[1], x.shape[2]
        if h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            return x[:, top : top + self.height, left : left + self.width]
        # Keras's smart_resize: crop to the target's aspect ratio, then resize
        crop_h = min(h, int(w * self.height / self.width))
        crop_w = min(w, int(h * self.width / self.height))
        crop_h, crop_w = max(crop_h, 1), max(crop_w, 1)
        top, left = (h - crop_h) // 2, (w - crop_w) // 2
        x = x[:, top : top + crop_h, left : left + crop_w]
        shape = (x.shape[0], self.height, self.width, x.shape[-1])
        return jax.image.resize(x, shape, method="bilinear", antialias=False)


class Normalization(Layer):
    """Keras's ``Normalization``: ``(x - mean) / max(sqrt(variance), 1e-7)`` per kept axis.

    The statistics are given (``mean=``, ``variance=``) or computed by
    ``adapt(data)`` over every axis but ``axis`` (the batch axis included).
    They are non-trainable weights (``mean``, ``variance``), saved with the model.

    Args:
      axis: the axis (or axes) with one statistic each; default -1 (features);
        None: one scalar statistic.
      mean: the mean (a number or an array broadcastable to the kept axes).
      variance: the variance (given with ``mean``).
      invert: apply the inverse transformation (``mean + x * std``).

    Examples:
      >>> import numpy as np
      >>> layer = Normalization()
      >>> layer.adapt(np.array([[0.0, 10.0], [2.0, 30.0]], np.float32))
      >>> layer(np.array([[1.0, 20.0]], np.float32)).tolist()
      [[0.0, 0.0]]
    """

    def __init__(
        self,
        axis: Any = -1,
        mean: Any = None,
        variance: Any = None,
        invert: bool = False,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        if axis is None:
            self.axis = ()
        elif isinstance(axis, int):
            self.axis = (axis,)
        else:
            self.axis = tuple(axis)
        if (mean is None) != (variance is None):
            raise LayerArgumentError(
                "Normalization: give both mean= and variance=, or neither (then call adapt). "
                f"Got mean={mean!r}, variance={variance!r}."
            )
        self.input_mean = None if mean is None else tuple(np.ravel(mean).tolist())
        self.input_variance = None if variance is None else tuple(np.ravel(variance).tolist())
        self.invert = bool(invert)

    def _kept(self, rank: int) -> tuple[int, ...]:
        """The kept axes, counted with the batch axis, for inputs of ``rank`` (batch included)."""
        kept = tuple(sorted(a if a >= 0 else rank + a for a in self.axis))
        if any(not 1 <= a < rank for a in kept):
            raise self._error(
                f"has axis={self.axis}, outside the feature axes of inputs of rank {rank}."
            )
        return kept

    def _check_input_shape(self, input_shape: Shape) -> None:
        kept = self._kept(len(input_shape) + 1)
        self._require_known(input_shape, [a - 1 for a in kept], "size on each kept axis")

    def build(self, input_shape):
        if self.input_mean is not None:
            return  # given statistics are constants, not weights (Keras)
        kept = self._kept(len(input_shape))
        shape = tuple(input_shape[d] for d in kept)
        self.mean = self.add_weight(shape=shape, initializer="zeros", trainable=False, name="mean")
        self.variance = self.add_weight(
            shape=shape, initializer="ones", trainable=False, name="variance"
        )

    def _statistics(self, shape: tuple, dtype: Any) -> tuple[jax.Array, jax.Array]:
        """The mean and variance, shaped to broadcast against inputs (``shape``: kept axes)."""
        if self.input_mean is None:
            mean, variance = jnp.asarray(self.mean), jnp.asarray(self.variance)
        else:
            mean = jnp.asarray(self.input_mean, dtype)
            variance = jnp.asarray(self.input_variance, dtype)
            if mean.size == 1:
                mean, variance = mean.reshape(()), variance.reshape(())
        if mean.ndim:
            mean, variance = mean.reshape(shape), variance.reshape(shape)
        return mean.astype(dtype), variance.astype(dtype)

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Computes ``mean`` and ``variance`` from ``data`` (an array, or a dataset of batches).

        Args:
          data: a numpy/JAX array ``(examples, ...)``, or an iterable of such
            batches (a ``phalanx.data.Dataset``).
          batch_size: accepted as Keras (the statistics are exact either way).
          steps: the number of batches of an iterable to read (default: all).
        """
        batches = [np.asarray(data)] if hasattr(data, "shape") else _take(data, steps)
        if not batches:
            raise ValueError("Normalization.adapt got no data: give an array or batches.")
        first = batches[0]
        if not self.built:
            self.build((None, *first.shape[1:]))
        kept = self._kept(first.ndim)
        reduce = tuple(d for d in range(first.ndim) if d not in kept)
        count, mean, m2 = 0, 0.0, 0.0
        for batch in batches:  # Chan et al.'s parallel mean and variance, in float64
            batch = np.asarray(batch, np.float64)
            n = int(np.prod([batch.shape[d] for d in reduce]))
            b_mean = batch.mean(axis=reduce)
            b_m2 = ((batch - batch.mean(axis=reduce, keepdims=True)) ** 2).sum(axis=reduce)
            delta = b_mean - mean
            total = count + n
            mean = mean + delta * n / total
            m2 = m2 + b_m2 + delta**2 * count * n / total
            count = total
        if self.input_mean is not None:
            raise ValueError(
                "Normalization.adapt: this layer was given mean= and variance=; make one "
                "without them to adapt."
            )
        shape = tuple(self.mean.shape)
        self.mean.set_value(jnp.asarray(np.reshape(mean, shape), jnp.float32))
        self.variance.set_value(jnp.asarray(np.reshape(m2 / count, shape), jnp.float32))

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("input_mean", "input_variance"):
            config.pop(key, None)
        config["axis"] = list(self.axis) if len(self.axis) != 1 else self.axis[0]
        if not self.axis:
            config["axis"] = None
        config["mean"] = None if self.input_mean is None else list(self.input_mean)
        config["variance"] = None if self.input_variance is None else list(self.input_variance)
        return config

    def call(self, x, *, training, rngs):
        x = self._cast(x)
        rank = x.ndim
        kept = self._kept(rank)
        shape = tuple(x.shape[d] if d in kept else 1 for d in range(rank))
        mean, variance = self._statistics(shape, x.dtype)
        std = jnp.maximum(jnp.sqrt(variance), _EPSILON)
        return mean + x * std if self.invert else (x - mean) / std


def _take(data: Any, steps: int | None) -> list[np.ndarray]:
    out = []
    for i, batch in enumerate(data):
        if steps is not None and i >= steps:
            break
        if isinstance(batch, tuple):  # (x, y) batches: adapt reads x
            batch = batch[0]
        out.append(np.asarray(batch))
    return out


_MODES = ("one_hot", "multi_hot", "count")


class CategoryEncoding(Layer):
    """Keras's ``CategoryEncoding``: integer indices in ``[0, num_tokens)`` as one-hot,
    multi-hot or count vectors.

    Args:
      num_tokens: the number of categories.
      output_mode: ``"multi_hot"`` (default), ``"one_hot"`` or ``"count"``.
      sparse: not supported when True (raises).

    Call options: ``count_weights=`` (``"count"`` only): a weight per index.

    Examples:
      >>> import numpy as np
      >>> CategoryEncoding(4)(np.array([[0, 1], [3, 3]])).tolist()
      [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    """

    def __init__(
        self,
        num_tokens: int | None = None,
        output_mode: str = "multi_hot",
        sparse: bool = False,
        *,
        name: str | None = None,
        input_shape: Any = None,
        dtype: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape, dtype=dtype)
        self.num_tokens = positive_int(
            "CategoryEncoding", "num_tokens", num_tokens, "CategoryEncoding(num_tokens=10)"
        )
        if output_mode not in _MODES:
            raise LayerArgumentError(
                f"CategoryEncoding output_mode must be one of {_MODES}, got {output_mode!r}."
            )
        if sparse:
            raise LayerArgumentError("CategoryEncoding: sparse=True is not supported by phalanx.")
        self.output_mode = output_mode
        self.sparse = False

    def check_input(self, x) -> None:
        """Any batch of rank 1 or 2 (Keras has no input spec)."""
        self._check_input_shape(tuple(x.shape[1:]))

    def _check_input_shape(self, input_shape: Shape) -> None:
        if len(input_shape) > 1:
            raise self._error(
                f"takes inputs of rank 1 or 2 (batch, indices), received rank "
                f"{len(input_shape) + 1}."
            )

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        if self.output_mode == "one_hot" and input_shape and input_shape[-1] != 1:
            return (*input_shape, self.num_tokens)
        return (self.num_tokens,)

    def call(self, x, *, training, rngs, count_weights=None):
        dtype = self.dtype or jnp.float32
        x = jnp.asarray(x).astype(jnp.int32)
        if x.ndim == 1:
            x = x[:, None]
        if self.output_mode == "one_hot":
            x = x[:, 0] if x.shape[-1] == 1 else x
            return jax.nn.one_hot(x, self.num_tokens, dtype=dtype)
        hot = jax.nn.one_hot(x, self.num_tokens, dtype=dtype)
        if self.output_mode == "multi_hot":
            return jnp.max(hot, axis=1)
        if count_weights is not None:
            hot = hot * jnp.asarray(count_weights, dtype)[..., None]
        return jnp.sum(hot, axis=1)
