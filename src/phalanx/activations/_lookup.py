"""Activations by name: Keras's ``get``, ``serialize`` and ``deserialize``, and the one name table.

``get("relu")`` is ``relu``; ``serialize(relu)`` is ``"relu"`` (a function of
one's own gives Keras's dict, ``{"module": ..., "class_name": "function",
"config": name, ...}``); ``deserialize`` inverts both, taking the function of
one's own from ``custom_objects``. Names are Keras's, case-sensitive as in
Keras; ``swish`` and ``hard_swish`` are the same functions as ``silu`` and
``hard_silu`` (so they serialize as those).

Where phalanx differs: ``deserialize`` of an unknown name raises
`UnknownNameError` (Keras returns the string itself), and of something that is
neither a name, a dict nor a function raises `ActivationError` (Keras returns it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from ..errors import ActivationError, UnknownNameError
from . import _functions as f

Activation = Callable[..., Any]

_ALL = (
    f.relu, f.leaky_relu, f.relu6, f.softmax, f.celu, f.elu, f.selu, f.softplus, f.softsign,
    f.squareplus, f.soft_shrink, f.sparse_plus, f.silu, f.gelu, f.glu, f.tanh, f.tanh_shrink,
    f.threshold, f.sigmoid, f.sparse_sigmoid, f.exponential, f.hard_sigmoid, f.hard_silu,
    f.hard_tanh, f.hard_shrink, f.linear, f.mish, f.log_softmax, f.log_sigmoid, f.sparsemax,
)  # fmt: skip
_BY_NAME: dict[str, Activation] = {fn.__name__: fn for fn in _ALL}
_BY_NAME["swish"] = f.silu
_BY_NAME["hard_swish"] = f.hard_silu
# JAX's own functions a model may be given, by the name whose logits the losses know.
_JAX_NAMES = ((jax.nn.softmax, "softmax"), (jax.nn.sigmoid, "sigmoid"))

#: Activations whose inverse the losses can use: a loss given the pre-activation
#: values (logits) computes its value from them instead of the probabilities.
LOGIT_ACTIVATIONS = ("softmax", "sigmoid")

_HINT = "Or give a function (x -> activations)."


def _by_name(name: str, custom_objects: dict | None = None) -> Activation:
    """The function named ``name``; ``custom_objects`` (given by ``deserialize``) first."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _BY_NAME:
        return _BY_NAME[name]
    hint = _HINT
    if custom_objects is not None and name.lower() not in _BY_NAME:
        hint += f" A function of one's own in a config: custom_objects={{{name!r}: function}}."
    raise UnknownNameError.of("activation", name, _BY_NAME, hint=hint)


def _from_dict(config: dict, custom_objects: dict | None) -> Activation:
    """The function a Keras config dict names: ``{"class_name": "function", "config":
    "relu", ...}`` (Keras's form) or ``{"class_name": "relu", "config": None}`` (its old one)."""
    name = config.get("class_name")
    if name == "function" and isinstance(config.get("config"), str):
        return _by_name(config["config"], custom_objects)
    if isinstance(name, str) and name not in ("function", "__lambda__"):
        return _by_name(name, custom_objects)
    lambda_note = (
        " A lambda stored in a config is never run: give the function itself."
        if name == "__lambda__"
        else ""
    )
    raise ActivationError(
        f"An activation config is a dict like {{'class_name': 'function', 'config': 'relu'}}, "
        f"got {config!r}.{lambda_note}"
    )


def get(identifier: str | dict | Activation | None) -> Activation:
    """Keras's ``activations.get``: the activation function for a name, a config dict or a callable.

    Args:
      identifier: a name (``"relu"``), a ``serialize`` dict, a callable
        (returned as it is), or None (``linear``, as Keras).

    Returns:
      The function.

    Raises:
      UnknownNameError: an unknown name (the message lists the known names).
      ActivationError: an identifier of another type (``get(3)``).

    Examples:
      >>> get("relu")([-1.0, 2.0]).tolist()
      [0.0, 2.0]
    """
    if identifier is None:
        return f.linear
    if isinstance(identifier, dict):
        return _from_dict(identifier, None)
    if isinstance(identifier, str):
        return _by_name(identifier)
    if callable(identifier):
        return identifier
    raise ActivationError(
        f"Cannot use {type(identifier).__name__} {identifier!r} as an activation: give a "
        "name ('relu'), a function, or a config dict."
    )


def serialize(activation: Activation) -> str | dict:
    """Keras's ``activations.serialize``: the name of a known function, else Keras's dict.

    Args:
      activation: an activation function (``phalanx.activations.relu``, or one's own).

    Returns:
      The name (``"relu"``; ``"silu"`` for ``swish``), or for a function of one's own
      ``{"module": ..., "class_name": "function", "config": its name, "registered_name": ...}``
      as Keras writes it.

    Raises:
      ActivationError: not a named function (a string, None, a lambda, an object).

    Examples:
      >>> from phalanx.activations import gelu
      >>> serialize(gelu)
      'gelu'
    """
    name = getattr(activation, "__name__", None)
    if not callable(activation) or not isinstance(name, str) or name == "<lambda>":
        raise ActivationError(
            f"activations.serialize takes a named activation function, got "
            f"{type(activation).__name__} {activation!r}"
            + (
                " (a name is already serialized; activations.get turns it into the function)."
                if isinstance(activation, str)
                else "; define the function with def, or pass a known one (activations.relu)."
            )
        )
    if _BY_NAME.get(name) is activation:
        return name
    kind = type(activation)
    return {
        "module": kind.__module__,
        "class_name": kind.__name__,
        "config": name,
        "registered_name": kind.__name__,
    }


def deserialize(config: str | dict, custom_objects: dict | None = None) -> Activation:
    """Keras's ``activations.deserialize``: the function a name or ``serialize`` dict gives.

    Args:
      config: a name (``"relu"``) or a dict ``serialize`` wrote.
      custom_objects: ``{name: function}`` for functions of one's own; looked up first.

    Returns:
      The function.

    Raises:
      UnknownNameError: a name that is neither known nor in ``custom_objects``.
      ActivationError: a dict that names no function, or another type.

    Examples:
      >>> deserialize("gelu").__name__
      'gelu'
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        return _by_name(config, custom_objects)
    if isinstance(config, dict):
        return _from_dict(config, custom_objects)
    if callable(config):
        return config
    raise ActivationError(
        f"activations.deserialize takes a name or a config dict, got "
        f"{type(config).__name__} {config!r}; e.g. deserialize('relu')."
    )


def name_of(identifier: str | Activation | None) -> str | None:
    """The Keras name of what a layer was given as ``activation``, or None for a foreign callable.

    Args:
      identifier: a name, a function or None.

    Returns:
      The canonical name (``"silu"`` for ``"swish"``), ``"linear"`` for None, the
      name of ``jax.nn.softmax``/``jax.nn.sigmoid``, or None for another callable.
    """
    if identifier is None:
        return "linear"
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        return identifier if fn is None else fn.__name__
    name = getattr(identifier, "__name__", None)
    if isinstance(name, str) and _BY_NAME.get(name) is identifier:
        return name
    return next((known for fn, known in _JAX_NAMES if fn is identifier), None)


def names() -> list[str]:
    """The known activation names (with the aliases ``swish``, ``hard_swish``), sorted."""
    return sorted(_BY_NAME)
