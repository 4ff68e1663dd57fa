"""Keras 3's random image augmentation layers: ``RandomFlip``, ``RandomRotation``,
``RandomZoom``, ``RandomTranslation``, ``RandomCrop``, ``RandomContrast``, ``RandomBrightness``.

Each is Keras's two steps: ``get_random_transformation(images, training, seed)`` draws
the transformation (a dict with Keras's keys: ``"flips"``, ``"rotation_matrix"``, ...),
``transform_images(images, transformation)`` applies it with Keras 3's arithmetic on
JAX (`_image_transforms`), so a transformation Keras drew gives Keras's pixels.
The draws are JAX's, not Keras's: the numbers differ, their distribution is the same.

Training and keys, as Keras: called with ``training=False`` (``predict``, ``evaluate``,
a model called for inference) a layer is the identity (``RandomCrop``: a centre
crop); called on its own without ``training=`` (``dataset.map(layer)``, ``layer(x)``)
it is random, Keras's default ``training=True``. Inside ``fit`` each step and replica
draws from the key the step gives (as ``Dropout``; ``seed`` is folded into it); a call
outside ``fit`` without ``rngs=`` draws from the layer's own generator, seeded by
``seed`` and advanced at each call (Keras's ``SeedGenerator``). Inputs are NHWC
batches or single HWC images; dict inputs (bounding boxes) are refused.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import LayerArgumentError
from . import _image_transforms as _geometry
from ._args import positive_int
from ._convolutional import check_data_format
from ._keras_protocol import _CALLS
from ._layer import Layer, Shape
from ._regularization import _key

_HINT = "the random image layers take 'channels_last' (NHWC) images."


class _SeedGenerator:
    """Keras's ``SeedGenerator`` for calls outside ``fit``: ``key(seed)`` folded with a count."""

    def __init__(self, seed: int | None):
        self._seed = random.SystemRandom().randrange(2**31) if seed is None else int(seed)
        self._count = itertools.count()

    def next_key(self) -> jax.Array:
        return jax.random.fold_in(jax.random.key(self._seed), next(self._count))


