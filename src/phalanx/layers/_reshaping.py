"""Keras's reshaping layers: ``Flatten``, ``Reshape``, ``ZeroPadding1D/2D/3D``,
``Cropping1D/2D/3D``, ``UpSampling1D/2D/3D``.

``ZeroPadding2D(padding)`` takes Keras's three forms: an int (all sides), a
pair ``(rows, cols)`` (symmetric), or ``((top, bottom), (left, right))``.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from ..errors import LayerArgumentError
from ._convolutional import _IMAGE, _NDHWC_HINT, _VOLUME, _data_format, check_data_format
from ._layer import Layer, Shape, format_shape, normalize_shape


def _pads(padding: Any, axes: int) -> tuple[tuple[int, int], ...]:
    """Keras's padding argument as ``((before, after),) * axes``."""
    error = ValueError(
        f"padding must be an int, a tuple of {axes} ints, or a tuple of {axes} pairs "
        f"(before, after); got {padding!r}."
    )
    if isinstance(padding, int):
        if padding < 0:
            raise error
        return ((padding, padding),) * axes
    try:
        items = tuple(padding)
    except TypeError:
        raise error from None
    if axes == 1 and len(items) == 2 and all(isinstance(v, int) for v in items):
        return ((int(items[0]), int(items[1])),)
    if len(items) != axes:
        raise error
    out = []
    for item in items:
        if isinstance(item, int):
            out.append((item, item))
        elif len(tuple(item)) == 2:
            out.append(tuple(int(v) for v in item))
        else:
            raise error
    if any(v < 0 for pair in out for v in pair):
        raise error
    return tuple(out)


