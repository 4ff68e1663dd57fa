"""Checks of layers' constructor arguments, shared by every layer: one message per kind of mistake.

Each raises ``LayerArgumentError`` naming the layer, the argument, the value
with its type, and an example, as Keras refuses them (``Dense(0)``,
``Dropout(1.5)``, ``Embedding(-1, 4)``); what Keras accepts is accepted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import activations, regularizers
from ..constraints import _constraints
from ..errors import LayerArgumentError
from . import _initializers


def is_positive_int(value: Any) -> bool:
    """Whether ``value`` is an int (not a bool) > 0."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and value > 0


def positive_int(layer: str, what: str, value: Any, example: str) -> int:
    """``value`` as an int when it is a positive int; else a ``LayerArgumentError``.

    Examples:
      >>> positive_int("Dense", "units", 128, "Dense(128)")
      128
    """
    if not is_positive_int(value):
        raise LayerArgumentError(
            f"{layer} {what} must be a positive int, got {value!r} ({type(value).__name__}); "
            f"e.g. {example}."
        )
    return int(value)


def _number(value: Any) -> float | None:
    """``value`` as a float, or None when it is not a number (a bool or str is not)."""
    if isinstance(value, bool | str | bytes):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def rate(layer: str, what: str, value: Any, *, one: bool) -> float:
    """``value`` as a float in ``[0, 1]`` (``[0, 1)`` unless ``one``); else a ``LayerArgumentError``.

    Examples:
      >>> rate("Dropout", "rate", 0.5, one=True)
      0.5
    """
    number = _number(value)
    top = 1.0 if one else math.nextafter(1.0, 0.0)
    if number is None or not 0.0 <= number <= top:
        interval = "[0, 1]" if one else "[0, 1)"
        raise LayerArgumentError(
            f"{layer} {what} must be a fraction in {interval}, got {value!r} "
            f"({type(value).__name__}); e.g. {layer}({what}=0.1) drops 10%."
        )
    return number


def non_negative(layer: str, what: str, value: Any) -> float:
    """``value`` as a float when it is a finite number >= 0; else a ``LayerArgumentError``."""
    number = _number(value)
    if number is None or not math.isfinite(number) or number < 0:
        raise LayerArgumentError(
            f"{layer} {what} must be a finite number >= 0, got {value!r} "
            f"({type(value).__name__}); e.g. {layer}({what}=0.1)."
        )
    return number


def keep_kernel_arguments(
    layer: Any,
    activation: Any,
    use_bias: bool,
    kernel_initializer: Any,
    bias_initializer: Any,
    kernel_regularizer: Any,
    bias_regularizer: Any,
    activity_regularizer: Any,
) -> None:
    """Checks and keeps on ``layer`` Keras's arguments of a layer with a kernel and a bias.

    ``Dense`` and the ``Conv`` layers: an unknown activation or initializer
    name fails here, not when the layer is built; regularizers are resolved.
    """
    activations.get(activation)
    _initializers.get(kernel_initializer), _initializers.get(bias_initializer)
    layer.activation = activation
    layer.use_bias = use_bias
    layer.kernel_initializer = kernel_initializer
    layer.bias_initializer = bias_initializer
    layer.kernel_regularizer = regularizers.get(kernel_regularizer)
    layer.bias_regularizer = regularizers.get(bias_regularizer)
    layer.activity_regularizer = regularizers.get(activity_regularizer)


def keep_constraints(layer: Any, **constraints: Any) -> None:
    """Keeps Keras's ``*_constraint=`` arguments on ``layer``, resolved by ``constraints.get``.

    ``fit`` projects the weight each one names (the layer's
    ``_weight_constraint_paths``) after every optimizer update, as Keras 3.

    Raises:
      ConstraintError: a name or object ``constraints.get`` cannot interpret.
    """
    resolved = _constraints.resolve(type(layer).__name__, **constraints)
    for key, value in resolved.items():
        setattr(layer, key, value)
