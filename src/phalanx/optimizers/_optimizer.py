"""The base of phalanx's optimizers: Keras 3's arguments and options, optax underneath.

An optimizer is a configuration object; ``to_optax()`` builds
``optax.inject_hyperparams(factory)(learning_rate=...)`` where the factory
wraps the optimizer's update rule in Keras's order (``_options``): gradient
clipping (``clipnorm`` per tensor, ``clipvalue``, or ``global_clipnorm``),
weight decay before the update, the update rule (learning rate included),
gradient accumulation, and the weights' moving average (EMA). The learning
rate therefore lives in the optimizer state (see ``_learning_rate``).

Keras's bookkeeping follows Keras 3: names made unique per class (``adam``,
``adam_1``, as ``keras.optimizers.Adam().name``), ``get_config``/``from_config``
with Keras's keys, ``iterations`` (read from the model the optimizer was
compiled into), ``exclude_from_weight_decay``, and a ``learning_rate`` that is a
number, a schedule ``step -> rate`` or a function of no arguments (called when
the step is traced, as Keras's JAX backend does).
"""

from __future__ import annotations

import inspect
import math
import re
import threading
import warnings
import weakref
from typing import Any

import optax

from ..errors import LearningRateValueError, OptimizerArgumentError, StatefulAPIError
from . import _options, _transforms, schedules
from ._keras_scalars import KerasInt
from ._schedules import LearningRateSchedule

_names_lock = threading.Lock()
_name_counts: dict[str, int] = {}


def _snake_case(name: str) -> str:
    """Keras's ``to_snake_case``: ``"AdamW"`` -> ``"adam_w"``, ``"RMSprop"`` -> ``"rm_sprop"``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def auto_name(cls_name: str) -> str:
    """A name unique in this process, as Keras's ``auto_name``: ``adam``, then ``adam_1``."""
    prefix = _snake_case(cls_name)
    with _names_lock:
        count = _name_counts.get(prefix, 0)
        _name_counts[prefix] = count + 1
    return prefix if count == 0 else f"{prefix}_{count}"


def reset_names() -> None:
    """Forgets the names given so far: the next ``Adam()`` is ``adam`` again (``clear_session``)."""
    with _names_lock:
        _name_counts.clear()


def _takes_no_argument(fn: Any) -> bool:
    """A learning rate callable Keras calls without arguments (not a schedule of the step)."""
    if isinstance(fn, LearningRateSchedule):
        return False
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    )


