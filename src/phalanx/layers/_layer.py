"""``Layer``: a Keras layer config that builds its flax.nnx module on first use.

flax.nnx modules need their input sizes at construction (``nnx.Linear(784,
128)``); Keras layers learn them from the first input (``Dense(128)``). A
phalanx layer is an ``nnx.Module`` that holds its Keras configuration as static
attributes and, once ``build(input_shape, rngs)`` is called, the nnx module(s)
that do the work as children. After ``build`` it is an ordinary nnx graph
node: ``nnx.split``/``nnx.merge``/``nnx.state`` see its parameters.

Shapes phalanx's layers use internally (``_build``, ``compute_output_shape``,
``output_shape``) are per example, without the batch axis, as Keras's
``input_shape=`` argument; a ``None`` entry is a size known only at call time.
``build`` also takes Keras's shape with the batch axis (a leading None).

A layer of one's own is written as Keras's (`phalanx.layers._keras_protocol`):
``build(self, input_shape)`` receives the shape with the batch axis and creates
weights with ``add_weight``; ``call(self, inputs, training=None, mask=None)`` is
given only the options it declares; ``add_loss`` adds to the loss of the call;
its output shape comes from running ``call`` (or its ``compute_output_shape``,
written with the batch axis).

Layers are built eagerly, outside ``jit``: a layer called on a traced array
before it is built raises `phalanx.errors.NotBuiltError`. A built
layer checks every input's shape when it is traced, so a wrong shape fails
with the layer's name before XLA compiles anything.

Random keys: ``__call__(x, training=..., rngs=...)`` takes an optional
``jax.random`` key (or ``nnx.Rngs``) that only layers drawing random numbers
in training (``Dropout``) use; the layer holds no random state of its own.
A layer called without a key inside a model's step (a subclassed model's
``call``, as Keras users write it) draws from the key the step put in the
random context (`random_context`), folded with the layer's position.

Symbolic calls: a layer called on a `phalanx.layers._symbolic.KerasTensor`
(from ``phalanx.Input``) builds itself from the tensor's shape and returns
symbolic outputs; `phalanx.models._functional` turns the recorded calls
into a model.

Keras's introspection: ``trainable`` (False freezes the layer's weights in
``fit`` from the next ``compile``), ``weights``, ``trainable_weights``,
``non_trainable_weights``, ``get_weights()``/``set_weights()``; inside a
compiled model they read and write the model's live state.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from .. import activations
from .._random import model_seed
from ..constraints import _constraints
from ..errors import LayerArgumentError, LayerShapeError, NotBuiltError
from ..mixed_precision import _policy as _mixed_precision
from ..regularizers import Regularized
from ._keras_protocol import (
    _BUILDING,
    _CALLS,
    _call_options,
    _keras_build_entry,
    _keras_output_shape,
    _per_example,
    _traced_output_shape,
    _traces_output_shape,
    _with_batch,
    is_build_entry,
)

Shape = tuple[int | None, ...]


def snake_case(name: str) -> str:
    """Keras's layer naming: ``Conv2D`` -> ``conv2d``, ``MaxPooling2D`` -> ``max_pooling2d``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def normalize_shape(shape: Any, what: str = "input_shape") -> Shape | None:
    """Returns ``shape`` as a tuple of ints (or None entries), or None for None."""
    if shape is None:
        return None
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        return (int(shape),)
    dims = None if isinstance(shape, str | bytes) else _dims(shape)
    if dims is None:
        raise LayerArgumentError(
            f"{what} must be a tuple of ints (per example, without the batch axis), "
            f"got {type(shape).__name__} {shape!r}; e.g. {what}=(28, 28, 1)."
        )
    return dims


def _dims(shape: Any) -> Shape | None:
    """``shape``'s entries as ints or None, or None when it is not a sequence of such."""
    try:
        dims = tuple(shape)
    except TypeError:
        return None
    ok = all(
        d is None or (isinstance(d, int | np.integer) and not isinstance(d, bool)) for d in dims
    )
    return tuple(None if d is None else int(d) for d in dims) if ok else None


def format_shape(shape: Sequence[int | None] | None, batch: Any = None) -> str:
    """Formats a per-example shape with a leading batch entry: ``(None, 784)``."""
    if shape is None:
        return "?"
    dims = ["None" if d is None else str(d) for d in (batch, *shape)]
    return "(" + ", ".join(dims) + (",)" if len(dims) == 1 else ")")


