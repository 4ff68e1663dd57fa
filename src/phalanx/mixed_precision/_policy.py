"""Mixed precision: Keras's dtype policies and dynamic loss scaling.

A policy names the dtype a model computes in and the dtype its variables are
kept in (Keras's ``keras.mixed_precision``):

======================  ===============  ================
policy                  compute dtype    variable dtype
======================  ===============  ================
``"float32"``           float32          float32
``"mixed_bfloat16"``    bfloat16         float32
``"mixed_float16"``     float16          float32
======================  ===============  ================

Under a mixed policy ``fit``, ``evaluate`` and ``predict`` run the forward and
backward passes in the compute dtype: the float32 master weights are cast to
it where the step reads them, and the model's outputs, the loss and the
metrics are float32 again (``_step._forward``, the mechanism ``TPUStrategy``'s
bfloat16 default uses: that default is the ``mixed_bfloat16`` policy). The
optimizer's state and update stay float32.

``mixed_float16`` needs loss scaling (float16 gradients underflow): ``compile``
wraps the optimizer in ``LossScaleOptimizer``, as Keras does. Its state holds
the scale; the training step multiplies the loss by it before
differentiating (``loss_scale``), and its update divides the gradients by it,
skips the step (weights and optimizer state unchanged) when a gradient is not
finite and halves the scale (no floor, as Keras 3), and doubles the scale after
``dynamic_growth_steps`` finite steps in a row.

The policy a model computes in is the global policy when its training state
is made (its first ``fit``/``evaluate``/``predict`` after ``compile``); set
it before building the model, as in Keras.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from .. import optimizers

_COMPUTE = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


class Policy:
    """A dtype policy (Keras's ``keras.mixed_precision.Policy`` / ``DTypePolicy``).

    Args:
      name: ``"float32"``, ``"mixed_bfloat16"`` or ``"mixed_float16"``.

    Raises:
      ValueError: another name (phalanx keeps variables in float32: ``"bfloat16"``
        and ``"float16"`` policies, whose variables are low precision too, are not
        offered).

    Examples:
      >>> p = Policy("mixed_bfloat16")
      >>> p.compute_dtype, p.variable_dtype
      ('bfloat16', 'float32')
    """

    def __init__(self, name: str):
        if isinstance(name, Policy):
            name = name.name
        if not isinstance(name, str) or name not in _COMPUTE:
            raise ValueError(
                f"Unknown dtype policy {name!r}: expected one of {sorted(_COMPUTE)}. "
                "phalanx keeps variables in float32; use 'mixed_bfloat16' (TPUs, recent "
                "GPUs, CPUs) or 'mixed_float16' (GPUs, with loss scaling) to compute in 16 bits."
            )
        self._name = name

    @property
    def name(self) -> str:
        """The policy's name."""
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype of the forward and backward passes."""
        return _COMPUTE[self._name]

    @property
    def variable_dtype(self) -> str:
        """The dtype of the weights and optimizer state: always float32."""
        return "float32"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f'<Policy "{self._name}">'


_lock = threading.Lock()
_process_policy = [Policy("float32")]  # one per process, as Keras's global policy


def set_global_policy(policy: Policy | str | None) -> None:
    """Sets the dtype policy of models made from now on (Keras's ``set_global_policy``).

    Args:
      policy: a ``Policy``, its name, or None for ``"float32"``.

    Raises:
      ValueError: an unknown policy name.

    Examples:
      >>> set_global_policy("mixed_bfloat16")
      >>> global_policy().compute_dtype
      'bfloat16'
      >>> set_global_policy("float32")
    """
    with _lock:
        _process_policy[0] = Policy("float32" if policy is None else policy)


def global_policy() -> Policy:
    """The global dtype policy (``"float32"`` unless ``set_global_policy`` changed it)."""
    return _process_policy[0]


def compute_dtype(strategy: Any) -> Any:
    """The ``jnp`` dtype ``fit`` computes in for a model trained under ``strategy``, or None
    for float32: the global policy's, else the strategy's (``TPUStrategy``: bfloat16)."""
    policy = global_policy()
    name = policy.compute_dtype
    if name == "float32":
        name = getattr(strategy, "compute_dtype", None) or "float32"
    return None if name == "float32" else jnp.dtype(name)


_POLICY_OF_DTYPE = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def policy_name_of(dtype: Any) -> str:
    """The policy name a layer's ``dtype=`` stands for: a policy's own name; a float dtype
    the policy computing in it (weights stay float32); None the global policy now.

    Examples:
      >>> policy_name_of("bfloat16"), policy_name_of(Policy("mixed_float16"))
      ('mixed_bfloat16', 'mixed_float16')
    """
    if dtype is None:
        return global_policy().name
    if isinstance(dtype, Policy):
        return dtype.name
    if isinstance(dtype, str) and dtype in _COMPUTE:
        return dtype
    return _POLICY_OF_DTYPE.get(jnp.dtype(getattr(dtype, "as_numpy_dtype", dtype)).name, "float32")


def layer_dtype(dtype: Any) -> Any:
    """A layer's ``dtype=`` as the ``jnp`` dtype it computes in: a policy (or its name)
    gives its compute dtype (weights stay float32), a dtype name itself.

    Examples:
      >>> str(layer_dtype("mixed_bfloat16")), str(layer_dtype("float32"))
      ('bfloat16', 'float32')
    """
    if isinstance(dtype, Policy):
        return jnp.dtype(dtype.compute_dtype)
    if isinstance(dtype, str) and dtype in _COMPUTE:
        return jnp.dtype(_COMPUTE[dtype])
    return jnp.dtype(dtype)


# -- dynamic loss scaling ----------------------------------------------------------------


class LossScaleState(NamedTuple):
    """``LossScaleOptimizer``'s state: the scale, finite steps in a row, the inner state."""

    scale: jax.Array
    good_steps: jax.Array
    inner: Any


class LossScaleOptimizer:
    """Dynamic loss scaling around an optimizer (Keras's ``LossScaleOptimizer``).

    ``fit`` multiplies the loss by ``scale`` before differentiating; this
    optimizer divides the gradients by it, and when any is not finite skips
    the step (no change to the weights or the inner state) and halves the
    scale; after ``dynamic_growth_steps`` finite steps in a row it doubles it.

    Args:
      inner_optimizer: a phalanx optimizer, a Keras name, or an optax transformation.
      initial_scale: the first scale (Keras: 2**15).
      dynamic_growth_steps: finite steps between doublings (Keras: 2000).

    Raises:
      ValueError: ``initial_scale`` or ``dynamic_growth_steps`` not positive.

    In a custom loop (Keras's ``scale_loss`` then ``apply``): ``opt_state =
    opt.init(params)``; differentiate ``opt.scale_loss(loss, opt_state)``; then
    ``updates, opt_state = opt.update(grads, opt_state, params)`` unscales the
    gradients, skips a non-finite step and adapts the scale
    (``opt.dynamic_scale(opt_state)``).

    Examples:
      >>> import jax.numpy as jnp
      >>> opt = LossScaleOptimizer("sgd", initial_scale=8.0)
      >>> tx = opt.to_optax()
      >>> state = tx.init({"w": jnp.zeros(2)})
      >>> updates, state = tx.update({"w": jnp.array([jnp.inf, 0.0])}, state, {"w": jnp.zeros(2)})
      >>> updates["w"].tolist(), float(state.scale)  # skipped, scale halved
      ([0.0, 0.0], 4.0)
    """

    def __init__(
        self, inner_optimizer: Any, initial_scale: float = 2.0**15, dynamic_growth_steps: int = 2000
    ):
        if not (isinstance(initial_scale, int | float) and initial_scale > 0):
            raise ValueError(f"initial_scale must be a positive number, got {initial_scale!r}.")
        if isinstance(dynamic_growth_steps, bool) or not (
            isinstance(dynamic_growth_steps, int) and dynamic_growth_steps > 0
        ):
            raise ValueError(
                f"dynamic_growth_steps must be a positive int, got {dynamic_growth_steps!r}."
            )
        self.inner_optimizer = optimizers.get(inner_optimizer)
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = dynamic_growth_steps
        self._tx = None

    def __getattr__(self, name: str) -> Any:  # learning_rate, name, ... of the inner one
        if name.startswith("_") or name == "inner_optimizer":
            raise AttributeError(name)
        return getattr(self.inner_optimizer, name)

    def _bind_model(self, model: Any) -> None:
        """``compile``: the inner optimizer reads its ``iterations`` from ``model``."""
        if isinstance(self.inner_optimizer, optimizers.Optimizer):  # not an optax transform
            self.inner_optimizer._bind_model(model)

    def init(self, params: Any) -> LossScaleState:
        """``to_optax().init(params)``: the scale, its counter and the inner state."""
        return self.to_optax().init(params)

    def update(self, grads: Any, state: LossScaleState, params: Any = None) -> tuple[Any, Any]:
        """Unscales ``grads`` (gradients of ``scale_loss``'s loss) and updates, as Keras's
        ``apply``: a non-finite step changes nothing but halves the scale."""
        return self.to_optax().update(grads, state, params)

    def scale_loss(self, loss: Any, opt_state: Any = None) -> Any:
        """``loss`` times the current scale (Keras's ``scale_loss``); differentiate this.

        Raises:
          TypeError: no ``opt_state`` (phalanx keeps the scale in the state, not here).
        """
        scale = loss_scale(opt_state)
        if scale is None:
            raise TypeError(
                "LossScaleOptimizer.scale_loss(loss, opt_state): pass the optimizer state "
                "(from opt.init(params) / opt.update(...)); the scale lives in it, not in the "
                f"optimizer object. Got opt_state={type(opt_state).__name__}."
            )
        return loss * scale.astype(getattr(loss, "dtype", scale.dtype))

    @staticmethod
    def dynamic_scale(opt_state: Any) -> Any:
        """The current loss scale in ``opt_state`` (Keras's ``dynamic_scale``)."""
        return loss_scale(opt_state)

    def _inner_tx(self) -> optax.GradientTransformation:
        inner = self.inner_optimizer
        return inner if isinstance(inner, optax.GradientTransformation) else inner.to_optax()

    def to_optax(self) -> optax.GradientTransformation:
        """The optax transformation; its state is a ``LossScaleState``."""
        if self._tx is None:
            self._tx = _loss_scaled(self._inner_tx(), self.initial_scale, self.dynamic_growth_steps)
        return self._tx

    def get_config(self) -> dict:
        """Keras's config: the inner optimizer's and the scaling's settings."""
        inner = getattr(self.inner_optimizer, "get_config", lambda: {})()
        return {
            "inner_optimizer": inner,
            "initial_scale": self.initial_scale,
            "dynamic_growth_steps": self.dynamic_growth_steps,
        }

    def __repr__(self) -> str:
        return f"LossScaleOptimizer({self.inner_optimizer!r})"


def _loss_scaled(inner: optax.GradientTransformation, initial: float, growth: int):
    def init(params):
        return LossScaleState(
            jnp.asarray(initial, jnp.float32), jnp.zeros((), jnp.int32), inner.init(params)
        )

    def update(grads, state, params=None):
        grads = jax.tree.map(lambda g: g.astype(jnp.float32) / state.scale, grads)
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))
        safe = jax.tree.map(lambda g: jnp.where(finite, g, 0.0), grads)
        updates, inner_state = inner.update(safe, state.inner, params)
        updates = jax.tree.map(lambda u: jnp.where(finite, u, jnp.zeros_like(u)), updates)
        inner_state = jax.tree.map(
            lambda new, old: jnp.where(finite, new, old), inner_state, state.inner
        )
        good = jnp.where(finite, state.good_steps + 1, 0)
        grow = good >= growth
        scale = jnp.where(
            finite,
            jnp.where(grow, state.scale * 2.0, state.scale),
            state.scale / 2.0,  # Keras 3 halves without a floor
        )
        return updates, LossScaleState(scale, jnp.where(grow, 0, good), inner_state)

    return optax.GradientTransformation(init, update)