def _check_seed(layer: str, seed: Any) -> int | None:
    if seed is None or (isinstance(seed, int | np.integer) and not isinstance(seed, bool)):
        return None if seed is None else int(seed)
    raise LayerArgumentError(f"{layer} seed must be an int or None, got {seed!r}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


class RandomImageLayer(Layer):
    """The shared mechanism of the random image layers (see the module's docstring)."""

    uses_rng = True
    _casts = True  # the output is in the compute dtype, in inference too (Keras)

    def __init__(
        self,
        seed: int | None,
        data_format: str | None,
        *,
        name: str | None,
        dtype: Any,
        bounding_box_format: Any = None,
    ):
        super().__init__(name=name, dtype=dtype)
        check_data_format(data_format, _HINT)
        if bounding_box_format is not None:
            raise LayerArgumentError(
                f"{type(self).__name__}: bounding_box_format={bounding_box_format!r} is not "
                "supported by phalanx (bounding boxes and dict inputs are not transformed)."
            )
        self.seed = _check_seed(type(self).__name__, seed)
        self.data_format = "channels_last"
        self._generator = _SeedGenerator(self.seed)

    # -- calls -----------------------------------------------------------------------
    def __call__(self, x: Any, *args: Any, training: bool | None = None, rngs: Any = None, **kw):
        from . import _symbolic

        if isinstance(x, dict):
            raise LayerArgumentError(
                f"{type(self).__name__} takes an image array; dict inputs (images with "
                "labels, bounding boxes, segmentation masks) are not supported by phalanx."
            )
        if training is None and not _CALLS.stack:
            training = True  # Keras: call(self, data, training=True)
        if _symbolic.any_symbolic(x):
            return super().__call__(x, *args, training=training, rngs=rngs, **kw)
        x = x if isinstance(x, jax.core.Tracer) else jnp.asarray(x)
        if x.ndim == 3:  # one image (Keras's unbatched input)
            return super().__call__(x[None], *args, training=training, rngs=rngs, **kw)[0]
        self._check_rank(x.ndim)
        return super().__call__(x, *args, training=training, rngs=rngs, **kw)

    def _check_rank(self, rank: int) -> None:
        if rank != 4:
            raise self._error(
                "expected the input image to be rank 3 or 4 (one HWC image or an NHWC "
                f"batch), received rank {rank}."
            )

    def _check_input_shape(self, input_shape: Shape) -> None:
        self._check_rank(len(input_shape) + 1)

    def check_input(self, x: Any) -> None:
        """Any NHWC batch (Keras's random layers take any image size)."""
        self._check_rank(x.ndim)

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return input_shape

    def call(self, x, *, training, rngs):
        if not training:
            return self._inference(x)
        transformation = self.get_random_transformation(x, training=True, seed=self._draw(rngs, x))
        return self.transform_images(x, transformation, training=True)

    def _inference(self, x: jax.Array) -> jax.Array:
        return self._autocast(x, ints=self._casts)

    def _autocast(self, x: jax.Array, *, ints: bool) -> jax.Array:
        """Floats (and ints when ``ints``) in the compute dtype, as Keras's layers cast them."""
        if ints or jnp.issubdtype(x.dtype, jnp.floating):
            return x.astype(self.compute_dtype)
        return x

    def _draw(self, rngs: Any, x: Any) -> jax.Array:
        """The key of this call: the step's (``rngs``, with ``seed`` folded in), else the
        layer's own generator (eager calls only)."""
        if rngs is not None:
            return _key(self, rngs, self.seed)
        if isinstance(x, jax.core.Tracer):
            raise ValueError(
                f"Layer '{self.name}' ({type(self).__name__}) was called in training inside a "
                "jitted function without a key: give rngs=jax.random.key(seed) (fit gives one "
                "per step), or call it outside jit (dataset.map(layer))."
            )
        return self._generator.next_key()

    def _key_of(self, seed: Any) -> jax.Array:
        return self._generator.next_key() if seed is None else seed

    # -- Keras's two steps -------------------------------------------------------------
    def get_random_transformation(self, data: Any, training: bool = True, seed: Any = None):
        """Draws a transformation for ``data`` (NHWC or HWC) from the key ``seed``
        (default: the layer's generator); None when not ``training``."""
        raise NotImplementedError

    def transform_images(self, images: Any, transformation: Any, training: bool = True):
        """Applies ``transformation`` (from ``get_random_transformation``, or Keras's)."""
        raise NotImplementedError

    def get_config(self) -> dict:
        config = {"name": self.name, "trainable": self.trainable}
        config["dtype"] = None if self.dtype is None else str(self.dtype)
        config["data_format"] = self.data_format
        config["seed"] = self.seed
        return config


def _batch_of(images: Any) -> tuple[jax.Array, bool]:
    images = jnp.asarray(images)
    return (images[None], True) if images.ndim == 3 else (images, False)


# -- geometry -------------------------------------------------------------------------
_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


class RandomFlip(RandomImageLayer):
    """Keras's ``RandomFlip``: flips each image with probability 1/2 in training.

    Args:
      mode: ``"horizontal"`` (left-right), ``"vertical"`` (top-bottom) or
        ``"horizontal_and_vertical"`` (default; one draw flips both axes).
      seed: an int: the layer's own generator's seed, folded into ``fit``'s key.
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> import numpy as np
      >>> x = np.arange(4.0).reshape(1, 1, 4, 1)
      >>> RandomFlip("horizontal")(x, training=False)[0, 0, :, 0].tolist()
      [0.0, 1.0, 2.0, 3.0]
      >>> flip = RandomFlip("horizontal")
      >>> flip.transform_images(x, {"flips": np.ones((1, 1, 1, 1), bool)})[0, 0, :, 0].tolist()
      [3.0, 2.0, 1.0, 0.0]
    """

    def __init__(
        self,
        mode: str = "horizontal_and_vertical",
        seed: int | None = None,
        data_format: str | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            seed, data_format, name=name, dtype=dtype, bounding_box_format=bounding_box_format
        )
        if mode not in _MODES:
            raise LayerArgumentError(
                f"RandomFlip mode must be one of {_MODES}, got {mode!r}; e.g. "
                "RandomFlip('horizontal')."
            )
        self.mode = mode

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        shape = jnp.shape(data)
        flips_shape = (1, 1, 1) if len(shape) == 3 else (shape[0], 1, 1, 1)
        flips = jax.random.uniform(self._key_of(seed), flips_shape) <= 0.5
        return {"flips": flips, "input_shape": shape}

    def transform_images(self, images, transformation, training=True):
        images = self._autocast(jnp.asarray(images), ints=True)
        if not training or transformation is None:
            return images
        batch, single = _batch_of(images)
        flips = jnp.asarray(transformation["flips"])
        if self.mode in ("horizontal", "horizontal_and_vertical"):
            batch = jnp.where(flips, jnp.flip(batch, axis=-2), batch)
        if self.mode in ("vertical", "horizontal_and_vertical"):
            batch = jnp.where(flips, jnp.flip(batch, axis=-3), batch)
        return batch[0] if single else batch

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}