def shapes_match(expected: Shape, received: Shape) -> bool:
    """True when ``received`` has ``expected``'s rank and sizes (None matches any size)."""
    if len(expected) != len(received):
        return False
    return all(e is None or r is None or e == r for e, r in zip(expected, received, strict=True))


def is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _layer_dtype(owner: str, dtype: Any) -> Any:
    """``layer_dtype(dtype)``, a ``LayerArgumentError`` naming the layer for a dtype JAX lacks."""
    try:
        return _mixed_precision.layer_dtype(dtype)
    except (TypeError, ValueError):
        raise LayerArgumentError(
            f"{owner}: dtype must be a float dtype ('float32', 'bfloat16', 'float16'), a "
            f"mixed-precision policy ('mixed_bfloat16', 'mixed_float16') or None; got "
            f"{dtype!r} ({type(dtype).__name__}). Pass dtype=None to compute in the input's "
            "float dtype."
        ) from None


#: The weight names Keras layers expose as attributes (``Layer.__getattr__``).
_WEIGHT_NAMES = frozenset(
    (
        "kernel",
        "bias",
        "gamma",
        "beta",
        "moving_mean",
        "moving_variance",
        "embeddings",
        "depthwise_kernel",
        "pointwise_kernel",
        "recurrent_kernel",
    )
)


_ACTIVATION_KEYS = frozenset(("activation", "recurrent_activation"))


def _activation_config(value: Any) -> str:
    """A layer's ``activation`` in its config, as Keras's ``activations.serialize``: the
    canonical name (``"silu"`` for ``"swish"``, ``"linear"`` for None), else the
    function's ``__name__``."""
    name = activations.name_of(activations.get(value) if isinstance(value, dict) else value)
    return name if name is not None else getattr(value, "__name__", type(value).__name__)