class Optimizer:
    """Base class of phalanx optimizers: Keras 3's arguments, optax underneath.

    Args:
      learning_rate: a float; a schedule ``step -> lr`` (a phalanx
        ``optimizers.schedules`` object or any optax schedule), evaluated at every
        step; or a function of no arguments, called when the step is compiled
        (Keras's JAX backend traces it the same way).
      weight_decay: ``w -= lr * weight_decay * w`` before each update, as Keras;
        None for none. ``exclude_from_weight_decay`` leaves weights out.
      clipnorm: clip each gradient tensor to this L2 norm.
      clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
      global_clipnorm: clip all gradients together to this global L2 norm.
      use_ema: keep an exponential moving average of the weights; ``fit`` ends
        with the weights set to it, as Keras.
      ema_momentum: ``average = ema_momentum * average + (1 - ema_momentum) * w``.
      ema_overwrite_frequency: every this many iterations, set the weights to
        their average; None: only at the end of ``fit``.
      loss_scale_factor: not supported (``mixed_float16`` adds a
        ``LossScaleOptimizer``); only None.
      gradient_accumulation_steps: update every this many steps (>= 2), with the
        mean of their gradients; ``iterations`` counts updates.
      name: default the class's name in snake case, made unique (``adam_1``).

    Raises:
      OptimizerArgumentError: more than one of ``clipnorm``, ``clipvalue`` and
        ``global_clipnorm``; an option out of range; an unknown argument.
    """

    def __init__(
        self,
        learning_rate: Any,
        *,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        loss_scale_factor: float | None = None,
        gradient_accumulation_steps: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ):
        cls = type(self).__name__
        if kwargs.pop("decay", None) is not None:
            warnings.warn(
                "Argument `decay` is no longer supported and will be ignored.", stacklevel=3
            )
        if kwargs:
            raise OptimizerArgumentError(
                f"{cls}: argument(s) not recognized: {kwargs}. Keras 3's optimizers take "
                "learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, "
                "ema_momentum, ema_overwrite_frequency, gradient_accumulation_steps, name and "
                "their own hyperparameters."
            )
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise OptimizerArgumentError(
                "Only one of clipnorm, clipvalue and global_clipnorm can be set, got "
                f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}."
            )
        _check_options(
            cls, use_ema, ema_momentum, ema_overwrite_frequency, gradient_accumulation_steps
        )
        if loss_scale_factor is not None:
            raise OptimizerArgumentError(
                f"{cls}(loss_scale_factor={loss_scale_factor!r}) is not supported: phalanx "
                "scales the loss for mixed_float16 itself (compile wraps the optimizer in "
                "mixed_precision.LossScaleOptimizer, dynamic scaling). Leave it None, or wrap "
                "it yourself: LossScaleOptimizer(optimizer, initial_scale=...)."
            )
        if not callable(learning_rate):
            learning_rate = _constant_rate(cls, learning_rate)
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.use_ema = use_ema
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.name = auto_name(cls) if name is None else name
        self._exclude: re.Pattern | None = None
        self._tx: optax.GradientTransformation | None = None
        self._model: Any = None  # weakref to the model compiled with this optimizer

    # -- the update -------------------------------------------------------------------

    def direction(self) -> optax.GradientTransformation:
        """The update direction before the learning rate (``update_rule`` scales it)."""
        raise NotImplementedError

    def update_rule(self, learning_rate: Any) -> optax.GradientTransformation:
        """The update, learning rate included: ``-learning_rate * direction()`` by default."""
        return optax.chain(self.direction(), optax.scale_by_learning_rate(learning_rate))

    def _clipping(self) -> list[optax.GradientTransformation]:
        # Keras: `if self.clipnorm and self.clipnorm > 0`, so 0 is no clipping.
        if self.clipnorm and self.clipnorm > 0:
            return [_transforms.clip_by_norm(self.clipnorm)]
        if self.global_clipnorm and self.global_clipnorm > 0:
            return [optax.clip_by_global_norm(self.global_clipnorm)]
        if self.clipvalue and self.clipvalue > 0:
            return [optax.clip(self.clipvalue)]
        return []

    def _chain(self, learning_rate) -> optax.GradientTransformation:
        rule = self.update_rule(learning_rate)
        if self.weight_decay is not None:
            rule = _options.decay_weights(rule, learning_rate, self.weight_decay, self._exclude)
        tx = optax.chain(*self._clipping(), rule)
        steps = self.gradient_accumulation_steps
        if steps:
            tx = _options.accumulate_gradients(tx, steps)
        if self.use_ema:
            tx = _options.moving_average(
                tx, self.ema_momentum, self.ema_overwrite_frequency, steps or 1
            )
        return tx

    def _injected_rate(self) -> Any:
        lr = self.learning_rate
        if callable(lr) and _takes_no_argument(lr):
            return lambda count: lr()  # Keras calls it without the step
        return lr

    def to_optax(self) -> optax.GradientTransformation:
        """Returns the optax transformation, with the learning rate in its state.

        The state is an ``optax.InjectStatefulHyperparamsState`` whose
        ``hyperparams["learning_rate"]`` is a float32 scalar (see
        ``get_learning_rate``/``set_learning_rate``).
        """
        if self._tx is None:
            inject = optax.inject_hyperparams(self._chain, hyperparam_dtype="float32")
            self._tx = inject(learning_rate=self._injected_rate())
        return self._tx

    def init(self, params: Any) -> Any:
        """``to_optax().init(params)``: the optimizer state for ``params``."""
        return self.to_optax().init(params)

    def update(self, updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        """``to_optax().update(...)``: the parameter updates and the new state."""
        return self.to_optax().update(updates, state, params)

    def stateless_apply(self, optimizer_variables: Any, grads: Any, trainable_variables: Any):
        """Keras 3's ``stateless_apply``: ``(trainable_variables, optimizer_variables)`` after
        one update by ``grads``; ``optimizer_variables`` from ``init(trainable_variables)``."""
        updates, optimizer_variables = self.update(grads, optimizer_variables, trainable_variables)
        return optax.apply_updates(trainable_variables, updates), optimizer_variables

    def learning_rate_at(self, step: Any) -> Any:
        """The learning rate the update at ``step`` (Keras's ``_iterations``) uses."""
        lr = self.learning_rate
        if not callable(lr):
            return lr
        return lr() if _takes_no_argument(lr) else lr(step)

    # -- Keras's bookkeeping ----------------------------------------------------------

    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        """Leaves the weights whose name (``"bias"``, ``"gamma"``) matches out of weight decay.

        Args:
          var_list: not supported (phalanx's weights are not variables the optimizer
            can recognise); name them in ``var_names``.
          var_names: strings; a weight is excluded when one of them occurs in its
            name (a regular expression search, as Keras).

        Raises:
          OptimizerArgumentError: ``var_list`` given, or the optimizer is in use.
        """
        if var_list:
            raise OptimizerArgumentError(
                "exclude_from_weight_decay(var_list=...) is not supported: give the weights' "
                "names instead, e.g. exclude_from_weight_decay(var_names=['bias'])."
            )
        if self._tx is not None:
            raise OptimizerArgumentError(
                "`exclude_from_weight_decay()` can only be configured before the optimizer "
                "is built (before compile/to_optax()); make a new optimizer."
            )
        self._exclude = re.compile("|".join(sorted(set(var_names)))) if var_names else None

    def _bind_model(self, model: Any) -> None:
        """``compile`` records the model whose state counts this optimizer's iterations."""
        self._model = weakref.ref(model)

    @property
    def iterations(self) -> KerasInt:
        """Optimizer updates so far, read from the model this optimizer was compiled into."""
        model = self._model() if self._model is not None else None
        if model is None:
            raise StatefulAPIError(
                _STATEFUL_MESSAGE.format(cls=type(self).__name__, name="iterations")
            )
        return KerasInt(model.optimizer.iterations)

    def get_config(self) -> dict:
        """Returns the constructor arguments with Keras 3's keys (``from_config`` takes them)."""
        lr = self.learning_rate
        if hasattr(lr, "get_config"):
            lr = {
                "module": "keras.optimizers.schedules",
                "class_name": type(lr).__name__,
                "config": lr.get_config(),
                "registered_name": None,
            }
        config = {
            "name": self.name,
            "learning_rate": lr,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
            "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }
        config.update({k: getattr(self, k) for k in self._hyperparameters})
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: Any = None) -> Optimizer:
        """Makes the optimizer ``get_config`` describes (a schedule's dict is rebuilt)."""
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            schedule = getattr(schedules, lr.get("class_name", ""), None)
            if schedule is None:
                raise OptimizerArgumentError(
                    f"{cls.__name__}.from_config: unknown learning-rate schedule "
                    f"{lr.get('class_name')!r}; phalanx.optimizers.schedules has "
                    f"{', '.join(schedules.__all__)}."
                )
            args = dict(lr.get("config", {}))
            if "name" not in inspect.signature(schedule).parameters:
                args.pop("name", None)  # Keras's schedules have a name; these may not
            config["learning_rate"] = schedule(**args)
        return cls(**config)

    #: The subclass's own constructor arguments, for ``get_config``.
    _hyperparameters: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.learning_rate!r})"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_model"] = None  # a weak reference does not pickle
        state["_tx"] = None
        return state

    def __getattr__(self, name: str) -> Any:
        if name in _KERAS_STATEFUL:
            raise StatefulAPIError(_STATEFUL_MESSAGE.format(cls=type(self).__name__, name=name))
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


