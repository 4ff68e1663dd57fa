"""A ``.keras`` file's ``compile_config``: written by ``model.save``, read by ``load_model``.

Keras 3 stores ``compile``'s arguments in ``config.json`` and ``load_model``
compiles the model it returns with them, so that ``load_model(path).evaluate(x, y)``
works as after ``compile``. phalanx does the same both ways: it writes Keras's
layout (an optimizer as ``{"module", "class_name", "config"}``, losses and
metrics as names or as the same kind of dict) for what Keras can read back,
and reads what Keras writes for the optimizers, losses and metrics phalanx has.
The optimizer's state (moments, step count) is in ``model.weights.h5``
(`phalanx.saving._keras_optimizer`).
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

from .. import losses, metrics
from ..errors import KerasFileError
from ..mixed_precision import _policy
from ..optimizers import _optimizers

# Keras optimizer arguments phalanx has no counterpart for, with the values that
# mean "off"; a file with another value is not compiled (it would train otherwise).
_KERAS_ONLY_OFF = {"loss_scale_factor": (None,)}


# Where a compile config's class names are looked up, by kind.
_NAMESPACES = {"losses": losses, "metrics": metrics}


def compile_config(model: Any) -> dict | None:
    """Keras's ``compile_config`` for ``model``; None if it was not compiled by the user.

    Arguments Keras could not rebuild (an optax transformation, a function of
    your own, a learning-rate schedule) leave the file without one: the model
    then loads uncompiled, and ``compile`` is called again, as in Keras.
    """
    args = model._compile_args
    if args is None or model._predict_only:
        return None
    try:
        return {
            "optimizer": _optimizer_entry(args["optimizer"]),
            "loss": _entry(args["loss"], "keras.losses"),
            "loss_weights": _plain(args["loss_weights"]),
            "metrics": None
            if args["metrics"] is None
            else [_entry(m, "keras.metrics") for m in args["metrics"]],
            "weighted_metrics": None
            if args.get("weighted_metrics") is None
            else [_entry(m, "keras.metrics") for m in args["weighted_metrics"]],
            "run_eagerly": args.get("run_eagerly", False),
            "steps_per_execution": args["steps_per_execution"],
            "jit_compile": args.get("jit_compile", True),
        }
    except _NotSerializable:
        return None


def compile_from_config(
    model: Any, config: dict, path: str | None = None, loss_scaled: bool = False
) -> None:
    """Compiles ``model`` with a ``compile_config``: a file's at ``path`` (warns and leaves it
    uncompiled if it cannot), else ``Model.compile_from_config``'s (raises); ``loss_scaled``:
    the file's model is ``mixed_float16``, whose ``compile`` Keras makes wrap the optimizer
    in a ``LossScaleOptimizer``, as phalanx's does under that global policy."""
    if not isinstance(config, dict):
        raise KerasFileError(
            "compile_from_config takes a dict as get_compile_config() returns it; got "
            f"{type(config).__name__}."
        )
    try:
        optimizer = _optimizer_from(config.get("optimizer") or "rmsprop")
        if loss_scaled and not isinstance(optimizer, _policy.LossScaleOptimizer):
            optimizer = _policy.LossScaleOptimizer(optimizer)
        kwargs = {
            "optimizer": optimizer,
            "loss": _object_from(config.get("loss"), "losses"),
            "metrics": _metrics_from(config.get("metrics")),
            "weighted_metrics": _metrics_from(config.get("weighted_metrics")),
            "loss_weights": config.get("loss_weights"),
            "steps_per_execution": int(config.get("steps_per_execution") or 1),
        }
    except _NotSerializable as e:
        if path is None:
            raise KerasFileError(
                f"compile_from_config cannot compile with {config!r}: {e}. Give names or "
                "entries of phalanx's optimizers, losses and metrics, or call compile()."
            ) from None
        warnings.warn(
            f"{path!r}: the model was loaded uncompiled: {e}. Call model.compile(...) "
            "before fit or evaluate.",
            UserWarning,
            stacklevel=3,
        )
        return
    model.compile(**kwargs)


class _NotSerializable(Exception):
    pass


# -- writing ----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    raise _NotSerializable(f"{type(value).__name__} {value!r}")


def _optimizer_entry(optimizer: Any) -> Any:
    if isinstance(optimizer, str):
        return optimizer
    if isinstance(optimizer, _policy.LossScaleOptimizer):  # Keras's entry nests the inner one
        config = {
            "name": "loss_scale_optimizer",
            "inner_optimizer": _optimizer_entry(optimizer.inner_optimizer),
            "initial_scale": optimizer.initial_scale,
            "dynamic_growth_steps": optimizer.dynamic_growth_steps,
        }
        return _keras_optimizer_entry("LossScaleOptimizer", config)
    get_config = getattr(optimizer, "get_config", None)
    if get_config is None:  # an optax transformation: code, not configuration
        raise _NotSerializable(type(optimizer).__name__)
    return _keras_optimizer_entry(type(optimizer).__name__, _plain(get_config()))