class Layer(Regularized, nnx.Module):
    """Base class of phalanx's Keras-style layers.

    Subclasses implement ``compute_output_shape``, ``_build`` (create the nnx
    children) and ``call``; optionally ``_check_input_shape`` (raise on a shape
    the layer cannot take) and, when they apply an ``activation``,
    ``pre_activation`` (the values before it).

    Args:
      name: the layer's name; a network gives unnamed layers unique Keras names
        (``dense``, ``dense_1``, ...).
      input_shape: the per-example input shape (without the batch axis), as
        Keras's ``input_shape=``; only meaningful on a network's first layer.
      dtype: the computation dtype (parameters stay float32), or a policy
        (``"mixed_bfloat16"``: its compute dtype); None keeps the input's
        floating dtype.
    """

    _has_activation = False
    #: True for a model used as a layer (``phalanx.models``' nested models): the layer's
    #: weights are another model's, which the Keras file writers refuse by this flag.
    wraps_model = False
    #: The ``build`` of a layer of one's own (Keras's ``build(input_shape)`` with the batch
    #: axis, creating weights with ``add_weight``), or None for phalanx's layers (``_build``).
    _keras_build = None
    #: Which of ``training``, ``mask``, ``rngs`` the class's ``call`` accepts (Keras passes
    #: ``training=``/``mask=`` only to a ``call`` that declares them).
    _call_options: frozenset = frozenset(("training", "rngs"))

    #: False for a layer of one's own (``call`` or ``build`` outside phalanx): its input
    #: shapes are not checked (as Keras without an ``input_spec``) and its shapes are Keras's.
    _phalanx_layer = True
    #: True for a layer that runs on the host only (strings: ``TextVectorization``,
    #: ``StringLookup``); a model holding one refuses to run (`phalanx.models.Model`).
    runs_on_host = False

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        own = not cls.__module__.startswith("phalanx.")
        if own and ("call" in cls.__dict__ or "build" in cls.__dict__):
            cls._phalanx_layer = False
        if own and "compute_output_shape" in cls.__dict__:
            cls.compute_output_shape = _keras_output_shape(cls.__dict__["compute_output_shape"])
        own_build = cls.__dict__.get("build")
        if own_build is not None and not is_build_entry(own_build):
            cls._keras_build = own_build
            cls.build = _keras_build_entry(own_build)
        if "call" in cls.__dict__:
            cls._call_options = _call_options(cls.__dict__["call"])

    def __init__(self, *, name: str | None = None, input_shape: Any = None, dtype: Any = None):
        self.name = name
        self.declared_input_shape = normalize_shape(input_shape)
        # A dtype or a policy name ("mixed_bfloat16": compute in bfloat16, weights float32).
        self.dtype = None if dtype is None else _layer_dtype(type(self).__name__, dtype)
        # Keras's layer.dtype_policy: the policy given, else the global one now, as Keras.
        self._policy_name = _mixed_precision.policy_name_of(dtype)
        self.built = False
        self.trainable = True
        self.built_input_shape: Shape | None = None
        self.output_shape: Shape | None = None

    # -- Keras's dtype policy ---------------------------------------------------------
    @property
    def dtype_policy(self) -> _mixed_precision.Policy:
        """The layer's dtype policy (Keras's ``layer.dtype_policy``): the ``dtype=`` given
        (a policy, or a float dtype as the policy computing in it), else the global
        policy when the layer was made."""
        name = self.__dict__.get("_policy_name") or _mixed_precision.global_policy().name
        return _mixed_precision.Policy(name)

    @property
    def compute_dtype(self) -> str:
        """The dtype the layer computes in (Keras's ``layer.compute_dtype``)."""
        return self.dtype_policy.compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of the layer's weights (Keras's ``layer.variable_dtype``): float32."""
        return self.dtype_policy.variable_dtype

    # -- what subclasses implement ----------------------------------------------------
    def compute_output_shape(self, input_shape: Shape) -> Shape:
        """Returns the per-example output shape for a per-example input shape.

        A layer of one's own (``call`` overridden, no ``compute_output_shape``) is
        traced abstractly (``jax.eval_shape``) on an input of that shape, built first.
        """
        if not _traces_output_shape(self):
            return tuple(input_shape)
        if not self.built:
            self._build_example(input_shape)
        return _traced_output_shape(self, input_shape)

    def _check_input_shape(self, input_shape: Shape) -> None:
        """Raises `LayerShapeError` when the layer cannot take ``input_shape``."""

    def _symbolic_output_shape(self, input_shape: Shape, kwargs: dict) -> Shape:
        """The output shape of a call on symbolic inputs with ``kwargs``; a layer whose
        outputs depend on its keyword arguments (``MultiHeadAttention``) overrides it."""
        del kwargs
        return self.compute_output_shape(input_shape)

    def _build(self, input_shape: Shape, rngs: nnx.Rngs) -> None:
        """Creates the nnx children for ``input_shape``; layers without weights do nothing."""

    def call(self, x: jax.Array, *, training: bool = False, rngs: Any = None) -> jax.Array:
        """Applies the built layer to a batch ``x`` (``super().call(inputs)`` works in a
        subclass of ``Dense`` or a ``Conv``, as Keras)."""
        return self.activation_fn(self.pre_activation(x, training=training, rngs=rngs))

    def pre_activation(self, x: jax.Array, *, training: bool, rngs: Any) -> jax.Array:
        """The layer's output before its activation (for layers with ``activation=``)."""
        raise NotImplementedError(f"{type(self).__name__} has no activation.")

    # -- activation ------------------------------------------------------------------
    @property
    def activation_name(self) -> str | None:
        """The Keras name of the activation this layer ends with, or None."""
        if not self._has_activation:
            return None
        return activations.name_of(self.activation)

    @property
    def activation_fn(self):
        """The activation function (identity for layers without one)."""
        return activations.get(self.activation if self._has_activation else None)

    # -- building ----------------------------------------------------------------------
    def _error(self, message: str) -> LayerShapeError:
        return LayerShapeError(f"Layer '{self.name}' ({type(self).__name__}) {message}")

    def _require_rank(self, input_shape: Shape, rank: int, layout: str, hint: str = "") -> None:
        if len(input_shape) != rank:
            raise self._error(
                f"expects inputs of rank {rank + 1} {layout}, received shape "
                f"{format_shape(input_shape)}." + (f" {hint}" if hint else "")
            )

    def _require_known(self, input_shape: Shape, axes: Sequence[int], what: str) -> None:
        if any(input_shape[a] is None for a in axes):
            raise self._error(
                f"needs a known {what} to create its weights, received shape "
                f"{format_shape(input_shape)}."
            )

    def build(self, input_shape: Any, rngs: nnx.Rngs | int | None = None) -> Shape:
        """Creates the layer's weights for ``input_shape``, as Keras's ``build``.

        Args:
          input_shape: Keras's shape with the batch axis first (``(None, 784)``:
            a leading None is the batch axis), or the shape of one example
            (``(784,)``); a list of shapes for layers taking several inputs
            (``Add``, ...). A layer of one's own that overrides ``build`` always
            receives (and is given) Keras's shape with the batch axis.
          rngs: an ``nnx.Rngs`` (its ``params`` stream initializes the weights),
            an int seed, or None for seed 0 (drawn from
            ``phalanx.utils.set_random_seed``'s stream once it was called).

        Returns:
          The per-example output shape.

        Raises:
          LayerShapeError: the layer cannot take inputs of this shape.
        """
        if _BUILDING.active(self):  # super().build(input_shape) in a subclass's build
            if type(self)._build is not Layer._build:  # a phalanx parent's weights
                shape = _per_example(self._normalize_input_shape(input_shape), always=True)
                self._build(shape, _BUILDING.rngs(self))
            return None
        return self._build_example(_per_example(self._normalize_input_shape(input_shape)), rngs)

    def _build_example(
        self, shape: Any, rngs: nnx.Rngs | int | None = None, batch=None, *, calling=False
    ) -> Shape:
        """Builds for the per-example ``shape`` (what networks call; ``batch``: the known size).

        ``calling``: built by a call, which gives a layer of one's own its output shape.
        """
        if self.name is None:
            self.name = snake_case(type(self).__name__)
        self._check_input_shape(shape)
        if not isinstance(rngs, nnx.Rngs):
            rngs = nnx.Rngs(model_seed() if rngs is None else rngs)
        if self._keras_build is not None:
            with _BUILDING.building(self, rngs):
                type(self)._keras_build(self, _with_batch(shape, batch))
        else:
            self._build(shape, rngs)
        self.built_input_shape = shape
        self.built = True
        if calling and _traces_output_shape(self):
            return None  # __call__ sets it from the output
        self.output_shape = self._normalize_output_shape(self.compute_output_shape(shape))
        return self.output_shape

    def _normalize_input_shape(self, input_shape: Any) -> Any:
        """The input shape as ``build`` stores it (layers with several inputs: a list)."""
        return normalize_shape(input_shape)

    def _normalize_output_shape(self, output_shape: Any) -> Any:
        if isinstance(output_shape, list):  # several outputs
            return [normalize_shape(s) for s in output_shape]
        return normalize_shape(output_shape)

    def _input_shape_of(self, x: Any) -> Any:
        """The per-example shape(s) of a batch ``x`` (what ``build`` takes)."""
        return tuple(x.shape[1:])

    def _build_shapes(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        """What ``build`` takes for the call ``layer(x, *args, **kwargs)`` (arrays or symbolic).

        Layers with several inputs (``MultiHeadAttention``) override it.
        """
        return self._input_shape_of(x)

    def check_input(self, x: Any) -> None:
        """Raises `LayerShapeError` when a batch ``x`` does not fit the built layer.

        A layer of one's own is not checked (as Keras without an ``input_spec``).
        """
        if not self._phalanx_layer or not hasattr(x, "shape"):
            return
        received = tuple(x.shape[1:])
        if not shapes_match(self.built_input_shape, received):
            raise self._error(
                f"was built for inputs of shape {format_shape(self.built_input_shape)}, "
                f"received {format_shape(received, x.shape[0] if x.ndim else None)}."
            )

    def __call__(
        self, x: Any, *args: Any, training: bool | None = None, rngs: Any = None, **kwargs: Any
    ) -> Any:
        """Applies the layer to a batch ``x`` (leading batch axis), building it first if needed.

        Called on a symbolic tensor (``phalanx.Input(...)``), it records the call
        for a functional ``Model`` and returns symbolic outputs.

        Args:
          x: a batch, shape ``[batch, *input_shape]`` (a list for merge layers).
          *args: further inputs of layers that take them (``MultiHeadAttention``'s value).
          training: True in a training step (dropout active, batch statistics).
          rngs: a ``jax.random`` key or ``nnx.Rngs`` for random layers in training.
          **kwargs: the layer's call options (``attention_mask=``, ...).

        Returns:
          The layer's output for the batch.

        Raises:
          NotBuiltError: the layer is unbuilt and ``x`` is traced (build it eagerly).
          LayerShapeError: ``x`` does not have the shape the layer was built for.
        """
        from . import _symbolic

        if _symbolic.any_symbolic((x, args, kwargs)):
            return _symbolic.call_symbolic(self, x, args, kwargs, training=training)
        if not self.built:
            weightless = type(self)._build is Layer._build and self._keras_build is None
            if not weightless and any(is_traced(a) for a in jax.tree.leaves(x)):
                raise NotBuiltError(
                    f"Layer '{self.name or snake_case(type(self).__name__)}' "
                    f"({type(self).__name__}) is not built and was called inside a jitted "
                    "function. Call layer.build(input_shape) (or the network's build) "
                    "before jit."
                )
            x = jax.tree.map(lambda a: a if is_traced(a) else jnp.asarray(a), x)
            leaves = jax.tree.leaves(x)
            self._build_example(
                self._build_shapes(x, *args, **kwargs),
                _RANDOM.build_rngs[-1] if _RANDOM.build_rngs else None,
                batch=leaves[0].shape[0] if leaves and jnp.ndim(leaves[0]) else None,
                calling=True,
            )
        self.check_input(x)
        training = _CALLS.training() if training is None else bool(training)
        if rngs is None and training and self.uses_rng:
            rngs = context_key(self)
        options = self._call_options
        if "training" in options:
            kwargs["training"] = training
        if "rngs" in options:
            kwargs["rngs"] = rngs
        if "mask" in kwargs and "mask" not in options:
            kwargs.pop("mask")  # Keras gives a mask only to a call that takes one
        with _CALLS.calling(self, training, x):
            out = self.call(x, *args, **kwargs)
            out = self._record_activity(out, _CALLS.added_losses(self))
        if self.output_shape is None:  # a layer of one's own, built by this call
            shapes = [tuple(np.shape(o)[1:]) for o in jax.tree.leaves(out)]
            self.output_shape = shapes if isinstance(out, list | tuple) else shapes[0]
        return out

    #: True for layers that draw random numbers in training (``Dropout``).
    uses_rng = False

    #: Keras's ``supports_masking``: the layer passes a mask on (``compute_mask``); a
    #: network drops the mask after a layer without it (``Flatten``, ``Conv2D``...).
    supports_masking = False

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Keras's ``compute_mask``: the mask of the output (the input's, by default)."""
        return mask if self.supports_masking else None

    # -- weights and losses of a layer of one's own ------------------------------------
    def add_weight(
        self,
        shape: Any = None,
        initializer: Any = None,
        dtype: Any = None,
        trainable: bool = True,
        autocast: bool = True,
        regularizer: Any = None,
        constraint: Any = None,
        aggregation: str = "none",
        overwrite_with_gradient: bool = False,
        name: str | None = None,
    ) -> nnx.Variable:
        """Keras's ``add_weight``: creates a weight of the layer and returns it.

        Assign it to an attribute (``self.w = self.add_weight(...)``); it then is
        one of the layer's ``weights`` (in creation order), trained by ``fit``
        when ``trainable``, and acts as an array in ``call`` (``inputs @ self.w``).
        A non-trainable weight is state the layer may update in ``call``
        (``self.total.assign(self.total + ...)``), as Keras's.

        Args:
          shape: the weight's shape; default ``()``.
          initializer: a name (``"random_normal"``), a ``phalanx.initializers``
            object or a function ``(key, shape, dtype)``; default
            ``"glorot_uniform"`` for float weights, ``"zeros"`` otherwise.
          dtype: the weight's dtype; default float32.
          trainable: whether ``fit`` trains it.
          autocast: accepted as Keras (a weight is read in the dtype it has).
          regularizer: a penalty on the weight, added to the loss in ``fit``.
          constraint: a ``phalanx.constraints`` projection (or name, or a function
            ``w -> w``) that ``fit`` applies after each optimizer update, as Keras.
          aggregation: Keras's ``"none"``/``"mean"``/``"sum"``/
            ``"only_first_replica"``: accepted (replicas hold equal weights).
          overwrite_with_gradient: not supported (raises when True).
          name: the weight's name (its attribute name is its path otherwise).

        Returns:
          The weight (an ``nnx.Param``, or ``nnx.BatchStat`` when not trainable).

        Raises:
          LayerArgumentError: an unknown initializer or an unsupported argument.
        """
        from . import _weight_creation

        return _weight_creation.add_weight(
            self,
            shape=shape,
            initializer=initializer,
            dtype=dtype,
            trainable=trainable,
            regularizer=regularizer,
            constraint=constraint,
            aggregation=aggregation,
            overwrite_with_gradient=overwrite_with_gradient,
            name=name,
            rngs=_BUILDING.rngs(self) or _build_rngs(),
        )

    def add_loss(self, loss: Any) -> None:
        """Keras's ``add_loss``: adds a scalar to the loss of the call in progress.

        Called in ``call``; ``layer.losses`` lists it after the call and ``fit``
        adds it to the loss (under N replicas, each replica's value counts
        ``1/N``: the mean of the replicas' values, as Keras on the global batch
        when the value is a mean over the batch).

        Raises:
          LayerArgumentError: called outside ``call``.
        """
        _CALLS.add_loss(self, loss)

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        """Keras's ``from_config``: the layer ``get_config()`` describes (not built)."""
        config = dict(config)
        trainable = config.pop("trainable", True)
        accepted = inspect.signature(cls.__init__).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        for key in list(config):
            # dtype/name, and the None of a sublayer's slot before build (Dense's linear)
            dropped = key in ("dtype", "name") or config[key] is None
            if dropped and key not in accepted and not takes_any:
                config.pop(key)
        layer = cls(**config)
        layer.trainable = trainable
        return layer

    # -- Keras's introspection -------------------------------------------------------
    _NOT_CONFIG = frozenset(
        ("name", "built", "built_input_shape", "output_shape", "declared_input_shape")
    )

    def get_config(self) -> dict:
        """The layer's configuration, as Keras's ``get_config()``: name, trainable, arguments.

        Values are what the layer was given (ints, floats, strings, tuples);
        an activation function or a regularizer object is given by its name (an
        activation by Keras's canonical one: ``"silu"`` for ``"swish"``, ``"linear"`` for None).
        It describes the layer (``TensorBoard(write_graph=True)``, ``to_json``);
        phalanx does not rebuild layers from it.
        """
        config: dict = {"name": self.name, "trainable": self.trainable}
        config["dtype"] = None if self.dtype is None else str(self.dtype)
        for key, value in vars(self).items():
            if key.startswith("_") or key in self._NOT_CONFIG or key in config:
                continue
            if isinstance(value, nnx.Variable):  # add_weight's weights are not arguments
                continue
            if key in _ACTIVATION_KEYS and not isinstance(value, nnx.Module | nnx.Variable):
                config[key] = _activation_config(value)
            elif isinstance(value, bool | int | float | str | type(None)):
                config[key] = value
            elif isinstance(value, tuple) and all(
                isinstance(v, int | float | str | type(None) | tuple) for v in value
            ):
                config[key] = list(value)
            elif isinstance(value, _constraints.Constraint):
                config[key] = _constraints.serialize(value)
            elif callable(value) and not isinstance(value, nnx.Module):
                config[key] = getattr(value, "__name__", type(value).__name__)
        return config

    def __getattr__(self, name: str) -> Any:
        """Keras's weight attributes (``layer.kernel``, ``.bias``, ``.moving_variance`` ...):
        the layer's own weight of that name, a live view as in ``weights``.

        Only called when normal lookup fails, and only for Keras's weight names.
        """
        if name in _WEIGHT_NAMES and not name.startswith("_"):
            built = self.__dict__.get("built")
            if name == "bias" and self.__dict__.get("use_bias") is False:
                return None  # Keras: Dense(use_bias=False).bias is None
            if built is False:
                raise AttributeError(
                    f"You must build the layer before accessing `{name}` (call it on a batch, "
                    "or build the model: model.build((None, ...)))."
                )
            if built:
                prefix = f"{self.__dict__.get('name')}/"
                for weight in self.weights:
                    if weight.path == prefix + name:
                        return weight
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def weights(self) -> list:
        """The layer's weights (trainable, then non-trainable, in Keras's order)."""
        from . import _weights  # _weights imports this module (isinstance(node, Layer))

        return _weights.weight_views(self)

    @property
    def trainable_weights(self) -> list:
        """The weights ``fit`` trains (none when ``trainable`` is False)."""
        return [w for w in self.weights if w.trainable]

    @property
    def non_trainable_weights(self) -> list:
        """The weights ``fit`` does not train (moving statistics, frozen layers)."""
        return [w for w in self.weights if not w.trainable]

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def get_weights(self) -> list[np.ndarray]:
        """The layer's weights as numpy arrays, in Keras's order (kernel, bias, ...)."""
        from . import _weights  # as in weights

        return _weights.get_weights(self)

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Sets the layer's weights from a list in ``get_weights()`` order.

        Raises:
          ValueError: the number of arrays or a shape does not match.
        """
        from . import _weights  # as in weights

        _weights.set_weights(self, weights)

    # -- weights -----------------------------------------------------------------------
    def count_params(self) -> int:
        """Returns the number of weights: trainable (``nnx.Param``) plus ``nnx.BatchStat``."""
        return count_params(self, nnx.Param) + count_params(self, nnx.BatchStat)

    def _cast(self, x: jax.Array) -> jax.Array:
        """Casts an input to the layer's compute dtype (integers become float32, as Keras)."""
        if self.dtype is not None:
            return x.astype(self.dtype)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return x.astype(jnp.float32)
        return x