def _fill_and_interpolation(layer: str, fill_mode: Any, interpolation: Any) -> None:
    if fill_mode not in _geometry.FILL_MODES:
        raise LayerArgumentError(
            f"{layer}: unknown fill_mode {fill_mode!r}; expected one of {_geometry.FILL_MODES}."
        )
    if interpolation not in _geometry.INTERPOLATIONS:
        raise LayerArgumentError(
            f"{layer}: unknown interpolation {interpolation!r}; expected one of "
            f"{tuple(_geometry.INTERPOLATIONS)}."
        )


def _factor(layer: str, what: str, factor: Any, bounds: tuple, message: str) -> tuple:
    """RandomZoom's and RandomTranslation's ``_set_factor``: a number ``f`` is
    ``(-|f|, |f|)``, a pair is sorted; each number inside ``bounds`` (``(low, high,
    open_low)``: ``(low, high]`` when ``open_low``, else ``[low, high]``)."""
    low, high, open_low = bounds
    error = LayerArgumentError(f"{layer}: {message} Received: {what}={factor!r}")

    def check(value):
        if not _is_number(value) or value > high or value < low or (open_low and value == low):
            raise error

    if isinstance(factor, tuple | list):
        if len(factor) != 2:
            raise error
        check(factor[0])
        check(factor[1])
        return tuple(sorted(float(f) for f in factor))
    check(factor)
    return (-abs(float(factor)), abs(float(factor)))


def _base_factor(layer: str, factor: Any, low: float, high: float) -> tuple:
    """Keras's ``BaseImagePreprocessingLayer._set_factor`` (rotation, contrast, brightness):
    a number in ``[low, high]`` gives ``(max(-|f|, low), |f|)``; a pair is sorted, refused
    only when its first is above ``high`` or its second below ``low``."""
    error = LayerArgumentError(
        f"{layer}: The `factor` argument should be a number (or a list of two numbers) in "
        f"the range [{low}, {high}]. Received: factor={factor!r}"
    )
    if isinstance(factor, tuple | list):
        if len(factor) != 2 or not all(_is_number(f) for f in factor):
            raise error
        if factor[0] > high or factor[1] < low:
            raise error
        return tuple(sorted(factor))
    if not _is_number(factor) or not low <= factor <= high:
        raise error
    return (max(-abs(factor), low), abs(factor))


