"""Keras 3's initializer classes on ``jax.random``: ``GlorotUniform``, ``HeNormal``, ``Zeros``, ...

An initializer is called as JAX's (``init(key, shape, dtype)``, what phalanx's
layers do when they create a weight) or as Keras's (``init(shape, dtype)``:
drawn from its ``seed``, or from ``phalanx.utils.set_random_seed``'s stream).
Distributions and their parameters are Keras 3's (``VarianceScaling``'s
truncated normal has Keras's corrected standard deviation, ``TruncatedNormal``
cuts at two standard deviations); the random draws are JAX's, so the values
differ from Keras's for the same seed.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.nn import initializers as jinit

from .._random import model_seed
from ..errors import LayerArgumentError, UnknownNameError


def _is_key(value: Any) -> bool:
    if isinstance(value, jax.Array | np.ndarray):
        return jnp.issubdtype(value.dtype, jax.dtypes.prng_key) or (
            value.dtype == jnp.uint32 and value.shape == (2,)
        )
    return False


class Initializer:
    """Base class: ``init(key, shape, dtype)`` (JAX) or ``init(shape, dtype)`` (Keras).

    Subclasses implement ``_draw(key, shape, dtype)`` and ``get_config``.
    """

    seed: int | None = None

    def __call__(self, key_or_shape: Any, shape: Any = None, dtype: Any = None) -> jax.Array:
        if _is_key(key_or_shape):
            key = key_or_shape
        else:
            shape, dtype = key_or_shape, shape if dtype is None else dtype
            key = jax.random.key(self.seed if self.seed is not None else model_seed())
        dtype = jnp.float32 if dtype is None else dtype
        return self._draw(key, tuple(int(d) for d in shape), dtype)

    def _draw(self, key: Any, shape: tuple, dtype: Any) -> jax.Array:
        raise NotImplementedError

    def get_config(self) -> dict:
        """The constructor arguments (``from_config`` inverts it)."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        """The initializer ``get_config()`` describes (Keras's too: unset axes are dropped)."""
        config = {k: v for k, v in config.items() if not (k.endswith("_axes") and v is None)}
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.get_config() == self.get_config()

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.get_config())))


def _seed(seed: Any, owner: str) -> int | None:
    if seed is None or (isinstance(seed, int | np.integer) and not isinstance(seed, bool)):
        return None if seed is None else int(seed)
    raise LayerArgumentError(
        f"{owner}: seed must be an int or None, got {type(seed).__name__} {seed!r}; "
        f"e.g. {owner}(seed=42)."
    )


class Zeros(Initializer):
    """All zeros (Keras's ``zeros``)."""

    def _draw(self, key, shape, dtype):
        return jnp.zeros(shape, dtype)


class Ones(Initializer):
    """All ones (Keras's ``ones``)."""

    def _draw(self, key, shape, dtype):
        return jnp.ones(shape, dtype)


class Constant(Initializer):
    """Every entry ``value`` (Keras's ``constant``).

    Args:
      value: a number.
    """

    def __init__(self, value: float = 0.0):
        self.value = value

    def _draw(self, key, shape, dtype):
        return jnp.full(shape, self.value, dtype)

    def get_config(self) -> dict:
        return {"value": self.value}


