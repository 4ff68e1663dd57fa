"""Subclassed models: ``class MyModel(phalanx.Model)`` with layers in ``__init__`` and a ``call``.

Keras users write::

    class MyModel(phalanx.Model):
        def __init__(self):
            super().__init__()
            self.hidden = layers.Dense(64, activation="relu")
            self.out = layers.Dense(10, activation="softmax")

        def call(self, inputs, training=False):
            return self.out(self.hidden(inputs))

A training step needs the model as one ``nnx.Module`` it can split and
merge, and ``call`` must run on the merged copy's layers (whose weights are
the traced parameters), not on the originals. So the first time the model
is built, phalanx makes an ``nnx.Module`` of a class generated from the
user's class: the same methods (``call`` and any helper it uses), and as
attributes the same layer objects (lists of layers become ``nnx.List`` s)
and the same plain values. ``call`` then runs with ``self`` that module:
eagerly it reads the user's layer objects themselves (``model.hidden`` is
the layer in the module), inside a step the merged copies.

Building is Keras's "build on first call": the model is called once, eagerly,
on a batch (``fit``'s first batch, or zeros of ``build(input_shape)``), and
each layer builds from what it receives, initialized from one seeded stream.
Dropout in ``call`` needs no key: the step puts its key in the random
context (`phalanx.layers._layer.random_context`).

Not supported: weights created with ``add_weight`` in the model itself
(put them in a layer), attributes set after the model is built, and
``super()`` calls inside ``call``.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from .._random import model_seed
from ..errors import NotBuiltError
from ..layers import Layer, build_context, claim, count_params, random_context
from ._summary import format_summary

_BASE_ATTRIBUTES: set[str] | None = None


def is_subclassed(model: Any) -> bool:
    """True for an instance of a ``phalanx.Model`` subclass that defines ``call``."""
    return callable(getattr(type(model), "call", None))


def _base_attributes() -> set[str]:
    global _BASE_ATTRIBUTES
    if _BASE_ATTRIBUTES is None:
        from ._model import Model

        _BASE_ATTRIBUTES = set(vars(Model()))
    return _BASE_ATTRIBUTES


class SubclassedModule(nnx.Module):
    """The ``nnx.Module`` a subclassed model runs as (its class is generated per model class)."""

    def __init__(self, name: str, takes_training: bool):
        self.name = name
        self.built = False
        self.trainable = True
        self._takes_training = takes_training

    def __call__(self, inputs: Any, *, training: bool = False, rngs: Any = None) -> Any:
        """Runs the user's ``call`` with this module as ``self``."""
        if not self.built:
            leaves = jax.tree.leaves(inputs)
            if any(isinstance(a, jax.core.Tracer) for a in leaves):
                raise NotBuiltError(
                    f"Model '{self.name}' is not built and was called inside a jitted function: "
                    "call it once on a batch (model(x)) or model.build(input_shape) first."
                )
            return self._build_call(inputs)
        with random_context(rngs, self):
            if self._takes_training:
                return self.call(inputs, training=training)
            return self.call(inputs)

    def _build_call(self, inputs: Any, seed: int | None = None) -> Any:
        with build_context(nnx.Rngs(model_seed() if seed is None else seed)):
            out = self.call(inputs, training=False) if self._takes_training else self.call(inputs)
        self.built = True
        return out

    def _phalanx_build(self, input_shape: Any) -> None:
        """Builds by calling the model on a batch of one example of zeros."""
        if self.built:
            return
        self._build_call(_zeros(input_shape))

    def count_params(self) -> int:
        """Returns the number of weights."""
        return count_params(self, nnx.Param) + count_params(self, nnx.BatchStat)

    @property
    def layers(self) -> list[Layer]:
        """The layers assigned in ``__init__``, in order."""
        out = []
        for value in vars(self).values():
            if isinstance(value, Layer):
                out.append(value)
            elif isinstance(value, nnx.List):
                out.extend(v for v in value if isinstance(v, Layer))
        return out

    def summary(self, *, line_length: int | None = None, print_fn: Any = None) -> None:
        """Prints Keras's table of the layers, their output shapes and parameter counts."""
        (print_fn or print)(format_summary(self, line_length=line_length))


def _zeros(shape: Any) -> Any:
    if isinstance(shape, dict):
        return {k: _zeros(v) for k, v in shape.items()}
    if isinstance(shape, list) or (
        isinstance(shape, tuple) and shape and isinstance(shape[0], list | tuple)
    ):
        return [_zeros(s) for s in shape]
    dims = tuple(1 if d is None else int(d) for d in shape)
    return jnp.zeros((1, *dims), jnp.float32)


def _methods(cls: type) -> dict[str, Any]:
    from ._model import Model

    base = set(Model.__mro__)
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass in base:
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") or name in ("build",):
                continue
            out[name] = value
    return out


def _takes_training(call: Any) -> bool:
    try:
        params = inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False
    return "training" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def _as_attribute(value: Any) -> Any:
    if isinstance(value, list | tuple) and value and all(isinstance(v, nnx.Module) for v in value):
        return nnx.List(list(value))
    if isinstance(value, jax.Array | np.ndarray):
        return nnx.data(value)
    return value


def _user_private(value: Any) -> bool:
    """Whether a ``self._name`` attribute is the user's (``self._dense = Dense(4)``): a
    layer, a list of layers, an array or a plain value; phalanx's own are none of these."""
    if isinstance(value, nnx.Module | jax.Array | np.ndarray):
        return True
    if isinstance(value, list | tuple):
        return bool(value) and all(isinstance(v, nnx.Module) for v in value)
    return isinstance(value, bool | int | float | str)


def make_module(model: Any) -> SubclassedModule:
    """The nnx module of a subclassed model (not built yet), holding its layers."""
    cls = type(model)
    generated = type(f"{cls.__name__}Module", (SubclassedModule,), _methods(cls))
    module = generated(model.name, _takes_training(cls.call))
    base = _base_attributes()
    for name, value in vars(model).items():
        if name in base or (name.startswith("_") and not _user_private(value)):
            continue
        setattr(module, name, _as_attribute(value))
    from ._functional import Functional

    Functional._name_layers(module.layers, [])  # dense, dense_1, ... as Keras
    return module


def ensure_module(model: Any) -> None:
    """Creates the module of a subclassed model on first need (its layers are assigned by then)."""
    if model._module is None and is_subclassed(model):
        model._module = make_module(model)

        claim(model, model._module)


def build_from_batch(model: Any, x: Any) -> None:
    """Builds a subclassed model by calling it on the batch ``x`` (Keras's build on first call)."""
    ensure_module(model)
    if not model._module.built:
        model._module._build_call(x)


def first_example(execution: Any) -> Any:
    """One example (batch of 1) of an execution's inputs, in their structure and dtypes.

    Resident data: the first row of ``execution.data``'s ``x``; stacked batches
    ``[N, batch, ...]``: the first row of the first step's ``x``.
    """
    if execution.data is not None:
        rows = execution.data[0]
    else:
        rows = jax.tree.map(lambda a: a[0], execution.xs[0])
    return jax.tree.map(lambda a: a[:1], rows)
