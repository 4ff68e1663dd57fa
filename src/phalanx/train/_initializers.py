"""Weight initializers by Keras name, as ``jax.nn.initializers`` functions.

Keras's defaults: ``glorot_uniform`` kernels, ``zeros`` biases, ``ones`` for
normalization scales, and ``uniform`` (``RandomUniform(-0.05, 0.05)``) for
embeddings. ``normal`` is ``RandomNormal(stddev=0.05)``, as Keras.
"""

from __future__ import annotations

from collections.abc import Callable

from jax.nn import initializers as jinit

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
        ``"he_normal"``, ...) or such a function.

    Returns:
      The initializer function.

    Raises:
      ValueError: the name is unknown.
    """
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _INITIALIZERS:
        return _INITIALIZERS[identifier.lower()]()
    raise ValueError(
        f"Unknown initializer {identifier!r}. Use one of {sorted(_INITIALIZERS)} "
        "or a function (key, shape, dtype) -> array."
    )