def _keras_optimizer_entry(class_name: str, config: dict) -> dict:
    return {
        "module": "keras.optimizers",
        "class_name": class_name,
        "config": config,
        "registered_name": None,
    }


def _entry(obj: Any, module: str) -> Any:
    """A loss or metric as Keras writes it: its name, or its class and arguments."""
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, list | tuple):
        return [_entry(o, module) for o in obj]
    if isinstance(obj, dict):
        return {k: _entry(v, module) for k, v in obj.items()}
    cls = type(obj)
    if not cls.__module__.startswith("phalanx.") or inspect.isfunction(obj):
        raise _NotSerializable(getattr(obj, "__name__", cls.__name__))
    config = {}
    for param in inspect.signature(cls.__init__).parameters.values():
        if param.name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        if param.name == "reduction":  # phalanx reduces itself; Keras's default
            config["reduction"] = "sum_over_batch_size"
        elif hasattr(obj, param.name):
            config[param.name] = _plain(getattr(obj, param.name))
        elif param.default is param.empty:
            raise _NotSerializable(cls.__name__)
    return {"module": module, "class_name": cls.__name__, "config": config}


# -- reading ----------------------------------------------------------------------------


def _optimizer_from(entry: Any) -> Any:
    if isinstance(entry, str):
        return _optimizers.get(entry)
    if isinstance(entry, dict) and entry.get("class_name") == "LossScaleOptimizer":
        return _loss_scale_optimizer_from(dict(entry.get("config") or {}))
    cls = _class(entry, _optimizers, _optimizers.Optimizer)
    config = dict(entry.get("config") or {})
    for key, off in _KERAS_ONLY_OFF.items():
        if key not in config:
            continue
        value = config.pop(key)
        if off is not None and value not in off:
            raise _NotSerializable(f"phalanx optimizers have no {key}={value!r}")
    return cls.from_config(_accepted(cls, config, entry["class_name"]))


def _loss_scale_optimizer_from(config: dict) -> Any:
    """Keras's ``LossScaleOptimizer`` entry (its ``inner_optimizer`` an entry too)."""
    config.pop("name", None)
    inner = config.pop("inner_optimizer", None)
    if inner is None:
        raise _NotSerializable("its LossScaleOptimizer names no inner_optimizer")
    kwargs = {k: config.pop(k) for k in ("initial_scale", "dynamic_growth_steps") if k in config}
    if config:
        raise _NotSerializable(f"phalanx's LossScaleOptimizer takes no {sorted(config)}")
    return _policy.LossScaleOptimizer(_optimizer_from(inner), **kwargs)


def _object_from(entry: Any, kind: str) -> Any:
    if entry is None or isinstance(entry, str):
        return entry
    if isinstance(entry, list):
        return [_object_from(e, kind) for e in entry]
    if isinstance(entry, dict) and "class_name" not in entry:  # a loss per named output
        return {k: _object_from(v, kind) for k, v in entry.items()}
    namespace = _NAMESPACES[kind]
    cls = _class(entry, namespace, object)
    config = dict(entry.get("config") or {})
    reduction = config.pop("reduction", "sum_over_batch_size")
    kwargs = _accepted(cls, config, entry["class_name"])
    if kind == "losses" and reduction not in ("none", None):  # Keras 3's reductions: all taken
        kwargs["reduction"] = reduction
    elif reduction not in ("sum_over_batch_size", None):
        raise _NotSerializable(f"{entry['class_name']}(reduction={reduction!r}) is not read")
    return cls(**kwargs)


def _metrics_from(entry: Any) -> Any:
    if entry is None:
        return None
    if isinstance(entry, dict) and "class_name" not in entry:
        return {k: _metrics_from(v) for k, v in entry.items()}
    return [_object_from(m, "metrics") for m in entry]


def _class(entry: Any, namespace: Any, base: type) -> type:
    name = entry.get("class_name") if isinstance(entry, dict) else None
    cls = getattr(namespace, name, None) if isinstance(name, str) else None
    if not (inspect.isclass(cls) and issubclass(cls, base)):
        raise _NotSerializable(f"phalanx has no {name!r}")
    return cls


# Keras loss and metric arguments phalanx does not take, at the values that change nothing.
_KERAS_DEFAULTS = {"ignore_class": None, "axis": -1, "label_smoothing": 0.0}


def _accepted(cls: type, config: dict, name: str) -> dict:
    """The config's arguments ``cls`` takes; Keras's bookkeeping keys (dtype) are dropped."""
    # **kwargs: the optimizers' clipnorm/weight_decay/name, keyword-only in their base class
    names = {
        n for c in cls.__mro__ if "__init__" in vars(c) for n in inspect.signature(c).parameters
    }
    kwargs = {k: v for k, v in config.items() if k in names}
    unknown = sorted(
        k
        for k, v in config.items()
        if k not in kwargs
        and k not in ("dtype", "registered_name")
        and not (k in _KERAS_DEFAULTS and v == _KERAS_DEFAULTS[k])
    )
    if unknown:
        raise _NotSerializable(f"phalanx's {name} takes no {', '.join(unknown)}")
    return kwargs