def loss_scale(opt_state: Any) -> jax.Array | None:
    """The loss scale held in an optimizer state, or None (no ``LossScaleOptimizer``)."""
    return opt_state.scale if isinstance(opt_state, LossScaleState) else None


def scale_only(opt_state: Any) -> Any:
    """The part of ``opt_state`` the gradient step reads: a ``LossScaleState`` without its
    inner state, or None (the sharded step keeps the optimizer state out of shard_map)."""
    if isinstance(opt_state, LossScaleState):
        return opt_state._replace(inner=None)
    return None


def wrap_for_policy(optimizer: Any) -> Any:
    """``optimizer`` wrapped in ``LossScaleOptimizer`` under ``mixed_float16`` (Keras's
    ``compile`` does the same), unless it is one already."""
    if global_policy().name != "mixed_float16" or isinstance(optimizer, LossScaleOptimizer):
        return optimizer
    return LossScaleOptimizer(optimizer)


class LossScaleOptimizerHandle(optimizers.OptimizerHandle, LossScaleOptimizer):
    """``model.optimizer`` under ``mixed_float16``: a ``LossScaleOptimizer``, as Keras 3's
    (``isinstance`` holds), with the live ``learning_rate``/``iterations`` of the handle and
    the live ``dynamic_scale``; everything else is the wrapped optimizer's."""

    @property
    def dynamic_scale(self) -> float:  # type: ignore[override]
        """The loss scale now (Keras's ``dynamic_scale`` variable)."""
        state = self._model._state
        scale = None if state is None else loss_scale(state.opt_state)
        if scale is None:
            return optimizers.KerasFloat(self._optimizer.initial_scale)
        return optimizers.KerasFloat(jax.device_get(scale))

    def to_optax(self) -> optax.GradientTransformation:
        """The wrapped optimizer's transformation."""
        return self._optimizer.to_optax()

    def get_config(self) -> dict:
        """The wrapped optimizer's config."""
        return self._optimizer.get_config()

    def scale_loss(self, loss: Any, opt_state: Any = None) -> Any:
        """``loss`` times the scale of ``opt_state`` (default: the model's state now)."""
        if opt_state is None and self._model._state is not None:
            opt_state = self._model._state.opt_state
        return self._optimizer.scale_loss(loss, opt_state)
