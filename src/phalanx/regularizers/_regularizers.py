"""Keras's weight and activity regularizers (``L1``, ``L2``, ``L1L2``) and the losses they add.

A regularizer maps a weight, or a layer's output, to a scalar penalty:
``L2(0.01)(w) == 0.01 * sum(w ** 2)``. Layers take them as Keras does
(``kernel_regularizer=``, ``bias_regularizer=``, ``activity_regularizer=``;
``Embedding``'s ``embeddings_regularizer=``; the normalization layers'
``beta_regularizer=``/``gamma_regularizer=``), by object, by name (``"l1"``,
``"l2"``, ``"l1_l2"``), by config dict or as any callable.

``layer.losses``, a network's ``losses`` and ``model.losses`` list the current
penalties as float32 scalars, in Keras's order: the activity penalties of the
last call (Keras divides each by the output's batch size), then the weight
penalties. A weight penalty is computed from the weights as they are, so inside
a traced function (a custom loop's ``nnx.merge(graphdef, params)``) it is a
function of the traced parameters and has a gradient.

How ``fit`` adds them (``phalanx.train._step``), as Keras on ``tf.distribute``:
each replica adds the weight penalties divided by the number of replicas
(``tf.nn.scale_regularization_loss``; the gradients, summed over the replicas,
then carry each penalty once) and its share of the activity penalty
(the penalty of its real examples' outputs divided by the global batch). So N
replicas train exactly as one device. The logged ``loss`` is the data loss plus
the penalties of each step, averaged over the examples, as Keras reports it.

Activity penalties are kept per example (``Regularizer.per_example``) so that
padding rows of a partial last batch count nowhere; for ``L1``/``L2``/``L1L2``
the sum over examples is the penalty of the whole output. A plain callable is
applied to each example as a batch of one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from ..errors import RegularizerError


class ActivityLoss(nnx.Intermediate):
    """A layer's per-example activity penalties of its last call (an nnx intermediate).

    It exists between a call and the next ``pop_activity``: the training step
    pops it before it reads the module's state, so it never enters ``fit``'s state.
    """


class Regularizer:
    """Base class of regularizers: ``regularizer(x) -> scalar penalty``.

    Subclasses implement ``__call__`` and ``get_config``; ``per_example`` gives
    one penalty per row of a batch (default: each row as a batch of one).
    """

    def __call__(self, x: Any) -> jax.Array:
        """Returns the scalar penalty of ``x``."""
        raise NotImplementedError

    def per_example(self, x: jax.Array) -> jax.Array:
        """Returns ``[batch]`` penalties, one per row of ``x`` (their sum is the batch's)."""
        return jax.vmap(lambda row: self(row[None]))(x)

    def get_config(self) -> dict:
        """Returns the constructor arguments (``from_config`` inverts it)."""
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        """Creates a regularizer from ``get_config()``'s output."""
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.get_config() == self.get_config()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(self.get_config().items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _factor(value: Any, name: str, default: float) -> float:
    """Keras's ``validate_float_arg``: a finite float >= 0 (None is ``default``)."""
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isinf(value)
        or math.isnan(value)
        or value < 0
    ):
        raise RegularizerError(
            f"Invalid value for argument {name}: expected a non-negative float. Received: "
            f"{name}={value!r}. Use e.g. {name}=0.01 (0 turns the penalty off)."
        )
    return float(value)


def _rows(x: jax.Array) -> tuple[int, ...]:
    return tuple(range(1, jnp.ndim(x)))


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)`` (Keras's ``L1L2``; alias ``l1_l2``).

    Args:
      l1: the L1 factor, >= 0; default 0.
      l2: the L2 factor, >= 0; default 0.

    Examples:
      >>> import jax.numpy as jnp
      >>> float(L1L2(l1=0.5, l2=0.1)(jnp.array([1.0, -2.0])))
      2.0
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1 = _factor(l1, "l1", 0.0)
        self.l2 = _factor(l2, "l2", 0.0)

    def __call__(self, x: Any) -> jax.Array:
        x = jnp.asarray(x)
        penalty = jnp.zeros((), x.dtype)
        if self.l1:
            penalty += self.l1 * jnp.sum(jnp.abs(x))
        if self.l2:
            penalty += self.l2 * jnp.sum(jnp.square(x))
        return penalty

    def per_example(self, x: jax.Array) -> jax.Array:
        penalty = jnp.zeros(x.shape[:1], x.dtype)
        if self.l1:
            penalty += self.l1 * jnp.sum(jnp.abs(x), axis=_rows(x))
        if self.l2:
            penalty += self.l2 * jnp.sum(jnp.square(x), axis=_rows(x))
        return penalty

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|x|)`` (Keras's ``L1``; alias ``l1``).

    Args:
      l1: the factor, >= 0; default 0.01.

    Examples:
      >>> import jax.numpy as jnp
      >>> float(L1(0.5)(jnp.array([1.0, -2.0])))
      1.5
    """

    def __init__(self, l1: float = 0.01):
        super().__init__(l1=_factor(l1, "l1", 0.01))

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x ** 2)`` (Keras's ``L2``; alias ``l2``).

    Args:
      l2: the factor, >= 0; default 0.01.

    Examples:
      >>> import jax.numpy as jnp
      >>> float(L2(0.5)(jnp.array([1.0, -2.0])))
      2.5
    """

    def __init__(self, l2: float = 0.01):
        super().__init__(l2=_factor(l2, "l2", 0.01))

    def get_config(self) -> dict:
        return {"l2": self.l2}


class _Function(Regularizer):
    """A plain ``fn(x) -> scalar`` used as a regularizer."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, x: Any) -> jax.Array:
        return jnp.asarray(self.fn(x))

    def get_config(self) -> dict:
        return {"fn": self.fn}

    def __hash__(self) -> int:
        return hash(self.fn)

    def __repr__(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))


# Keras's names: class names and the lower-case aliases (looked up case-insensitively).
_BY_NAME: dict[str, type[Regularizer]] = {
    "l1": L1,
    "l2": L2,
    "l1l2": L1L2,
    "l1_l2": L1L2,
}


def get(identifier: Any) -> Regularizer | None:
    """Returns a regularizer from a name, config dict, class, instance or callable (Keras's ``get``).

    Args:
      identifier: None; ``"l1"``, ``"l2"``, ``"l1_l2"`` (or the class names, any
        case), built with Keras's defaults (``L1(0.01)``, ``L2(0.01)``,
        ``L1L2(0, 0)``); ``{"class_name": "L2", "config": {"l2": 0.001}}``; a
        ``Regularizer`` class or instance; or a function ``x -> scalar``.

    Returns:
      A ``Regularizer``, or None for None.

    Raises:
      RegularizerError: an unknown name or config, or something not callable.

    Examples:
      >>> get("l2")
      L2(l2=0.01)
      >>> get({"class_name": "L1L2", "config": {"l1": 0.001, "l2": 0.0}})
      L1L2(l1=0.001, l2=0.0)
    """
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        return identifier()
    if isinstance(identifier, str):
        return _by_name(identifier)()
    if isinstance(identifier, dict):
        if "class_name" not in identifier:
            raise RegularizerError(
                f"A regularizer config needs 'class_name' (and 'config'); got {identifier!r}. "
                "Example: {'class_name': 'L2', 'config': {'l2': 0.01}}."
            )
        return _by_name(identifier["class_name"]).from_config(identifier.get("config") or {})
    if callable(identifier):
        return _Function(identifier)
    raise RegularizerError(
        f"Could not interpret regularizer identifier: {type(identifier).__name__} "
        f"{identifier!r}. Use phalanx.regularizers.L1/L2/L1L2, a name ('l1', 'l2', "
        "'l1_l2'), or a function x -> scalar penalty."
    )


def _by_name(name: Any) -> type[Regularizer]:
    key = str(name).lower()
    if key not in _BY_NAME:
        raise RegularizerError(
            f"Unknown regularizer {name!r}. Known names: 'l1', 'l2', 'l1_l2' (or "
            "phalanx.regularizers.L1, L2, L1L2 objects, or a function x -> scalar)."
        )
    return _BY_NAME[key]


def serialize(regularizer: Regularizer) -> dict:
    """Returns ``{"class_name": ..., "config": ...}`` (``get`` reads it back).

    Examples:
      >>> serialize(L2(0.001))
      {'class_name': 'L2', 'config': {'l2': 0.001}}
    """
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


class Regularized:
    """What a phalanx layer adds for regularizers (mixed into ``Layer``).

    A layer lists its regularized weights in ``_weight_regularizer_paths``:
    ``(("kernel_regularizer", ("linear", "kernel")), ...)`` pairs the attribute
    holding a regularizer with the path of the weight it applies to (ignored while
    the attribute is None or the layer is unbuilt). ``activity_regularizer``
    applies to the layer's output in every call.
    """

    _weight_regularizer_paths: tuple[tuple[str, tuple[str, ...]], ...] = ()
    activity_regularizer: Regularizer | None = None
    #: False for a layer of one's own (``Layer`` sets it per class), whose ``call`` may add losses.
    _phalanx_layer: bool = True

    def weight_regularizers(self) -> dict[str, Regularizer]:
        """The layer's weight regularizers that are set, by argument name."""
        found = {a: getattr(self, a, None) for a, _ in self._weight_regularizer_paths}
        return {a: r for a, r in found.items() if r is not None}

    def regularized_weights(self) -> list[tuple[Regularizer, jax.Array]]:
        """``(regularizer, weight value)`` pairs of the built layer, kernel first.

        None for a frozen layer (``trainable = False``): Keras penalizes trainable
        weights only.
        """
        if not getattr(self, "built", False) or not getattr(self, "trainable", True):
            return []
        pairs = []
        for attr, regularizer in self.weight_regularizers().items():
            node: Any = self
            for part in dict(self._weight_regularizer_paths)[attr]:
                node = getattr(node, part, None)
            if node is not None:
                pairs.append((regularizer, node.get_value()))
        for variable in self._own_variables():  # add_weight(regularizer=...)
            if variable.get_metadata().get("regularizer") is not None and isinstance(
                variable, nnx.Param
            ):
                pairs.append((variable.get_metadata()["regularizer"], variable.get_value()))
        return pairs

    def _own_variables(self) -> list[nnx.Variable]:
        """The variables held directly by this layer (``add_weight``'s)."""
        return [v for v in vars(self).values() if isinstance(v, nnx.Variable)]

    def adds_losses(self) -> bool:
        """True when the layer may add losses: a regularizer, or a ``call`` of one's own
        (which may call ``add_loss``)."""
        return (
            self.activity_regularizer is not None
            or bool(self.weight_regularizers())
            or any("regularizer" in v.get_metadata() for v in self._own_variables())
            or not self._phalanx_layer
        )

    def _record_activity(self, output: Any, added: Any = ()) -> Any:
        """Keeps ``activity_regularizer``'s per-example penalties of ``output``; returns it.

        A layer with several outputs (attention scores too) adds their penalties, as Keras;
        ``added`` are the ``[batch]`` vectors of the call's ``add_loss`` values.
        """
        values = list(added)
        if self.activity_regularizer is not None:
            per_example = self.activity_regularizer.per_example
            values += [per_example(jnp.asarray(o)) for o in jax.tree.leaves(output)]
        if values:
            self.activity_loss = ActivityLoss(sum(v.astype(jnp.float32) for v in values))
        elif isinstance(self.__dict__.get("activity_loss"), ActivityLoss):
            del self.activity_loss  # a call without losses: the last call's are gone
        return output

    @property
    def losses(self) -> list[jax.Array]:
        """Keras's ``layer.losses``: the activity penalty of the last call, then the weight
        penalties, as float32 scalars."""
        return losses(self)


# -- the penalties of a module's layers -------------------------------------------------


def _layers(module: nnx.Module) -> list[Any]:
    """The phalanx layers in ``module`` (itself included), in graph order."""
    return [node for _, node in nnx.iter_graph(module) if hasattr(node, "regularized_weights")]


def has_regularizers(module: nnx.Module) -> bool:
    """True when a layer of ``module`` has a weight or activity regularizer."""
    return any(layer.adds_losses() for layer in _layers(module))


def activity_losses(module: nnx.Module) -> list[jax.Array]:
    """Keras's activity losses of the last call: each layer's penalty / its batch size."""
    out = []
    for layer in _layers(module):
        values = getattr(layer, "activity_loss", None)
        if values is not None:
            values = values.get_value()
            out.append(jnp.sum(values) / max(values.shape[0], 1))
    return out


def weight_losses(module: nnx.Module) -> list[jax.Array]:
    """Each weight penalty of ``module``'s layers, from the weights as they are (float32)."""
    out = []
    for layer in _layers(module):
        for regularizer, weight in layer.regularized_weights():
            out.append(jnp.asarray(regularizer(weight), jnp.float32))
    return out


def losses(module: nnx.Module) -> list[jax.Array]:
    """Keras's ``losses``: the activity losses of the last call, then the weight penalties."""
    return activity_losses(module) + weight_losses(module)


def pop_activity(module: nnx.Module) -> list[jax.Array]:
    """Removes the per-example activity penalties from ``module``; returns them (``[batch]`` each)."""
    return [jnp.asarray(v, jnp.float32) for v in jax.tree.leaves(nnx.pop(module, ActivityLoss))]


__all__ = ["L1", "L1L2", "L2", "Regularizer", "get", "serialize"]