class _AffineLayer(RandomImageLayer):
    """A random layer applying an affine transform (rotation, zoom, translation)."""

    def __init__(self, fill_mode, interpolation, seed, fill_value, data_format, **kw):
        super().__init__(seed, data_format, **kw)
        _fill_and_interpolation(type(self).__name__, fill_mode, interpolation)
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        if not _is_number(fill_value):
            raise LayerArgumentError(
                f"{type(self).__name__} fill_value must be a number, got {fill_value!r}."
            )
        self.fill_value = float(fill_value)

    def _affine(self, images, transform):
        images = self._autocast(jnp.asarray(images), ints=True)
        batch, single = _batch_of(images)
        out = _geometry.affine_transform(
            batch, transform, self.interpolation, self.fill_mode, self.fill_value
        )
        return out[0] if single else out

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            fill_mode=self.fill_mode, fill_value=self.fill_value, interpolation=self.interpolation
        )
        return config


def _image_size(data: Any) -> tuple[int, int, int]:
    shape = jnp.shape(data)
    if len(shape) == 4:
        return shape[0], shape[1], shape[2]
    return 1, shape[0], shape[1]


class RandomRotation(_AffineLayer):
    """Keras's ``RandomRotation``: rotates each image by a random angle in training.

    Args:
      factor: a fraction of a full turn: ``0.2`` draws angles in ``[-72°, 72°]``;
        ``(low, high)`` in ``[low * 360°, high * 360°]`` (positive: counter-clockwise).
      fill_mode: ``"reflect"`` (default), ``"wrap"``, ``"constant"`` or ``"nearest"``.
      interpolation: ``"bilinear"`` (default) or ``"nearest"``.
      seed: an int (see ``RandomFlip``).
      fill_value: the value outside the image with ``fill_mode="constant"``.
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> import numpy as np
      >>> x = np.arange(9.0).reshape(1, 3, 3, 1)
      >>> half_turn = RandomRotation((0.5, 0.5))(x)  # every draw: half a turn
      >>> np.round(half_turn[0, :, :, 0], 4).tolist()
      [[8.0, 7.0, 6.0], [5.0, 4.0, 3.0], [2.0, 1.0, 0.0]]
    """

    def __init__(
        self,
        factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            fill_mode,
            interpolation,
            seed,
            fill_value,
            data_format,
            name=name,
            dtype=dtype,
            bounding_box_format=bounding_box_format,
        )
        self.factor = _base_factor("RandomRotation", factor, -1, 1)

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        batch, height, width = _image_size(data)
        angle = jax.random.uniform(
            self._key_of(seed),
            (batch,),
            minval=self.factor[0] * 360.0,
            maxval=self.factor[1] * 360.0,
        )
        matrix = _geometry.affine_matrix(angle, height, width)
        if len(jnp.shape(data)) == 3:
            matrix = matrix[0]
        return {
            "angle": angle,
            "rotation_matrix": matrix,
            "image_height": height,
            "image_width": width,
            "batch_size": batch,
        }

    def transform_images(self, images, transformation, training=True):
        if not training or transformation is None:
            return self._autocast(jnp.asarray(images), ints=True)
        return self._affine(images, transformation["rotation_matrix"])

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


_SIZE_FACTOR = (
    "The `height_factor` and `width_factor` arguments should be a number (or a list of two "
    "numbers) in the range {}."
)


