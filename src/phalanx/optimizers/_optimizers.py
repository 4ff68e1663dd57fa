"""Keras's optimizers by name, with Keras's defaults, as optax transformations.

Each optimizer is a configuration object whose ``to_optax()`` returns
``optax.inject_hyperparams(factory)(learning_rate=...)`` where the factory
chains, in Keras's order: gradient clipping (``clipnorm`` per tensor,
``clipvalue``, or ``global_clipnorm``), the optimizer's direction
(``scale_by_...``), decoupled weight decay (``var -= lr * weight_decay * var``,
Keras's ``weight_decay``) and the learning rate. The learning rate therefore
lives in the optimizer state (see :mod:`phalanx.optimizers._learning_rate`).

Update math: SGD, RMSprop and Adagrad use optax's transformations, which equal
Keras's for a constant learning rate (RMSprop with ``eps`` inside the square
root, as Keras). Adam and AdamW use :func:`~phalanx.optimizers._transforms.scale_by_keras_adam`,
Keras's epsilon placement, instead of optax's.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import optax

from ..errors import (
    CompileArgumentError,
    LearningRateValueError,
    OptimizerArgumentError,
    StatefulAPIError,
    UnknownNameError,
)
from . import _transforms


class Optimizer:
    """Base class of phalanx optimizers: Keras's arguments, optax underneath.

    Args:
      learning_rate: a float, or a schedule ``step -> lr`` (a phalanx
        ``optimizers.schedules`` object or any optax schedule).
      weight_decay: decoupled weight decay (``var -= lr * weight_decay * var``);
        None for none.
      clipnorm: clip each gradient tensor to this L2 norm.
      clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
      global_clipnorm: clip all gradients together to this global L2 norm.
      name: the optimizer's name.

    Raises:
      ValueError: more than one of ``clipnorm``, ``clipvalue``, ``global_clipnorm``.
    """

    default_name = "optimizer"

    def __init__(
        self,
        learning_rate: Any,
        *,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str | None = None,
    ):
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise OptimizerArgumentError(
                "Only one of clipnorm, clipvalue and global_clipnorm can be set, got "
                f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}."
            )
        if not callable(learning_rate):
            learning_rate = _constant_rate(type(self).__name__, learning_rate)
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.name = name or self.default_name
        self._tx: optax.GradientTransformation | None = None

    def direction(self) -> optax.GradientTransformation:
        """The update direction before weight decay and the learning rate."""
        raise NotImplementedError

    def _clipping(self) -> list[optax.GradientTransformation]:
        if self.clipnorm is not None:
            return [_transforms.clip_by_norm(self.clipnorm)]
        if self.clipvalue is not None:
            return [optax.clip(self.clipvalue)]
        if self.global_clipnorm is not None:
            return [optax.clip_by_global_norm(self.global_clipnorm)]
        return []

    def _chain(self, learning_rate) -> optax.GradientTransformation:
        parts = [*self._clipping(), self.direction()]
        if self.weight_decay:
            parts.append(optax.add_decayed_weights(self.weight_decay))
        parts.append(optax.scale_by_learning_rate(learning_rate))
        return optax.chain(*parts)

    def to_optax(self) -> optax.GradientTransformation:
        """Returns the optax transformation, with the learning rate in its state.

        The state is an ``optax.InjectStatefulHyperparamsState`` whose
        ``hyperparams["learning_rate"]`` is a float32 scalar (see
        ``get_learning_rate``/``set_learning_rate``).
        """
        if self._tx is None:
            inject = optax.inject_hyperparams(self._chain, hyperparam_dtype="float32")
            self._tx = inject(learning_rate=self.learning_rate)
        return self._tx

    def init(self, params: Any) -> Any:
        """``to_optax().init(params)``: the optimizer state for ``params``."""
        return self.to_optax().init(params)

    def update(self, updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        """``to_optax().update(...)``: the parameter updates and the new state."""
        return self.to_optax().update(updates, state, params)

    def get_config(self) -> dict:
        """Returns the constructor arguments, as Keras."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.learning_rate!r})"

    def __getattr__(self, name: str) -> Any:
        if name in _KERAS_STATEFUL:
            raise StatefulAPIError(
                f"{type(self).__name__}.{name}: phalanx optimizers keep no state in the object "
                "(JAX steps are pure functions); the optimizer state is a value you carry. "
                "Keras's apply_gradients becomes: opt_state = optimizer.init(params); in the "
                "step updates, opt_state = optimizer.update(grads, opt_state, params); params = "
                "optax.apply_updates(params, updates). Count steps yourself (iterations), or "
                "read model.optimizer.iterations after compile/fit. examples/custom_loop.py "
                "shows a whole loop."
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum; Keras defaults lr 0.01, momentum 0.

    Args:
      learning_rate: default 0.01.
      momentum: default 0.0.
      nesterov: default False.
      **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Example:
      >>> SGD().learning_rate
      0.01
    """

    default_name = "SGD"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        super().__init__(learning_rate, **kwargs)
        number = isinstance(momentum, numbers.Real) and not isinstance(momentum, bool)
        if not number or not 0.0 <= momentum <= 1.0:
            raise OptimizerArgumentError(
                f"SGD momentum must be a number in [0, 1], got {momentum!r}; e.g. "
                "SGD(learning_rate=0.01, momentum=0.9)."
            )
        self.momentum = float(momentum)
        self.nesterov = nesterov

    def direction(self):
        if not self.momentum:
            return optax.identity()
        return optax.trace(decay=self.momentum, nesterov=self.nesterov)


class Adam(Optimizer):
    """Adam with Keras's defaults (lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7) and math.

    Args:
      learning_rate: default 0.001.
      beta_1: default 0.9.
      beta_2: default 0.999.
      epsilon: default 1e-7, added after the bias correction as Keras.
      amsgrad: default False.
      **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    default_name = "adam"

    def __init__(
        self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, **kwargs
    ):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = amsgrad

    def direction(self):
        return _transforms.scale_by_keras_adam(self.beta_1, self.beta_2, self.epsilon, self.amsgrad)


class AdamW(Adam):
    """Adam with decoupled weight decay; Keras defaults lr 0.001, weight_decay 0.004, eps 1e-7.

    Args:
      learning_rate: default 0.001.
      weight_decay: default 0.004.
      beta_1: default 0.9.
      beta_2: default 0.999.
      epsilon: default 1e-7.
      amsgrad: default False.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    default_name = "adamw"

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay=0.004,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-7,
        amsgrad=False,
        **kwargs,
    ):
        if weight_decay is None:
            raise OptimizerArgumentError(
                "AdamW needs a weight_decay (a float, e.g. AdamW(weight_decay=0.004), Keras's "
                "default); use Adam for none."
            )
        super().__init__(
            learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay=weight_decay, **kwargs
        )


class RMSprop(Optimizer):
    """RMSprop with Keras's defaults (lr 0.001, rho 0.9, momentum 0, epsilon 1e-7).

    Args:
      learning_rate: default 0.001.
      rho: decay of the squared-gradient average; default 0.9.
      momentum: default 0.0.
      epsilon: default 1e-7 (inside the square root, as Keras).
      centered: divide by the gradient's estimated variance instead; default False.
      **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    default_name = "rmsprop"

    def __init__(
        self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **kwargs
    ):
        super().__init__(learning_rate, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = centered

    def direction(self):
        if self.centered:
            scale = optax.scale_by_stddev(decay=self.rho, eps=self.epsilon, eps_in_sqrt=True)
        else:
            scale = optax.scale_by_rms(decay=self.rho, eps=self.epsilon, eps_in_sqrt=True)
        if not self.momentum:
            return scale
        return optax.chain(scale, optax.trace(decay=self.momentum))


class Adagrad(Optimizer):
    """Adagrad with Keras's defaults (lr 0.001, initial_accumulator_value 0.1, epsilon 1e-7).

    Args:
      learning_rate: default 0.001.
      initial_accumulator_value: default 0.1.
      epsilon: default 1e-7.
      **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    default_name = "adagrad"

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def direction(self):
        return optax.scale_by_rss(
            initial_accumulator_value=self.initial_accumulator_value, eps=self.epsilon
        )


_BY_NAME: dict[str, type[Optimizer]] = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
}


def get(identifier: Any) -> Optimizer | optax.GradientTransformation:
    """Returns an optimizer for a Keras name, a class, an instance or an optax transformation.

    Args:
      identifier: ``"adam"``, ``"sgd"``, ``"rmsprop"``, ``"adamw"``,
        ``"adagrad"`` (case-insensitive, Keras's defaults), a phalanx optimizer
        class or instance, or any ``optax.GradientTransformation`` (returned
        unchanged).

    Returns:
      A phalanx ``Optimizer`` (call ``to_optax()``), or the optax transformation given.

    Raises:
      UnknownNameError: an unknown name (the message lists the known ones and the closest).
      CompileArgumentError: something that is not an optimizer.

    Example:
      >>> get("adam")
      Adam(learning_rate=0.001)
    """
    if isinstance(identifier, Optimizer | optax.GradientTransformation):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise UnknownNameError.of(
                "optimizer",
                identifier,
                _BY_NAME,
                hint="Or give a phalanx.optimizers object (e.g. "
                "optimizers.Adam(learning_rate=1e-3)) or an optax GradientTransformation.",
            )
        return cls()
    raise CompileArgumentError(
        f"Cannot use {type(identifier).__name__} {identifier!r} as an optimizer: give a name "
        "('adam'), a phalanx.optimizers object or an optax GradientTransformation."
    )


_KERAS_STATEFUL = frozenset(
    {"apply_gradients", "apply", "minimize", "iterations", "variables", "build"}
)


def _constant_rate(optimizer: str, value: Any) -> float:
    """A constant learning rate as a float: a finite number >= 0, else a clear error."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = None
    if isinstance(value, bool | str | bytes) or rate is None or not math.isfinite(rate) or rate < 0:
        raise LearningRateValueError(
            f"{optimizer}(learning_rate=...) takes a finite number >= 0 or a schedule "
            f"(step -> rate), got {value!r} ({type(value).__name__}). For example "
            f"{optimizer}(learning_rate=1e-3) or "
            "phalanx.optimizers.schedules.ExponentialDecay(1e-3, 1000, 0.9)."
        )
    return rate
