"""Keras 3's weight constraints and where ``fit`` applies them.

A constraint is a function ``w -> projected w`` (``keras/src/constraints``):
``MaxNorm``, ``MinMaxNorm``, ``NonNeg``, ``UnitNorm``, or a ``Constraint``
subclass of one's own. A layer takes them as ``kernel_constraint=``,
``bias_constraint=``, ... and ``add_weight(constraint=)``; Keras 3's optimizer
(``BaseOptimizer.apply``) assigns ``variable.constraint(variable)`` to each
trainable variable right after every gradient update, and so does phalanx,
inside the compiled step (``phalanx.train._step.apply_gradients`` and an
overridden step's ``optimizer.stateless_apply``): frozen layers' weights are
not trained, so not projected, as in Keras.

A layer names its constrained weights in ``_weight_constraint_paths``
(``(("kernel_constraint", ("linear", "kernel")), ...)``, the attribute that
holds the constraint and the path of the weight in the layer);
``add_weight(constraint=)`` keeps it in the weight's metadata.
`constrained_paths` finds them all in a model, by the weight's path in
the model's state; `apply` projects a state's weights at those paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ..errors import ConstraintError

#: Keras's ``backend.epsilon()``, which its norms add to the divisor.
EPSILON = 1e-7


def _axis(name: str, axis: Any) -> Any:
    ok = isinstance(axis, int) and not isinstance(axis, bool)
    if isinstance(axis, list | tuple):
        ok = all(isinstance(a, int) and not isinstance(a, bool) for a in axis)
        axis = tuple(axis)
    if not ok:
        raise ConstraintError(
            f"{name}: axis must be an int or a list of ints, got {axis!r} "
            f"({type(axis).__name__}); e.g. {name}(axis=0) for a Dense kernel, "
            f"{name}(axis=[0, 1, 2]) for a Conv2D kernel."
        )
    return axis


def _number(name: str, what: str, value: Any) -> Any:
    if isinstance(value, bool | str | bytes) or not isinstance(value, int | float | np.number):
        raise ConstraintError(
            f"{name}: {what} must be a number, got {value!r} ({type(value).__name__}); "
            f"e.g. {name}({what}=2.0)."
        )
    return value


def _norms(w: jax.Array, axis: Any) -> jax.Array:
    return jnp.sqrt(jnp.sum(jnp.square(w), axis=axis, keepdims=True))


class Constraint:
    """Keras's ``Constraint`` base: ``__call__(w)`` returns ``w`` projected (here: unchanged).

    Subclass it and override ``__call__`` (a pure function of the weight,
    traced inside the compiled step) and ``get_config``.

    Examples:
      >>> import jax.numpy as jnp
      >>> class Clip(Constraint):
      ...     def __call__(self, w):
      ...         return jnp.clip(w, -1.0, 1.0)
      >>> Clip()(jnp.array([-3.0, 0.5])).tolist()
      [-1.0, 0.5]
    """

    def __call__(self, w: Any) -> Any:
        return w

    def get_config(self) -> dict:
        """The constraint's arguments (``{}`` for the base)."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        """The constraint ``get_config()`` describes."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class MaxNorm(Constraint):
    """Scales each slice along ``axis`` whose L2 norm exceeds ``max_value`` back to it.

    ``w * clip(norm, 0, max_value) / (1e-7 + norm)``, as Keras.

    Args:
      max_value: the largest norm.
      axis: the axis (or axes) of the norm: 0 for a Dense kernel ``(in, out)``
        (each unit's incoming weights), ``[0, 1, 2]`` for a Conv2D kernel.

    Examples:
      >>> import jax.numpy as jnp
      >>> MaxNorm(2.0)(jnp.array([[3.0], [0.0]])).round(4).tolist()
      [[2.0], [0.0]]
    """

    def __init__(self, max_value: float = 2, axis: Any = 0):
        self.max_value = _number("MaxNorm", "max_value", max_value)
        self.axis = _axis("MaxNorm", axis)

    def __call__(self, w: Any) -> Any:
        w = jnp.asarray(w)
        norms = _norms(w, self.axis)
        desired = jnp.clip(norms, 0, self.max_value)
        return w * (desired / (EPSILON + norms))

    def get_config(self) -> dict:
        """``{"max_value", "axis"}``."""
        return {"max_value": self.max_value, "axis": _listed(self.axis)}