class RandomZoom(_AffineLayer):
    """Keras's ``RandomZoom``: zooms each image in or out by a random factor in training.

    Args:
      height_factor: a fraction in ``(-1, 1]``: ``0.2`` zooms by a factor drawn in
        ``[0.8, 1.2]`` of the height (positive: out, negative: in); or ``(low, high)``.
      width_factor: the same for the width; None (default) keeps the aspect ratio
        (the height's draw).
      fill_mode: ``"reflect"`` (default), ``"wrap"``, ``"constant"`` or ``"nearest"``.
      interpolation: ``"bilinear"`` (default) or ``"nearest"``.
      seed: an int (see ``RandomFlip``).
      fill_value: the value outside the image with ``fill_mode="constant"``.
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> RandomZoom(0.2).compute_output_shape((8, 8, 3))
      (8, 8, 3)
    """

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any = None,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            fill_mode,
            interpolation,
            seed,
            fill_value,
            data_format,
            name=name,
            dtype=dtype,
            bounding_box_format=bounding_box_format,
        )
        message = _SIZE_FACTOR.format("(-1.0, 1.0]")
        bounds = (-1, 1, True)
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _factor(
            "RandomZoom", "height_factor", height_factor, bounds, message
        )
        self.width_factor = width_factor
        if width_factor is not None:
            self.width_lower, self.width_upper = _factor(
                "RandomZoom", "width_factor", width_factor, bounds, message
            )

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        shape = jnp.shape(data)
        zoom_shape = (shape[0], 1) if len(shape) == 4 else (1, 1)
        height_key, width_key = jax.random.split(self._key_of(seed))
        height_zoom = jax.random.uniform(
            height_key, zoom_shape, minval=1.0 + self.height_lower, maxval=1.0 + self.height_upper
        )
        width_zoom = height_zoom
        if self.width_factor is not None:
            width_zoom = jax.random.uniform(
                width_key, zoom_shape, minval=1.0 + self.width_lower, maxval=1.0 + self.width_upper
            )
        return {"height_zoom": height_zoom, "width_zoom": width_zoom, "input_shape": shape}

    def transform_images(self, images, transformation, training=True):
        if not training or transformation is None:
            return self._autocast(jnp.asarray(images), ints=True)
        _, height, width = _image_size(images)
        zooms = jnp.concatenate(
            [jnp.asarray(transformation["width_zoom"]), jnp.asarray(transformation["height_zoom"])],
            axis=1,
        ).astype(jnp.float32)
        return self._affine(images, _geometry.zoom_matrix(zooms, height, width))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config


class RandomTranslation(_AffineLayer):
    """Keras's ``RandomTranslation``: shifts each image by a random offset in training.

    Args:
      height_factor: a fraction of the height in ``[-1, 1]``: ``0.2`` shifts by up to
        20% up or down; ``(low, high)``: negative is up, positive down.
      width_factor: the same for the width (negative: left).
      fill_mode: ``"reflect"`` (default), ``"wrap"``, ``"constant"`` or ``"nearest"``.
      interpolation: ``"bilinear"`` (default) or ``"nearest"``.
      seed: an int (see ``RandomFlip``).
      fill_value: the value outside the image with ``fill_mode="constant"``.
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> import numpy as np
      >>> x = np.arange(4.0).reshape(1, 1, 4, 1)
      >>> out = RandomTranslation(0, (0.5, 0.5), fill_mode="constant")(x)  # right by 2
      >>> out[0, 0, :, 0].tolist()
      [0.0, 0.0, 0.0, 1.0]
    """

    def __init__(
        self,
        height_factor: Any,
        width_factor: Any,
        fill_mode: str = "reflect",
        interpolation: str = "bilinear",
        seed: int | None = None,
        fill_value: float = 0.0,
        data_format: str | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            fill_mode,
            interpolation,
            seed,
            fill_value,
            data_format,
            name=name,
            dtype=dtype,
            bounding_box_format=bounding_box_format,
        )
        message = "The `factor` argument should be a number (or a list of two numbers) in "
        message += "the range [-1.0, 1.0]."
        bounds = (-1, 1, False)
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _factor(
            "RandomTranslation", "height_factor", height_factor, bounds, message
        )
        self.width_factor = width_factor
        self.width_lower, self.width_upper = _factor(
            "RandomTranslation", "width_factor", width_factor, bounds, message
        )

    def get_random_transformation(self, data, training=True, seed=None):
        if not training:
            return None
        batch, height, width = _image_size(data)
        height_key, width_key = jax.random.split(self._key_of(seed))
        dy = jax.random.uniform(
            height_key, (batch, 1), minval=self.height_lower, maxval=self.height_upper
        )
        dx = jax.random.uniform(
            width_key, (batch, 1), minval=self.width_lower, maxval=self.width_upper
        )
        translations = jnp.concatenate([dx * width, dy * height], axis=1).astype(jnp.float32)
        return {"translations": translations, "input_shape": jnp.shape(data)}

    def transform_images(self, images, transformation, training=True):
        if not training or transformation is None:
            return self._autocast(jnp.asarray(images), ints=True)
        translations = jnp.asarray(transformation["translations"])
        return self._affine(images, _geometry.translation_matrix(translations))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config


