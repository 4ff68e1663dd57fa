"""Keras 3's optimizers by name, with Keras's defaults and update math, on optax.

Each class is a configuration (see `phalanx.optimizers._optimizer.Optimizer`
for the options every one takes); ``to_optax()`` gives the transformation.

Update math: SGD, RMSprop, Adagrad, Adadelta and Lion use optax's
transformations, which equal Keras's; Adam, AdamW, Nadam, Adamax, Lamb, Ftrl and
Adafactor use `phalanx.optimizers._transforms`, Keras's formulas where
optax's differ (epsilon placement, Nadam's momentum schedule, Lamb's trust
ratio) or are missing (FTRL, Keras's Adafactor).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import optax

from ..errors import CompileArgumentError, OptimizerArgumentError, UnknownNameError
from . import _transforms
from ._optimizer import Optimizer

__all__ = [
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Ftrl",
    "Lamb",
    "Lion",
    "Nadam",
    "Optimizer",
    "RMSprop",
    "get",
]


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum; Keras defaults lr 0.01, momentum 0.

    Args:
      learning_rate: default 0.01.
      momentum: default 0.0.
      nesterov: default False.
      **kwargs: the options of ``Optimizer`` (``weight_decay``, ``clipnorm``, ``use_ema``, ...).

    Examples:
      >>> SGD().learning_rate
      0.01
    """

    _hyperparameters = ("momentum", "nesterov")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
        **kwargs: Any,
    ):
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
      **kwargs: the options of ``Optimizer`` (``weight_decay``, ``clipnorm``, ``use_ema``, ...).
    """

    _hyperparameters = ("beta_1", "beta_2", "epsilon", "amsgrad")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        **kwargs: Any,
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
      **kwargs: the options of ``Optimizer``.
    """

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        weight_decay: float = 0.004,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        **kwargs: Any,
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
      **kwargs: the options of ``Optimizer`` (``weight_decay``, ``clipnorm``, ``use_ema``, ...).
    """

    _hyperparameters = ("rho", "momentum", "epsilon", "centered")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-7,
        centered: bool = False,
        **kwargs: Any,
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
      **kwargs: the options of ``Optimizer`` (``weight_decay``, ``clipnorm``, ``use_ema``, ...).
    """

    _hyperparameters = ("initial_accumulator_value", "epsilon")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float = 1e-7,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def direction(self):
        return optax.scale_by_rss(
            initial_accumulator_value=self.initial_accumulator_value, eps=self.epsilon
        )


class Nadam(Optimizer):
    """Adam with Nesterov momentum, Keras 3's math (lr 0.001, beta_1 0.9, beta_2 0.999, eps 1e-7).

    Args:
      learning_rate: default 0.001.
      beta_1: default 0.9 (scaled by Keras's schedule ``1 - 0.5 * 0.96^t``).
      beta_2: default 0.999.
      epsilon: default 1e-7.
      **kwargs: the options of ``Optimizer``.
    """

    _hyperparameters = ("beta_1", "beta_2", "epsilon")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def direction(self):
        return _transforms.scale_by_keras_nadam(self.beta_1, self.beta_2, self.epsilon)


class Adamax(Optimizer):
    """Adam on the infinity norm, Keras 3's math (lr 0.001, beta_1 0.9, beta_2 0.999, eps 1e-7).

    Args:
      learning_rate: default 0.001.
      beta_1: default 0.9.
      beta_2: decay of the infinity norm; default 0.999.
      epsilon: default 1e-7.
      **kwargs: the options of ``Optimizer``.
    """

    _hyperparameters = ("beta_1", "beta_2", "epsilon")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def direction(self):
        return _transforms.scale_by_keras_adamax(self.beta_1, self.beta_2, self.epsilon)


class Adadelta(Optimizer):
    """Adadelta with Keras 3's defaults (lr 0.001, rho 0.95, epsilon 1e-7).

    Args:
      learning_rate: default 0.001.
      rho: decay of the squared gradients and updates; default 0.95.
      epsilon: default 1e-7.
      **kwargs: the options of ``Optimizer``.
    """

    _hyperparameters = ("rho", "epsilon")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        rho: float = 0.95,
        epsilon: float = 1e-7,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.rho = float(rho)
        self.epsilon = float(epsilon)

    def direction(self):
        return optax.scale_by_adadelta(rho=self.rho, eps=self.epsilon)


class Ftrl(Optimizer):
    """FTRL-proximal, Keras 3's math and defaults (lr 0.001, learning_rate_power -0.5, ...).

    Args:
      learning_rate: default 0.001.
      learning_rate_power: <= 0; default -0.5.
      initial_accumulator_value: >= 0; default 0.1.
      l1_regularization_strength: >= 0; default 0.
      l2_regularization_strength: >= 0; default 0.
      l2_shrinkage_regularization_strength: >= 0; default 0.
      beta: default 0.
      **kwargs: the options of ``Optimizer``.

    Raises:
      OptimizerArgumentError: an argument out of its range (Keras's words).
    """

    _hyperparameters = (
        "learning_rate_power",
        "initial_accumulator_value",
        "l1_regularization_strength",
        "l2_regularization_strength",
        "l2_shrinkage_regularization_strength",
        "beta",
    )

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        learning_rate_power: float = -0.5,
        initial_accumulator_value: float = 0.1,
        l1_regularization_strength: float = 0.0,
        l2_regularization_strength: float = 0.0,
        l2_shrinkage_regularization_strength: float = 0.0,
        beta: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        for name, value, sign in (
            ("initial_accumulator_value", initial_accumulator_value, 1),
            ("learning_rate_power", learning_rate_power, -1),
            ("l1_regularization_strength", l1_regularization_strength, 1),
            ("l2_regularization_strength", l2_regularization_strength, 1),
            ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, 1),
        ):
            if value * sign < 0:
                word = "positive" if sign > 0 else "negative"
                raise OptimizerArgumentError(
                    f"`{name}` needs to be {word} or zero. Received: {name}={value}."
                )
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def update_rule(self, learning_rate: Any):
        return _transforms.keras_ftrl(
            learning_rate,
            self.learning_rate_power,
            self.initial_accumulator_value,
            self.l1_regularization_strength,
            self.l2_regularization_strength,
            self.l2_shrinkage_regularization_strength,
            self.beta,
        )


