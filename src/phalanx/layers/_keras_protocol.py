"""The protocol of a layer of one's own, as Keras users write it: ``build(input_shape)``
with the batch axis, ``call`` given only the options it declares, ``add_loss``.

`phalanx.layers._layer.Layer` uses these: ``_BUILDING`` knows the layers whose
Keras ``build`` runs (and the ``nnx.Rngs`` their ``add_weight`` draws from), ``_CALLS``
the calls in progress (the ``training`` an outer call passes on, Keras's call context,
and the losses ``add_loss`` adds, kept per example so that ``fit`` averages them over
the real examples of every replica).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from ..errors import LayerArgumentError

if TYPE_CHECKING:
    from ._layer import Layer


def _per_example(shape: Any, *, always: bool = False) -> Any:
    """``build``'s shape without Keras's batch axis (a leading None; any first entry if ``always``)."""
    if isinstance(shape, list):
        return [_per_example(s, always=always) for s in shape]
    if isinstance(shape, dict):
        return {k: _per_example(v, always=always) for k, v in shape.items()}
    if isinstance(shape, tuple) and shape and (always or (len(shape) >= 2 and shape[0] is None)):
        return shape[1:]
    return shape


def _with_batch(shape: Any, batch: Any) -> Any:
    """The per-example ``shape`` with Keras's batch axis (``batch``, None when unknown) first."""
    if isinstance(shape, list):
        return [_with_batch(s, batch) for s in shape]
    if isinstance(shape, dict):
        return {k: _with_batch(v, batch) for k, v in shape.items()}
    return (batch, *shape)


def _keras_build_entry(user_build: Any) -> Any:
    """A subclass's ``build``, callable as Keras's: ``layer.build((None, 3))`` builds the layer."""

    def build(self, input_shape: Any, rngs: nnx.Rngs | int | None = None) -> Any:
        if _BUILDING.active(self):  # building: the user's build itself (super() chains)
            return user_build(self, input_shape)
        from ._layer import normalize_shape  # _layer imports this module

        if not isinstance(input_shape, list | dict):
            input_shape = normalize_shape(input_shape)
        return self._build_example(_per_example(input_shape, always=True), rngs)

    build.__doc__ = user_build.__doc__
    build.__name__ = "build"
    _BUILD_ENTRIES.add(build)
    return build


_BUILD_ENTRIES: weakref.WeakSet = weakref.WeakSet()  # the ``build`` s _keras_build_entry made


def is_build_entry(fn: Any) -> bool:
    """Whether ``fn`` is a ``build`` made by ``_keras_build_entry`` (a subclass of a
    subclass inherits it: it must not be wrapped again)."""
    return fn in _BUILD_ENTRIES


def _traces_output_shape(layer: Layer) -> bool:
    """True for a layer of one's own whose output shape comes from running its ``call``."""
    cls = type(layer)
    return not cls._phalanx_layer and "compute_output_shape" not in {
        k for c in cls.__mro__ if not c.__module__.startswith("phalanx.") for k in vars(c)
    }


def _keras_output_shape(user_method: Any) -> Any:
    """A subclass's ``compute_output_shape``, written as Keras's (batch axis first), seen
    per example as phalanx's networks use it."""

    def compute_output_shape(self, input_shape: Any) -> Any:
        out = user_method(self, _with_batch(input_shape, None))
        if isinstance(out, list):
            return [tuple(o)[1:] for o in out]
        return tuple(out)[1:]

    compute_output_shape.__doc__ = user_method.__doc__
    return compute_output_shape


def _call_options(call: Any) -> frozenset:
    """Which of ``training``, ``mask``, ``rngs`` a ``call`` accepts (all with ``**kwargs``)."""
    try:
        params = inspect.signature(call).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return frozenset(("training", "mask"))
    return frozenset(n for n in ("training", "mask", "rngs") if n in params)


def _traced_output_shape(layer: Layer, input_shape: Any) -> Any:
    """The per-example output shape(s) of ``layer.call``, run on zeros (a batch of one).

    Eager, so that the layers it calls build themselves as in Keras's first call
    (``jax.eval_shape`` cannot build them: their weights would be abstract).
    """

    def zeros(shape):
        return jnp.zeros((1, *(1 if d is None else d for d in shape)), jnp.float32)

    x = jax.tree.map(zeros, input_shape, is_leaf=lambda s: isinstance(s, tuple))
    kwargs = {"training": False} if "training" in layer._call_options else {}
    with _CALLS.tracing_shapes(), _CALLS.calling(layer, False, x):
        out = layer.call(x, **kwargs)
    shapes = [tuple(np.shape(o)[1:]) for o in jax.tree.leaves(out)]
    return shapes if isinstance(out, list | tuple) else shapes[0]


class _Building(threading.local):
    """The layers whose Keras ``build`` runs now, with the ``nnx.Rngs`` their weights use."""

    def __init__(self):
        self.layers: dict[int, nnx.Rngs] = {}

    def active(self, layer: Layer) -> bool:
        return id(layer) in self.layers

    def rngs(self, layer: Layer) -> nnx.Rngs | None:
        """The stream of the build in progress, or None outside one."""
        return self.layers.get(id(layer))

    @contextlib.contextmanager
    def building(self, layer: Layer, rngs: nnx.Rngs):
        self.layers[id(layer)] = rngs
        try:
            yield
        finally:
            del self.layers[id(layer)]


_BUILDING = _Building()


class _Calls(threading.local):
    """The layer calls in progress: the ``training`` mode outer calls pass on (Keras's call
    context) and the losses ``add_loss`` adds, per layer, as ``[batch]`` vectors."""

    def __init__(self):
        self.stack: list[tuple[Layer, bool, Any]] = []
        self.losses: dict[int, list] = {}
        self.shapes_only = 0

    def training(self) -> bool:
        return self.stack[-1][1] if self.stack else False

    @contextlib.contextmanager
    def calling(self, layer: Layer, training: bool, x: Any):
        leaves = [a for a in jax.tree.leaves(x) if jnp.ndim(a)]
        # the batch size as JAX has it: an int, or symbolic under jax.export (model.export)
        batch = leaves[0].shape[0] if leaves else 1
        self.stack.append((layer, training, batch))
        self.losses.pop(id(layer), None)
        try:
            yield
        finally:
            self.stack.pop()

    @contextlib.contextmanager
    def tracing_shapes(self):
        self.shapes_only += 1
        try:
            yield
        finally:
            self.shapes_only -= 1

    def add_loss(self, layer: Layer, loss: Any) -> None:
        if self.shapes_only:
            return
        for caller, _, batch in reversed(self.stack):
            if caller is layer:
                value = jnp.sum(jnp.asarray(loss, jnp.float32))
                self.losses.setdefault(id(layer), []).append(jnp.full((batch,), value))
                return
        raise LayerArgumentError(
            f"Layer '{layer.name or type(layer).__name__}': add_loss(...) is for use inside "
            "call(), where it adds a loss to that call; outside a call there is no call to "
            "add it to. For a penalty on a weight, use add_weight(regularizer=...)."
        )

    def added_losses(self, layer: Layer) -> list:
        return self.losses.pop(id(layer), [])


_CALLS = _Calls()