class RandomCrop(RandomImageLayer):
    """Keras's ``RandomCrop``: a random ``(height, width)`` window, the same for the batch.

    In training, an input larger than the target on both axes is cropped at a
    random offset; otherwise (and in inference) it is centre-cropped to the
    target's aspect ratio and resized to it (bilinear), as Keras's
    ``get_random_transformation``.

    Args:
      height: the output height.
      width: the output width.
      seed: an int (see ``RandomFlip``).
      data_format: ``"channels_last"`` or None.

    Examples:
      >>> import numpy as np
      >>> RandomCrop(2, 2)(np.zeros((3, 5, 5, 1))).shape
      (3, 2, 2, 1)
    """

    _casts = False

    def __init__(
        self,
        height: int,
        width: int,
        seed: int | None = None,
        data_format: str | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            seed, data_format, name=name, dtype=dtype, bounding_box_format=bounding_box_format
        )
        self.height = positive_int("RandomCrop", "height", height, "RandomCrop(224, 224)")
        self.width = positive_int("RandomCrop", "width", width, "RandomCrop(224, 224)")

    def compute_output_shape(self, input_shape: Shape) -> Shape:
        return (self.height, self.width, input_shape[-1])

    def _inference(self, x):
        transformation = self.get_random_transformation(x, training=False)
        return self.transform_images(x, transformation, training=False)

    def get_random_transformation(self, data, training=True, seed=None):
        _, in_h, in_w = _image_size(data)
        if training and in_h > self.height and in_w > self.width:
            h_key, w_key = jax.random.split(self._key_of(seed))
            top = jax.random.uniform(h_key, (), maxval=float(in_h - self.height + 1))
            left = jax.random.uniform(w_key, (), maxval=float(in_w - self.width + 1))
            return top.astype(jnp.int32), left.astype(jnp.int32)
        crop_h = max(min(in_h, int(float(in_w * self.height) / self.width)), 1)
        crop_w = max(min(in_w, int(float(in_h * self.width) / self.height)), 1)
        return int(float(in_h - crop_h) / 2), int(float(in_w - crop_w) / 2)

    def transform_images(self, images, transformation, training=True):
        batch, single = _batch_of(images)
        if training:
            batch = self._autocast(batch, ints=True)
        top, left = transformation
        if isinstance(top, int) and isinstance(left, int):  # Keras's slice: clipped at the edge
            out = batch[:, top : top + self.height, left : left + self.width]
        else:  # a random window, inside the image
            size = (batch.shape[0], self.height, self.width, batch.shape[3])
            out = jax.lax.dynamic_slice(batch, (0, top, left, 0), size)
        if out.shape[1:3] != (self.height, self.width):
            shape = (out.shape[0], self.height, self.width, out.shape[3])
            out = self._autocast(out, ints=True)
            out = jax.image.resize(out, shape, method="bilinear", antialias=False)
        return out[0] if single else out

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}


# -- colour ---------------------------------------------------------------------------
def _value_range(layer: str, value_range: Any) -> tuple:
    if not isinstance(value_range, tuple | list) or len(value_range) != 2:
        raise LayerArgumentError(
            f"{layer}: The `value_range` argument should be a list of two numbers. "
            f"Received: value_range={value_range!r}"
        )
    if not all(_is_number(v) for v in value_range):
        raise LayerArgumentError(
            f"{layer}: value_range must hold two numbers, got {value_range!r}."
        )
    return tuple(value_range)