def _build_rngs() -> nnx.Rngs:
    """The stream of weights created outside a build (``add_weight`` in ``__init__``)."""
    return _RANDOM.build_rngs[-1] if _RANDOM.build_rngs else nnx.Rngs(model_seed())


class _RandomContext(threading.local):
    def __init__(self):
        self.stack: list = []
        self.build_rngs: list = []


_RANDOM = _RandomContext()


@contextlib.contextmanager
def random_context(key: Any, module: nnx.Module):
    """Lets the random layers of ``module`` called without ``rngs=`` draw from ``key``.

    A layer's key is ``fold_in(key, i)`` with ``i`` its position among the
    phalanx layers of ``module`` (graph order), so two dropouts differ and a
    rerun draws the same numbers. ``key`` may also be an ``nnx.Rngs``.
    """
    positions = {}
    for _, node in nnx.iter_graph(module):
        if isinstance(node, Layer) and id(node) not in positions:
            positions[id(node)] = len(positions)
    _RANDOM.stack.append((key, positions))
    try:
        yield
    finally:
        _RANDOM.stack.pop()


@contextlib.contextmanager
def build_context(rngs: nnx.Rngs):
    """Layers built by a call inside this block draw their initial weights from ``rngs``.

    One shared stream, so two layers of the same shape start from different
    weights (a subclassed model's layers are built by its first call).
    """
    _RANDOM.build_rngs.append(rngs)
    try:
        yield
    finally:
        _RANDOM.build_rngs.pop()


def context_key(layer: Layer) -> Any:
    """The key a layer called without ``rngs=`` uses in the current random context, or None."""
    if not _RANDOM.stack:
        return None
    key, positions = _RANDOM.stack[-1]
    if key is None or isinstance(key, nnx.Rngs):
        return key
    return jax.random.fold_in(key, positions.get(id(layer), len(positions)))


def takes_mask(layer: Any) -> bool:
    """True when ``layer.call`` has a ``mask`` argument (a network then passes the mask)."""
    try:
        return "mask" in inspect.signature(layer.call).parameters
    except (TypeError, ValueError):
        return False


def output_mask(layer: Any, inputs: Any, mask: Any) -> Any:
    """The mask a network carries after ``layer`` (None after a layer without masking)."""
    if not getattr(layer, "supports_masking", False):
        return None
    return layer.compute_mask(inputs, mask)


def count_params(module: nnx.Module, variable_type: Any = nnx.Param) -> int:
    """Returns the number of scalars in ``module``'s variables of ``variable_type``."""
    state = nnx.state(module, variable_type)
    return int(sum(np.prod(np.shape(leaf)) for leaf in jax.tree.leaves(state)))