_STATEFUL_MESSAGE = (
    "{cls}.{name}: phalanx optimizers keep no state in the object (JAX steps are pure "
    "functions); the optimizer state is a value you carry. Keras's apply_gradients becomes: "
    "opt_state = optimizer.init(params); in the step updates, opt_state = "
    "optimizer.update(grads, opt_state, params); params = optax.apply_updates(params, "
    "updates). Count steps yourself (iterations), or read optimizer.iterations once the "
    "optimizer was compiled into a model. examples/custom_loop.py shows a whole loop."
)

# "iterations" too: when the property raises (no model), Python asks __getattr__ again.
_KERAS_STATEFUL = frozenset(
    {"apply_gradients", "apply", "minimize", "iterations", "variables", "build"}
)


def _check_options(cls: str, use_ema, ema_momentum, ema_overwrite_frequency, accumulation) -> None:
    """Keras's checks of the EMA and accumulation options, with Keras's words."""
    if accumulation is not None and (
        isinstance(accumulation, bool) or not isinstance(accumulation, int) or accumulation < 2
    ):
        raise OptimizerArgumentError(
            "`gradient_accumulation_steps` must be an integer >= 2. Received: "
            f"gradient_accumulation_steps={accumulation!r} ({cls}); None for no accumulation."
        )
    if not use_ema:
        return
    if not isinstance(ema_momentum, int | float) or not 0 <= ema_momentum <= 1:
        raise OptimizerArgumentError(
            f"`ema_momentum` must be in the range [0, 1]. Received: ema_momentum={ema_momentum}"
        )
    if ema_overwrite_frequency is not None and (
        isinstance(ema_overwrite_frequency, bool)
        or not isinstance(ema_overwrite_frequency, int)
        or ema_overwrite_frequency < 1
    ):
        raise OptimizerArgumentError(
            "`ema_overwrite_frequency` must be an integer >= 1 or None. Received: "
            f"ema_overwrite_frequency={ema_overwrite_frequency}"
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