class RandomContrast(RandomImageLayer):
    """Keras's ``RandomContrast``: ``(x - mean) * c + mean`` per image and channel, ``c``
    drawn in ``[1 - lower, 1 + upper]``, clipped to ``value_range``.

    Args:
      factor: a number in ``[0, 1]`` (``c`` in ``[1 - factor, 1 + factor]``) or a pair.
      value_range: the images' value range, ``(0, 255)`` by default.
      seed: an int (see ``RandomFlip``).

    Examples:
      >>> import numpy as np
      >>> RandomContrast(0.5)(np.full((1, 2, 2, 1), 7.0), training=False)[0, 0, 0, 0].item()
      7.0
    """

    _casts = False

    def __init__(
        self,
        factor: Any,
        value_range: Any = (0, 255),
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        data_format: str | None = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            seed, data_format, name=name, dtype=dtype, bounding_box_format=bounding_box_format
        )
        self.factor = _base_factor("RandomContrast", factor, 0, 1)
        self.value_range = _value_range("RandomContrast", value_range)

    def get_random_transformation(self, data, training=True, seed=None):
        shape = jnp.shape(data)
        factor_shape = (1, 1, 1) if len(shape) == 3 else (shape[0], 1, 1, 1)
        if not training:
            return {"contrast_factor": jnp.zeros(factor_shape)}
        factor = jax.random.uniform(
            self._key_of(seed),
            factor_shape,
            self.compute_dtype,
            minval=1.0 - self.factor[0],
            maxval=1.0 + self.factor[1],
        )
        return {"contrast_factor": factor}

    def transform_images(self, images, transformation, training=True):
        images = self._autocast(jnp.asarray(images), ints=False)
        if not training:
            return images
        factor = jnp.asarray(transformation["contrast_factor"])
        mean = jnp.mean(jnp.mean(images, axis=-3, keepdims=True), axis=-2, keepdims=True)
        out = (images - mean) * factor + mean
        return jnp.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


class RandomBrightness(RandomImageLayer):
    """Keras's ``RandomBrightness``: adds ``delta * (max - min)`` of ``value_range`` per image,
    ``delta`` drawn in the factor's range, and clips to ``value_range``.

    Args:
      factor: a number in ``[-1, 1]`` (``delta`` in ``[-|f|, |f|]``) or a pair.
      value_range: the images' value range, ``(0, 255)`` by default.
      seed: an int (see ``RandomFlip``).

    Examples:
      >>> import numpy as np
      >>> out = RandomBrightness((0.5, 0.5), value_range=(0, 1))(np.full((1, 1, 1, 1), 0.25))
      >>> out[0, 0, 0, 0].item()
      0.75
    """

    _casts = False

    def __init__(
        self,
        factor: Any,
        value_range: Any = (0, 255),
        seed: int | None = None,
        *,
        name: str | None = None,
        dtype: Any = None,
        data_format: str | None = None,
        bounding_box_format: Any = None,
    ):
        super().__init__(
            seed, data_format, name=name, dtype=dtype, bounding_box_format=bounding_box_format
        )
        self.factor = _base_factor("RandomBrightness", factor, -1, 1)
        self.value_range = tuple(sorted(_value_range("RandomBrightness", value_range)))

    def get_random_transformation(self, data, training=True, seed=None):
        shape = jnp.shape(data)
        delta_shape = (1, 1, 1) if len(shape) == 3 else (shape[0], 1, 1, 1)
        if not training:
            return {"rgb_delta": jnp.zeros(delta_shape)}
        delta = jax.random.uniform(
            self._key_of(seed), delta_shape, minval=self.factor[0], maxval=self.factor[1]
        )
        return {"rgb_delta": delta * (self.value_range[1] - self.value_range[0])}

    def transform_images(self, images, transformation, training=True):
        images = self._autocast(jnp.asarray(images), ints=False)
        if not training:
            return images
        delta = jnp.asarray(transformation["rgb_delta"]).astype(images.dtype)
        return jnp.clip(images + delta, self.value_range[0], self.value_range[1])

    def get_config(self) -> dict:
        config = {**super().get_config(), "factor": self.factor}
        config["value_range"] = list(self.value_range)
        return config