class Lion(Optimizer):
    """Lion (sign of interpolated momentum) with Keras 3's defaults (lr 0.001, 0.9, 0.99).

    Args:
      learning_rate: default 0.001.
      beta_1: interpolation of the update, in (0, 1]; default 0.9.
      beta_2: decay of the momentum; default 0.99.
      **kwargs: the options of ``Optimizer``.

    Raises:
      OptimizerArgumentError: ``beta_1`` outside (0, 1].
    """

    _hyperparameters = ("beta_1", "beta_2")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.99,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        if beta_1 <= 0 or beta_1 > 1:
            raise OptimizerArgumentError(
                "Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer "
                f"degenerates to SignSGD. Received: beta_1={beta_1}."
            )
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def direction(self):
        return optax.scale_by_lion(b1=self.beta_1, b2=self.beta_2)


class Lamb(Optimizer):
    """Lamb (Adam with a per-tensor trust ratio), Keras 3's math (lr 0.001, 0.9, 0.999, 1e-7).

    Args:
      learning_rate: default 0.001.
      beta_1: default 0.9.
      beta_2: default 0.999.
      epsilon: default 1e-7.
      **kwargs: the options of ``Optimizer``.
    """

    _hyperparameters = ("beta_1", "beta_2", "epsilon")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def direction(self):
        return _transforms.scale_by_keras_lamb(self.beta_1, self.beta_2, self.epsilon)


class Adafactor(Optimizer):
    """Adafactor, Keras 3's math and defaults (lr 0.001, beta_2_decay -0.8, ...).

    Args:
      learning_rate: default 0.001; the step is ``max(epsilon_2, rms(w)) *
        min(learning_rate, 1 / sqrt(t))``.
      beta_2_decay: default -0.8.
      epsilon_1: added to the squared gradients; default 1e-30.
      epsilon_2: the smallest weight scale; default 1e-3.
      clip_threshold: default 1.0.
      relative_step: default True (Keras 3's update is the same either way: it
        takes ``min(learning_rate, 1 / sqrt(t))`` in both cases).
      **kwargs: the options of ``Optimizer``.
    """

    _hyperparameters = ("beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold", "relative_step")

    def __init__(
        self,
        learning_rate: float | Callable[[Any], Any] = 0.001,
        beta_2_decay: float = -0.8,
        epsilon_1: float = 1e-30,
        epsilon_2: float = 1e-3,
        clip_threshold: float = 1.0,
        relative_step: bool = True,
        **kwargs: Any,
    ):
        super().__init__(learning_rate, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = relative_step

    def update_rule(self, learning_rate: Any):
        return _transforms.keras_adafactor(
            learning_rate, self.beta_2_decay, self.epsilon_1, self.epsilon_2, self.clip_threshold
        )


_BY_NAME: dict[str, type[Optimizer]] = {
    cls.__name__.lower(): cls
    for cls in (
        SGD,
        Adam,
        AdamW,
        RMSprop,
        Adagrad,
        Nadam,
        Adamax,
        Adadelta,
        Ftrl,
        Lion,
        Lamb,
        Adafactor,
    )
}


def get(identifier: Any) -> Optimizer | optax.GradientTransformation | None:
    """Returns an optimizer for a Keras name, config, class, instance or optax transformation.

    Args:
      identifier: a Keras name (``"adam"``, ``"sgd"``, ``"rmsprop"``, ``"adamw"``,
        ``"adagrad"``, ``"nadam"``, ``"adamax"``, ``"adadelta"``, ``"ftrl"``,
        ``"lion"``, ``"lamb"``, ``"adafactor"``; case-insensitive, Keras's
        defaults), a config dict ``{"class_name": "Adam", "config": {...}}`` (as
        ``keras.optimizers.serialize`` writes), a phalanx optimizer class or
        instance, any ``optax.GradientTransformation`` (returned unchanged), or
        None (returned, as Keras).

    Returns:
      A phalanx ``Optimizer`` (call ``to_optax()``), the optax transformation given, or None.

    Raises:
      UnknownNameError: an unknown name (the message lists the known ones and the closest).
      CompileArgumentError: something that is not an optimizer.

    Examples:
      >>> get("adam")
      Adam(learning_rate=0.001)
    """
    if identifier is None or isinstance(identifier, Optimizer | optax.GradientTransformation):
        return identifier
    if isinstance(identifier, dict):
        return _from_dict(identifier)
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


def _from_dict(config: dict) -> Optimizer:
    """An optimizer from Keras's serialized form ``{"class_name": ..., "config": ...}``."""
    name = config.get("class_name")
    cls = _BY_NAME.get(name.lower()) if isinstance(name, str) else None
    if cls is None:
        raise UnknownNameError.of(
            "optimizer",
            str(name),
            _BY_NAME,
            hint='A config dict is {"class_name": "Adam", "config": {"learning_rate": 1e-3}}.',
        )
    return cls.from_config(config.get("config") or {})