class _ZeroPadding(Layer):
    _axes = 2
    _layout = _IMAGE

    def __init__(
        self,
        padding: Any = 1,
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(name=name, input_shape=input_shape)
        _data_format(data_format)
        self.padding = _pads(padding, self._axes)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = tuple(
            None if d is None else d + a + b
            for d, (a, b) in zip(input_shape[: self._axes], self.padding, strict=True)
        )
        return (*spatial, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self._axes + 1, self._layout)

    def call(self, x, *, training, rngs):
        return jnp.pad(x, ((0, 0), *self.padding, (0, 0)))


class ZeroPadding2D(_ZeroPadding):
    """Pads NHWC images with zero rows and columns.

    Args:
      padding: an int, ``(rows, cols)``, or ``((top, bottom), (left, right))``;
        default 1.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> ZeroPadding2D(((1, 2), (3, 4))).compute_output_shape((5, 5, 3))
      (8, 12, 3)
    """

    def __init__(
        self,
        padding: Any = (1, 1),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        super().__init__(padding, data_format, name=name, input_shape=input_shape)


class ZeroPadding1D(_ZeroPadding):
    """Pads ``(batch, steps, channels)`` sequences with zero steps.

    Args:
      padding: an int, or ``(before, after)``; default 1.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Examples:
      >>> ZeroPadding1D((2, 1)).compute_output_shape((5, 3))
      (8, 3)
    """

    _axes = 1
    _layout = "(batch, steps, channels)"

    def __init__(self, padding: Any = 1, *, name: str | None = None, input_shape: Any = None):
        super().__init__(padding, None, name=name, input_shape=input_shape)


class ZeroPadding3D(_ZeroPadding):
    """Pads NDHWC volumes with zeros on the three spatial axes.

    Args:
      padding: an int, ``(depth, rows, cols)``, or three ``(before, after)`` pairs;
        default ``((1, 1), (1, 1), (1, 1))``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(depth, height, width, channels)``.

    Examples:
      >>> ZeroPadding3D(((1, 2), 0, (3, 4))).compute_output_shape((5, 5, 5, 3))
      (8, 5, 12, 3)
    """

    _axes = 3
    _layout = _VOLUME

    def __init__(
        self,
        padding: Any = ((1, 1), (1, 1), (1, 1)),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        check_data_format(data_format, _NDHWC_HINT)
        try:
            super().__init__(padding, None, name=name, input_shape=input_shape)
        except ValueError as error:
            raise LayerArgumentError(f"ZeroPadding3D {error}") from None


class Flatten(Layer):
    """Flattens each example to one axis: ``(batch, 7, 7, 64)`` -> ``(batch, 3136)``.

    Examples:
      >>> Flatten().compute_output_shape((28, 28))
      (784,)
    """

    def __init__(self, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        if any(d is None for d in input_shape):
            return (None,)
        return (math.prod(input_shape),)

    def call(self, x, *, training, rngs):
        return x.reshape(x.shape[0], -1)


class Reshape(Layer):
    """Reshapes each example to ``target_shape`` (one entry may be -1).

    Args:
      target_shape: the per-example output shape, e.g. ``(28, 28, 1)``.
      name: the layer's name.
      input_shape: the per-example input shape, on a network's first layer.

    Examples:
      >>> Reshape((28, 28, 1)).compute_output_shape((784,))
      (28, 28, 1)
    """

    def __init__(self, target_shape: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        target = normalize_shape(target_shape, "target_shape")
        if sum(d == -1 for d in target) > 1 or any(d is None or d < -1 for d in target):
            raise LayerArgumentError(
                f"Reshape target_shape holds sizes >= 0 and at most one -1 (inferred), got "
                f"{target}; e.g. Reshape((28, 28, 1)) or Reshape((-1, 1))."
            )
        self.target_shape = target

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        if any(d is None for d in input_shape):
            return tuple(None if d == -1 else d for d in self.target_shape)
        size = math.prod(input_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if known == 0 or size % known:
                raise self._error(self._mismatch(input_shape))
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if known != size:
            raise self._error(self._mismatch(input_shape))
        return self.target_shape

    def _mismatch(self, input_shape: Shape) -> str:
        return (
            f"cannot reshape inputs of shape {format_shape(input_shape)} "
            f"({math.prod(input_shape)} values per example) into target_shape "
            f"{self.target_shape}."
        )

    def _check_input_shape(self, input_shape: Shape) -> None:
        self.compute_output_shape(input_shape)

    def call(self, x, *, training, rngs):
        return x.reshape((x.shape[0], *self.target_shape))


class _Cropping(Layer):
    _axes = 2
    _layout = _IMAGE

    def __init__(self, cropping: Any, *, name: str | None = None, input_shape: Any = None):
        super().__init__(name=name, input_shape=input_shape)
        try:
            self.cropping = _pads(cropping, self._axes)
        except ValueError as error:
            raise LayerArgumentError(f"{type(self).__name__} cropping: {error}") from None

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = tuple(
            None if d is None else d - a - b
            for d, (a, b) in zip(input_shape[: self._axes], self.cropping, strict=True)
        )
        if any(d is not None and d <= 0 for d in spatial):
            raise self._error(
                f"crops {self.cropping} from inputs of shape {format_shape(input_shape)}: "
                "nothing would be left. Crop less."
            )
        return (*spatial, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, self._axes + 1, self._layout)
        self.compute_output_shape(input_shape)

    def call(self, x, *, training, rngs):
        index = [slice(None)]
        for size, (a, b) in zip(x.shape[1 : 1 + self._axes], self.cropping, strict=True):
            index.append(slice(a, size - b))
        return x[tuple(index)]


class Cropping1D(_Cropping):
    """Crops steps from both ends of ``(batch, steps, channels)`` sequences.

    Args:
      cropping: an int, or ``(before, after)``; default ``(1, 1)``.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Examples:
      >>> Cropping1D((2, 1)).compute_output_shape((5, 3))
      (2, 3)
    """

    _axes = 1
    _layout = "(batch, steps, channels)"

    def __init__(self, cropping: Any = (1, 1), *, name: str | None = None, input_shape: Any = None):
        super().__init__(cropping, name=name, input_shape=input_shape)


class Cropping2D(_Cropping):
    """Crops rows and columns from NHWC images.

    Args:
      cropping: an int, ``(rows, cols)``, or ``((top, bottom), (left, right))``;
        default ``((0, 0), (0, 0))``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> Cropping2D(((1, 2), (0, 1))).compute_output_shape((5, 5, 3))
      (2, 4, 3)
    """

    def __init__(
        self,
        cropping: Any = ((0, 0), (0, 0)),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        _data_format(data_format)
        super().__init__(cropping, name=name, input_shape=input_shape)


class Cropping3D(_Cropping):
    """Crops the three spatial axes of NDHWC volumes.

    Args:
      cropping: an int, ``(depth, rows, cols)``, or three ``(before, after)`` pairs;
        default ``((1, 1), (1, 1), (1, 1))``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(depth, height, width, channels)``.

    Examples:
      >>> Cropping3D(((1, 2), 0, 1)).compute_output_shape((5, 5, 5, 3))
      (2, 5, 3, 3)
    """

    _axes = 3
    _layout = _VOLUME

    def __init__(
        self,
        cropping: Any = ((1, 1), (1, 1), (1, 1)),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        check_data_format(data_format, _NDHWC_HINT)
        super().__init__(cropping, name=name, input_shape=input_shape)


_INTERPOLATIONS = ("nearest", "bilinear")


class UpSampling1D(Layer):
    """Repeats each step ``size`` times: ``(batch, steps, c)`` -> ``(batch, steps * size, c)``.

    Args:
      size: the repeat factor; default 2.
      name: the layer's name.
      input_shape: the per-example input shape ``(steps, channels)``.

    Examples:
      >>> UpSampling1D(3).compute_output_shape((4, 2))
      (12, 2)
    """

    def __init__(self, size: int = 2, *, name: str | None = None, input_shape: Any = None):
        from ._args import positive_int

        super().__init__(name=name, input_shape=input_shape)
        self.size = positive_int("UpSampling1D", "size", size, "UpSampling1D(2)")

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        steps = None if input_shape[0] is None else input_shape[0] * self.size
        return (steps, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 2, "(batch, steps, channels)")

    def call(self, x, *, training, rngs):
        return jnp.repeat(x, self.size, axis=1)


class UpSampling2D(Layer):
    """Scales NHWC images up by ``size``: nearest (repeated rows and columns) or bilinear.

    Args:
      size: an int or ``(rows, cols)``; default ``(2, 2)``.
      data_format: ``"channels_last"`` or None.
      interpolation: ``"nearest"`` (default) or ``"bilinear"`` (``jax.image.resize``,
        as Keras 3 on JAX).
      name: the layer's name.
      input_shape: the per-example input shape ``(height, width, channels)``.

    Examples:
      >>> UpSampling2D((2, 3)).compute_output_shape((4, 4, 1))
      (8, 12, 1)
    """

    def __init__(
        self,
        size: Any = (2, 2),
        data_format: str | None = None,
        interpolation: str = "nearest",
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        from ._convolutional import spatial_tuple

        super().__init__(name=name, input_shape=input_shape)
        _data_format(data_format)
        self.size = spatial_tuple("UpSampling2D", size, "size", 2)
        if interpolation not in _INTERPOLATIONS:
            raise LayerArgumentError(
                f"UpSampling2D interpolation must be one of {_INTERPOLATIONS} in phalanx, got "
                f"{interpolation!r}."
            )
        self.interpolation = interpolation

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        h, w = (
            None if d is None else d * s for d, s in zip(input_shape[:2], self.size, strict=True)
        )
        return (h, w, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 3, _IMAGE)

    def call(self, x, *, training, rngs):
        if self.interpolation == "nearest":
            return jnp.repeat(jnp.repeat(x, self.size[0], axis=1), self.size[1], axis=2)
        import jax

        n, h, w, c = x.shape
        shape = (n, h * self.size[0], w * self.size[1], c)
        return jax.image.resize(self._cast(x), shape, method="bilinear", antialias=False)


class UpSampling3D(Layer):
    """Scales NDHWC volumes up by repeating each voxel ``size`` times on each spatial axis.

    Args:
      size: an int or ``(depth, rows, cols)``; default ``(2, 2, 2)``.
      data_format: ``"channels_last"`` or None.
      name: the layer's name.
      input_shape: the per-example input shape ``(depth, height, width, channels)``.

    Examples:
      >>> UpSampling3D((1, 2, 3)).compute_output_shape((4, 4, 4, 1))
      (4, 8, 12, 1)
    """

    def __init__(
        self,
        size: Any = (2, 2, 2),
        data_format: str | None = None,
        *,
        name: str | None = None,
        input_shape: Any = None,
    ):
        from ._convolutional import spatial_tuple

        super().__init__(name=name, input_shape=input_shape)
        check_data_format(data_format, _NDHWC_HINT)
        self.size = spatial_tuple("UpSampling3D", size, "size", 3)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        spatial = (
            None if d is None else d * s for d, s in zip(input_shape[:3], self.size, strict=True)
        )
        return (*spatial, input_shape[-1])

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._require_rank(input_shape, 4, _VOLUME)

    def call(self, x, *, training, rngs):
        for axis, size in enumerate(self.size, start=1):
            x = jnp.repeat(x, size, axis=axis)
        return x
