"""Weight initializers by Keras name, as ``jax.nn.initializers`` functions.

Keras's defaults: ``glorot_uniform`` kernels, ``zeros`` biases, ``ones`` for
normalization scales, and ``uniform`` (``RandomUniform(-0.05, 0.05)``) for
embeddings. ``normal`` is ``RandomNormal(stddev=0.05)``, as Keras.
"""

from __future__ import annotations

from collections.abc import Callable

from jax.nn import initializers as jinit

from ..errors import LayerArgumentError, UnknownNameError
from ..initializers import _initializers as keras_initializers

Initializer = Callable[..., object]


def _uniform(minval: float, maxval: float) -> Initializer:
    scale = maxval - minval
    base = jinit.uniform(scale)

    def init(key, shape, dtype=None):
        kwargs = {} if dtype is None else {"dtype": dtype}
        return base(key, shape, **kwargs) + minval

    return init


_INITIALIZERS: dict[str, Callable[[], Initializer]] = {
    "glorot_uniform": jinit.glorot_uniform,
    "glorot_normal": jinit.glorot_normal,
    "he_uniform": jinit.he_uniform,
    "he_normal": jinit.he_normal,
    "lecun_uniform": jinit.lecun_uniform,
    "lecun_normal": jinit.lecun_normal,
    "orthogonal": jinit.orthogonal,
    "zeros": lambda: jinit.zeros,
    "ones": lambda: jinit.ones,
    "uniform": lambda: _uniform(-0.05, 0.05),
    "random_uniform": lambda: _uniform(-0.05, 0.05),
    "normal": lambda: jinit.normal(0.05),
    "random_normal": lambda: jinit.normal(0.05),
}


def get(identifier: str | Initializer) -> Initializer:
    """Returns a ``jax.nn.initializers``-style function ``(key, shape, dtype) -> array``.

    Args:
      identifier: a Keras initializer name (``"glorot_uniform"``, ``"zeros"``,
        ``"he_normal"``, ``"GlorotUniform"``, ...), a ``phalanx.initializers``
        object or config dict, or such a function.

    Returns:
      The initializer function.

    Raises:
      UnknownNameError: the name is unknown (the message lists the known names).
    """
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _INITIALIZERS:
        return _INITIALIZERS[identifier.lower()]()
    if isinstance(identifier, dict) or (
        isinstance(identifier, str) and identifier.lower() in keras_initializers._ALIASES
    ):
        return keras_initializers.get(identifier)  # Keras's class names and configs
    if isinstance(identifier, str) and identifier in keras_initializers._CLASSES:
        return keras_initializers.get(identifier)
    if not isinstance(identifier, str):
        raise LayerArgumentError(
            f"Cannot use {type(identifier).__name__} {identifier!r} as an initializer: give a "
            "name ('glorot_uniform') or a function (key, shape, dtype) -> array."
        )
    raise UnknownNameError.of(
        "initializer",
        identifier,
        _INITIALIZERS,
        hint="Or give a function (key, shape, dtype) -> array.",
    )