class RandomNormal(Initializer):
    """Normal draws, ``N(mean, stddev**2)`` (Keras's ``random_normal``; default stddev 0.05)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        self.mean, self.stddev, self.seed = mean, stddev, _seed(seed, "RandomNormal")

    def _draw(self, key, shape, dtype):
        return self.mean + self.stddev * jax.random.normal(key, shape, dtype)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Uniform draws in ``[minval, maxval)`` (Keras's ``random_uniform``; default +-0.05)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        self.minval, self.maxval, self.seed = minval, maxval, _seed(seed, "RandomUniform")

    def _draw(self, key, shape, dtype):
        return jax.random.uniform(key, shape, dtype, self.minval, self.maxval)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(Initializer):
    """Normal draws cut at two standard deviations (Keras's ``truncated_normal``)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        self.mean, self.stddev, self.seed = mean, stddev, _seed(seed, "TruncatedNormal")

    def _draw(self, key, shape, dtype):
        return self.mean + self.stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")


class VarianceScaling(Initializer):
    """Keras's ``VarianceScaling``: variance ``scale / n`` with ``n`` the fan of ``mode``.

    Args:
      scale: a positive factor.
      mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"``.
      distribution: ``"truncated_normal"`` (stddev corrected for the cut, as Keras),
        ``"untruncated_normal"`` or ``"uniform"``.
      seed: an int, or None.
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
    ):
        name = type(self).__name__
        if not isinstance(scale, int | float) or isinstance(scale, bool) or scale <= 0:
            raise LayerArgumentError(
                f"{name}: scale must be a positive float, got {scale!r}; e.g. scale=2.0."
            )
        if mode not in _MODES:
            raise LayerArgumentError(f"{name}: mode must be one of {_MODES}, got {mode!r}.")
        distribution = "truncated_normal" if distribution == "normal" else distribution
        if distribution not in _DISTRIBUTIONS:
            raise LayerArgumentError(
                f"{name}: distribution must be one of {_DISTRIBUTIONS}, got {distribution!r}."
            )
        self.scale, self.mode, self.distribution = float(scale), mode, distribution
        self.seed = _seed(seed, name)

    def _draw(self, key, shape, dtype):
        base = jinit.variance_scaling(self.scale, self.mode, self.distribution, dtype=dtype)
        return base(key, shape, dtype)

    def get_config(self) -> dict:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
        }


def _fixed(scale: float, mode: str, distribution: str, doc: str) -> type:
    def __init__(self, seed: int | None = None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}

    def from_config(cls, config: dict):
        return Initializer.from_config.__func__(cls, config)

    return {
        "__init__": __init__,
        "get_config": get_config,
        "from_config": classmethod(from_config),
        "__doc__": doc,
    }


GlorotUniform = type(
    "GlorotUniform",
    (VarianceScaling,),
    _fixed(1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform: ``VarianceScaling(1, fan_avg)``."),
)
GlorotNormal = type(
    "GlorotNormal",
    (VarianceScaling,),
    _fixed(1.0, "fan_avg", "truncated_normal", "Glorot normal (truncated), fan_avg."),
)
HeUniform = type(
    "HeUniform",
    (VarianceScaling,),
    _fixed(2.0, "fan_in", "uniform", "He uniform: scale 2, fan_in."),
)
HeNormal = type(
    "HeNormal",
    (VarianceScaling,),
    _fixed(2.0, "fan_in", "truncated_normal", "He normal (truncated): scale 2, fan_in."),
)
LecunUniform = type(
    "LecunUniform",
    (VarianceScaling,),
    _fixed(1.0, "fan_in", "uniform", "LeCun uniform: scale 1, fan_in."),
)
LecunNormal = type(
    "LecunNormal",
    (VarianceScaling,),
    _fixed(1.0, "fan_in", "truncated_normal", "LeCun normal (truncated): scale 1, fan_in."),
)
for _cls in (GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, LecunNormal):
    _cls.__module__ = __name__


class Orthogonal(Initializer):
    """An orthogonal matrix times ``gain`` (Keras's ``orthogonal``; leading axes flattened)."""

    def __init__(self, gain: float = 1.0, seed: int | None = None):
        self.gain, self.seed = gain, _seed(seed, "Orthogonal")

    def _draw(self, key, shape, dtype):
        if len(shape) < 2:
            raise LayerArgumentError(
                f"Orthogonal needs a shape of rank >= 2, got {shape}; use it for kernels."
            )
        return jinit.orthogonal(self.gain)(key, shape, dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (Keras's ``identity``; 2-D shapes only)."""

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def _draw(self, key, shape, dtype):
        if len(shape) != 2:
            raise LayerArgumentError(f"Identity needs a 2-D shape, got {shape}.")
        return self.gain * jnp.eye(*shape, dtype=dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain}


_CLASSES = {
    cls.__name__: cls
    for cls in (
        Zeros,
        Ones,
        Constant,
        RandomNormal,
        RandomUniform,
        TruncatedNormal,
        VarianceScaling,
        GlorotUniform,
        GlorotNormal,
        HeUniform,
        HeNormal,
        LecunUniform,
        LecunNormal,
        Orthogonal,
        Identity,
    )
}


def _snake(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out


_ALIASES = {_snake(name): cls for name, cls in _CLASSES.items()}
_ALIASES.update({"uniform": RandomUniform, "normal": RandomNormal, "zero": Zeros, "one": Ones})


def get(identifier: Any) -> Initializer | Any:
    """Keras's ``initializers.get``: an initializer from a name, config, class or instance.

    Args:
      identifier: ``"he_normal"``/``"HeNormal"``, ``{"class_name": "Constant",
        "config": {"value": 2}}``, an ``Initializer`` class or instance, or a
        function ``(key, shape, dtype)`` (returned as it is); None gives None.

    Raises:
      UnknownNameError: an unknown name.

    Examples:
      >>> get("he_normal")
      HeNormal(seed=None)
    """
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier) or _ALIASES.get(identifier.lower())
        if cls is None:
            raise UnknownNameError.of(
                "initializer", identifier, _ALIASES, hint="Or give a phalanx.initializers object."
            )
        return cls()
    if callable(identifier):
        return identifier
    raise LayerArgumentError(
        f"Cannot use {type(identifier).__name__} {identifier!r} as an initializer: give a "
        "name ('glorot_uniform'), a phalanx.initializers object or a function "
        "(key, shape, dtype) -> array."
    )


def serialize(initializer: Initializer) -> dict:
    """``{"class_name": ..., "config": ...}`` (``deserialize``/``get`` read it back).

    Examples:
      >>> serialize(Constant(2.0))
      {'class_name': 'Constant', 'config': {'value': 2.0}}
    """
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config: dict) -> Initializer:
    """The initializer of ``serialize``'s dict.

    Raises:
      UnknownNameError: an unknown ``class_name``.
    """
    name = config.get("class_name")
    cls = _CLASSES.get(name) or _ALIASES.get(str(name).lower())
    if cls is None:
        raise UnknownNameError.of(
            "initializer", str(name), _CLASSES, hint="Use a class of phalanx.initializers."
        )
    return cls.from_config(config.get("config") or {})
