"""Keras 3's ``keras.backend`` names that scripts call: the session, settings, the backend.

phalanx runs on JAX with float32 weights and channels-last layers; the setters
accept what phalanx honours (``set_floatx("float32")``, ``set_epsilon(1e-7)``,
``set_image_data_format("channels_last")``) and refuse the rest by name, saying
what to use instead, where Keras would change its defaults.
"""

from __future__ import annotations

from typing import Any

from .errors import BackendSettingError
from .layers import KerasTensor
from .utils import clear_session as clear_session

_FLOATX = "float32"
_EPSILON = 1e-7
_IMAGE_DATA_FORMAT = "channels_last"
_KERAS_FLOATX = ("bfloat16", "float16", "float32", "float64")

__all__ = [
    "backend",
    "clear_session",
    "epsilon",
    "floatx",
    "image_data_format",
    "is_keras_tensor",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
]


def backend() -> str:
    """The name of the backend: ``"jax"``, as Keras's ``backend()`` under KERAS_BACKEND=jax.

    Examples:
      >>> backend()
      'jax'
    """
    return "jax"


def floatx() -> str:
    """The default float dtype: ``"float32"``, the dtype of every phalanx weight.

    Examples:
      >>> floatx()
      'float32'
    """
    return _FLOATX


def set_floatx(value: str) -> None:
    """Keras's ``set_floatx``: phalanx accepts ``"float32"``, the dtype its weights keep.

    phalanx's layers create float32 weights and compute in the dtype policy's
    compute dtype; a ``floatx`` of another dtype would not be honoured, so it is
    refused rather than ignored.

    Args:
      value: ``"float32"``.

    Raises:
      BackendSettingError: another dtype (use
        ``phalanx.mixed_precision.set_global_policy("mixed_bfloat16")`` or
        ``"mixed_float16"`` for low-precision compute), or not one of Keras's
        ``bfloat16``, ``float16``, ``float32``, ``float64``.
    """
    if value not in _KERAS_FLOATX:
        raise BackendSettingError(
            f"Unknown `floatx` value: {value}. Expected one of {set(_KERAS_FLOATX)}"
        )
    if value != _FLOATX:
        raise BackendSettingError(
            f"set_floatx({value!r}): phalanx's layers keep float32 weights and do not honour "
            "another floatx. For bfloat16/float16 compute use "
            "phalanx.mixed_precision.set_global_policy('mixed_bfloat16') (or "
            "'mixed_float16'); float64 is not supported."
        )


def epsilon() -> float:
    """The fuzz factor of Keras's numerics: ``1e-7``, what phalanx's losses and metrics use.

    Examples:
      >>> epsilon()
      1e-07
    """
    return _EPSILON


def set_epsilon(value: float) -> None:
    """Keras's ``set_epsilon``: phalanx accepts only ``1e-7``, the value its numerics use.

    phalanx's losses, metrics, constraints and ``normalize`` hold Keras's default
    1e-7 as a constant; another value would be silently ignored, so it is refused.

    Args:
      value: ``1e-7``.

    Raises:
      BackendSettingError: another value (give the layer, loss or metric its own
        ``epsilon=`` argument where it has one).
    """
    if float(value) != _EPSILON:
        raise BackendSettingError(
            f"set_epsilon({value!r}): phalanx's losses, metrics and constraints use Keras's "
            "default 1e-7 as a constant and would not honour another epsilon. Pass "
            "epsilon= to the layer or optimizer that takes one (e.g. "
            "BatchNormalization(epsilon=...), Adam(epsilon=...))."
        )


def image_data_format() -> str:
    """The default image layout: ``"channels_last"``, the layout of phalanx's image layers.

    Examples:
      >>> image_data_format()
      'channels_last'
    """
    return _IMAGE_DATA_FORMAT


def set_image_data_format(data_format: str) -> None:
    """Keras's ``set_image_data_format``: phalanx accepts ``"channels_last"``.

    phalanx's convolution and pooling layers take channels-last inputs (NHWC) only.

    Args:
      data_format: ``"channels_last"``.

    Raises:
      BackendSettingError: ``"channels_first"`` (transpose the inputs to channels
        last: ``np.moveaxis(x, 1, -1)``), or neither of Keras's two formats.
    """
    data_format = str(data_format).lower()
    if data_format not in {"channels_first", "channels_last"}:
        raise BackendSettingError(
            "The `data_format` argument must be one of {'channels_first', 'channels_last'}. "
            f"Received: data_format={data_format}"
        )
    if data_format != _IMAGE_DATA_FORMAT:
        raise BackendSettingError(
            "set_image_data_format('channels_first'): phalanx's image layers take "
            "channels-last inputs only. Transpose the inputs instead: np.moveaxis(x, 1, -1) "
            "(or a Permute((2, 3, 1)) layer first)."
        )


def is_keras_tensor(x: Any) -> bool:
    """Whether ``x`` is a symbolic tensor of a functional model (``Input(...)``, a layer's output).

    Args:
      x: anything.

    Returns:
      True for a ``KerasTensor``, as Keras's ``is_keras_tensor``.

    Examples:
      >>> from phalanx.layers import Input
      >>> is_keras_tensor(Input((3,))), is_keras_tensor(1.0)
      (True, False)
    """
    return isinstance(x, KerasTensor)
