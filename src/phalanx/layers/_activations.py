"""Activation functions by Keras name.

Each name maps to a ``jax.nn`` function with Keras 3's defaults where they
differ from JAX's: ``gelu`` is exact (``approximate=False``), ``leaky_relu``
has ``negative_slope=0.2`` and ``hard_sigmoid`` is ``relu6(x + 3) / 6``.
``softmax`` and ``log_softmax`` act on the last axis.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ..errors import LayerArgumentError, UnknownNameError

Activation = Callable[[jax.Array], jax.Array]


def linear(x: jax.Array) -> jax.Array:
    """Returns ``x`` unchanged (Keras's ``linear`` activation)."""
    return x


def hard_sigmoid(x: jax.Array) -> jax.Array:
    """Keras 3's hard sigmoid: ``relu6(x + 3) / 6``."""
    return jax.nn.relu6(x + 3.0) / 6.0


def _softmax(x: jax.Array) -> jax.Array:
    return jax.nn.softmax(x, axis=-1)


def _log_softmax(x: jax.Array) -> jax.Array:
    return jax.nn.log_softmax(x, axis=-1)


def _mish(x: jax.Array) -> jax.Array:
    return x * jnp.tanh(jax.nn.softplus(x))


_ACTIVATIONS: dict[str, Activation] = {
    "linear": linear,
    "relu": jax.nn.relu,
    "relu6": jax.nn.relu6,
    "sigmoid": jax.nn.sigmoid,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "tanh": jnp.tanh,
    "gelu": functools.partial(jax.nn.gelu, approximate=False),
    "elu": jax.nn.elu,
    "selu": jax.nn.selu,
    "softplus": jax.nn.softplus,
    "softsign": jax.nn.soft_sign,
    "swish": jax.nn.silu,
    "silu": jax.nn.silu,
    "leaky_relu": functools.partial(jax.nn.leaky_relu, negative_slope=0.2),
    "hard_sigmoid": hard_sigmoid,
    "hard_silu": jax.nn.hard_silu,
    "hard_swish": jax.nn.hard_silu,
    "exponential": jnp.exp,
    "mish": _mish,
}

#: Activations whose inverse the losses can use: a loss given the pre-activation
#: values (logits) computes its value from them instead of the probabilities.
LOGIT_ACTIVATIONS = ("softmax", "sigmoid")


def get(identifier: str | Activation | None) -> Activation:
    """Returns the activation function for a Keras name or a callable.

    Args:
      identifier: a name (``"relu"``, ``"softmax"``, ...), a callable, or None
        (the identity, as Keras).

    Returns:
      A function ``x -> y`` of the same shape.

    Raises:
      UnknownNameError: the name is unknown (the message lists the known names).

    Examples:
      >>> import jax.numpy as jnp
      >>> get("relu")(jnp.array([-1.0, 2.0])).tolist()
      [0.0, 2.0]
    """
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _ACTIVATIONS:
        return _ACTIVATIONS[identifier.lower()]
    if not isinstance(identifier, str):
        raise LayerArgumentError(
            f"Cannot use {type(identifier).__name__} {identifier!r} as an activation: give a "
            "name ('relu') or a function."
        )
    raise UnknownNameError.of(
        "activation", identifier, _ACTIVATIONS, hint="Or give a function (x -> activations)."
    )


def name_of(identifier: str | Activation | None) -> str | None:
    """Returns the Keras name of an activation identifier, or None for a foreign callable.

    Args:
      identifier: what a layer was given as ``activation``.

    Returns:
      The lower-case name (``"softmax"``), ``"linear"`` for None, or None when
      the identifier is a callable phalanx does not know by name.
    """
    if identifier is None:
        return "linear"
    if isinstance(identifier, str):
        return identifier.lower()
    for name, fn in _ACTIVATIONS.items():
        if fn is identifier:
            return name
    if identifier is jax.nn.softmax:
        return "softmax"
    return None


def names() -> list[str]:
    """Returns the known activation names, sorted."""
    return sorted(_ACTIVATIONS)