class NonNeg(Constraint):
    """Sets the negative weights to 0.

    Examples:
      >>> import jax.numpy as jnp
      >>> NonNeg()(jnp.array([-1.0, 2.0])).tolist()
      [0.0, 2.0]
    """

    def __call__(self, w: Any) -> Any:
        return jnp.maximum(jnp.asarray(w), 0)


class UnitNorm(Constraint):
    """Divides each slice along ``axis`` by its L2 norm (``w / (1e-7 + norm)``, as Keras).

    Args:
      axis: the axis (or axes) of the norm, as `MaxNorm`'s.

    Examples:
      >>> import jax.numpy as jnp
      >>> [round(float(v), 4) for v in UnitNorm()(jnp.array([[3.0], [4.0]]))[:, 0]]
      [0.6, 0.8]
    """

    def __init__(self, axis: Any = 0):
        self.axis = _axis("UnitNorm", axis)

    def __call__(self, w: Any) -> Any:
        w = jnp.asarray(w)
        return w / (EPSILON + _norms(w, self.axis))

    def get_config(self) -> dict:
        """``{"axis"}``."""
        return {"axis": _listed(self.axis)}


class MinMaxNorm(Constraint):
    """Moves each slice's L2 norm along ``axis`` into ``[min_value, max_value]`` at ``rate``.

    The new norm is ``rate * clip(norm, min_value, max_value) + (1 - rate) * norm``.

    Args:
      min_value: the smallest norm.
      max_value: the largest norm.
      rate: 1.0 enforces the bounds at once; below 1 moves toward them each step.
      axis: the axis (or axes) of the norm, as `MaxNorm`'s.

    Examples:
      >>> import jax.numpy as jnp
      >>> [round(float(v), 4) for v in MinMaxNorm(1.0, 2.0)(jnp.array([[0.3], [0.4]]))[:, 0]]
      [0.6, 0.8]
    """

    def __init__(
        self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0, axis: Any = 0
    ):
        self.min_value = _number("MinMaxNorm", "min_value", min_value)
        self.max_value = _number("MinMaxNorm", "max_value", max_value)
        self.rate = _number("MinMaxNorm", "rate", rate)
        self.axis = _axis("MinMaxNorm", axis)

    def __call__(self, w: Any) -> Any:
        w = jnp.asarray(w)
        norms = _norms(w, self.axis)
        desired = (
            self.rate * jnp.clip(norms, self.min_value, self.max_value) + (1 - self.rate) * norms
        )
        return w * (desired / (EPSILON + norms))

    def get_config(self) -> dict:
        """``{"min_value", "max_value", "rate", "axis"}``."""
        return {
            "min_value": self.min_value,
            "max_value": self.max_value,
            "rate": self.rate,
            "axis": _listed(self.axis),
        }


def _listed(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_CLASSES = (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
# Keras's ALL_OBJECTS_DICT: the class names and their snake_case forms (case matters).
_BY_NAME: dict[str, type[Constraint]] = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({_snake(c.__name__): c for c in _CLASSES})


def _by_name(name: Any, identifier: Any) -> type[Constraint]:
    if name not in _BY_NAME:
        raise ConstraintError(
            f"Could not interpret constraint identifier: {identifier!r}. Known names: "
            f"{sorted(_BY_NAME)} (or a phalanx.constraints.Constraint, or a function w -> w)."
        )
    return _BY_NAME[name]


def get(identifier: Any) -> Any:
    """Keras's ``constraints.get``: a constraint from a name, config dict, class or instance.

    Args:
      identifier: None; a name (``"max_norm"``, ``"MaxNorm"``, ``"non_neg"``,
        ``"unit_norm"``, ``"min_max_norm"``), built with Keras's defaults; a
        ``serialize`` dict; a ``Constraint`` class or instance; or a function ``w -> w``.

    Returns:
      The constraint (a callable), or None for None.

    Raises:
      ConstraintError: an unknown name or config, or something not callable.

    Examples:
      >>> get("max_norm")
      MaxNorm(max_value=2, axis=0)
      >>> get({"class_name": "UnitNorm", "config": {"axis": 1}})
      UnitNorm(axis=1)
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    obj = _by_name(identifier, identifier) if isinstance(identifier, str) else identifier
    if isinstance(obj, type):
        return obj()
    if callable(obj):
        return obj
    raise ConstraintError(
        f"Could not interpret constraint identifier: {identifier!r} "
        f"({type(identifier).__name__}). Use phalanx.constraints.MaxNorm/MinMaxNorm/NonNeg/"
        "UnitNorm, a name ('max_norm'), or a function w -> projected w."
    )


def serialize(constraint: Any) -> dict | None:
    """Keras's ``constraints.serialize``: ``{"module", "class_name", "config", "registered_name"}``.

    Examples:
      >>> serialize(MaxNorm(3.0))["config"]
      {'max_value': 3.0, 'axis': 0}
    """
    if constraint is None:
        return None
    if not isinstance(constraint, Constraint):
        raise ConstraintError(
            f"Only a phalanx.constraints.Constraint can be serialized, got {constraint!r} "
            f"({type(constraint).__name__}): a function holds code, which Keras files never do."
        )
    name = type(constraint).__name__
    known = _BY_NAME.get(name) is type(constraint)
    return {
        "module": "keras.constraints" if known else type(constraint).__module__,
        "class_name": name,
        "config": constraint.get_config(),
        "registered_name": None if known else name,
    }


def deserialize(config: Any, custom_objects: dict | None = None) -> Constraint:
    """Keras's ``constraints.deserialize``: the constraint a ``serialize`` dict describes.

    Args:
      config: a ``serialize`` dict (or a name).
      custom_objects: ``{class name: class}`` for constraints of one's own.

    Examples:
      >>> deserialize({"class_name": "NonNeg", "config": {}})
      NonNeg()
    """
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ConstraintError(
            f"A constraint config is a dict with 'class_name' and 'config', got {config!r}; "
            "e.g. {'class_name': 'MaxNorm', 'config': {'max_value': 2, 'axis': 0}}."
        )
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _by_name(name, config)
    args = dict(config.get("config") or {})
    try:
        return cls.from_config(args)
    except TypeError as error:
        raise ConstraintError(f"The {name} config {args!r} does not fit: {error}") from None


# -- where fit applies them ---------------------------------------------------------------


def resolve(layer: str, **constraints: Any) -> dict[str, Any]:
    """``{argument: constraint}`` of a layer's ``*_constraint=`` arguments, resolved by ``get``.

    Raises:
      ConstraintError: one that ``get`` cannot interpret, naming the layer and argument.
    """
    out = {}
    for key, value in constraints.items():
        try:
            out[key] = get(value)
        except ConstraintError as error:
            raise ConstraintError(f"{layer}: {key}={value!r}: {error}") from None
    return out


def _layer_constraints(node: Any) -> list[tuple[Any, Any]]:
    """``(variable, constraint)`` pairs of one layer: its arguments' and add_weight's."""
    pairs = []
    for attr, path in getattr(node, "_weight_constraint_paths", ()):
        constraint = getattr(node, attr, None)
        target = node
        for part in path:
            target = getattr(target, part, None)
        if constraint is not None and isinstance(target, nnx.Variable):
            pairs.append((target, constraint))
    for value in vars(node).values():
        if isinstance(value, nnx.Variable):
            constraint = value.get_metadata().get("constraint")
            if constraint is not None:
                pairs.append((value, constraint))
    return pairs


def constrained_paths(module: nnx.Module) -> tuple[tuple[tuple, Any], ...]:
    """``((path of the weight in the module's state, constraint), ...)`` of every layer.

    Static (found at compile time): the compiled step projects the weights at these paths.
    """
    paths = {id(v): tuple(p) for p, v in nnx.iter_graph(module) if isinstance(v, nnx.Variable)}
    found: dict[tuple, Any] = {}
    for _, node in nnx.iter_graph(module):
        if isinstance(node, nnx.Module):
            for variable, constraint in _layer_constraints(node):
                found.setdefault(paths[id(variable)], constraint)
    return tuple(found.items())


def _leaf_path(keys: Sequence[Any]) -> tuple:
    out = []
    for k in keys:
        if isinstance(k, jax.tree_util.GetAttrKey) and k.name == "value":
            continue
        out.append(getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))))
    return tuple(out)


def apply(constraints: Sequence[tuple[tuple, Any]], params: Any, prefix: tuple = ()) -> Any:
    """``params`` with each weight at a constrained path projected (Keras: after each update).

    Args:
      constraints: `constrained_paths`' pairs.
      params: the trained weights (an ``nnx.State`` or the same tree of arrays).
      prefix: the path of ``params`` in the model's state (one part of a model).
    """
    if not constraints:
        return params
    by_path = dict(constraints)

    def project(keys, w):
        constraint = by_path.get(prefix + _leaf_path(keys))
        if constraint is None:
            return w
        return jnp.asarray(constraint(w), jnp.result_type(w)).reshape(jnp.shape(w))

    return jax.tree_util.tree_map_with_path(project, params)
