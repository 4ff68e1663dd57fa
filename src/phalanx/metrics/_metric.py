"""The metric protocol: pure, additive accumulator states that compiled steps carry.

A phalanx metric is an immutable configuration object with four pure pieces:

* ``metric.init() -> state``: a dict of float32 arrays of fixed shapes (zeros);
* ``metric.update(state, y_true, y_pred, sample_weight=None) -> state``
  (jittable; ``Mean.update(state, values, sample_weight=None)`` for the loss);
* ``metric.result(state) -> scalar`` (jittable; NaN-free: 0 when nothing was counted);
* ``metric.name``: the key under which ``fit`` logs it.

States are **additive**: ``update(s, batch) == s + update(init(), batch)``
leaf by leaf, and the increments of disjoint pieces of a batch add up to the
increment of the whole batch. So a step computes each replica's increment
``update(init(), y, y_pred, w)``, sums it over replicas (``lax.psum``) and
adds it to the carried state: the result equals one device's over the same
examples, including non-decomposable metrics (AUC, precision), whose states
are confusion-matrix counts. `merge_states` adds two states.

A ``sample_weight`` of 0 removes an example entirely (from totals, counts and
AUC buckets), even when its prediction is not finite: that is how padded
examples of a partial last batch are masked.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ..errors import StatefulAPIError
from ..losses import squeeze_or_expand_to_same_rank

State = dict[str, jax.Array]


def merge_states(a: Any, b: Any) -> Any:
    """Adds two metric states (or tuples of states) leaf by leaf.

    Examples:
      >>> import jax.numpy as jnp
      >>> merge_states({"total": jnp.float32(1)}, {"total": jnp.float32(2)})["total"].item()
      3.0
    """
    return jax.tree.map(jnp.add, a, b)


def _broadcast_weight(weight: jax.Array, shape: tuple) -> jax.Array:
    if weight.ndim < len(shape):
        weight = weight.reshape(weight.shape + (1,) * (len(shape) - weight.ndim))
    return jnp.broadcast_to(weight, shape)


def masked_product(values: jax.Array, weight: jax.Array) -> jax.Array:
    """``values * weight`` where ``weight != 0``, else exactly 0 (NaN values included)."""
    return jnp.where(weight != 0, values * weight, jnp.zeros_like(values))


def check_name(name: Any, default: str, owner: str) -> str:
    """A metric's name: ``name`` when a string, ``default`` for None; anything else raises."""
    if name is None:
        return default
    if not isinstance(name, str):
        raise TypeError(
            f"{owner}'s name must be a string (Keras's order: {owner}(name, dtype, ...)), got "
            f"{type(name).__name__} {name!r}. Pass other options by keyword, e.g. "
            "BinaryAccuracy(threshold=0.7)."
        )
    return name


def check_dtype(dtype: Any, owner: str) -> Any:
    """A metric's ``dtype``: None or a floating dtype (its accumulators are float32)."""
    if dtype is None:
        return None
    try:
        resolved = jnp.dtype(getattr(dtype, "as_numpy_dtype", dtype))
    except TypeError:
        resolved = None
    if resolved is None or not jnp.issubdtype(resolved, jnp.floating):
        raise TypeError(
            f"{owner}'s dtype must be a floating dtype such as 'float32', got {dtype!r}."
        )
    return resolved


class Metric:
    """Base class of phalanx metrics: a name and pure ``init``/``update``/``result``.

    Subclasses define ``init`` and ``increment`` (a batch's contribution to
    the state) and ``result``; ``update`` adds the increment.

    Args:
      dtype: accepted as Keras's (a floating dtype); the accumulators and
        results are float32 whatever it says (states are summed over replicas).
      name: the logged name; default the class's Keras name.
    """

    default_name = "metric"

    def __init__(self, dtype: Any = None, name: str | None = None):
        self.name = check_name(name, self.default_name, type(self).__name__)
        self.dtype = check_dtype(dtype, type(self).__name__)

    def init(self) -> State:
        """Returns the empty state: float32 zeros of fixed shapes."""
        raise NotImplementedError

    def increment(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:
        """Returns one batch's contribution to the state."""
        raise NotImplementedError

    def update(self, state: State, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:
        """Returns ``state`` plus this batch's contribution (pure, jittable).

        Args:
          state: a state from ``init`` or ``update``.
          y_true: targets, leading batch axis.
          y_pred: predictions, leading batch axis.
          sample_weight: None, or per-example weights ``[batch]`` (0 masks an example).

        Returns:
          The new state, with ``state``'s structure, shapes and dtypes.
        """
        return merge_states(state, self.increment(y_true, y_pred, sample_weight))

    def result(self, state: State) -> jax.Array:
        """Returns the metric's value for ``state`` as a float32 scalar."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name``, ``dtype`` and the constructor's arguments as given."""
        config: dict[str, Any] = {"name": self.name, "dtype": _dtype_name(self.dtype)}
        for param in inspect.signature(type(self).__init__).parameters.values():
            if param.name in ("self", "name", "dtype") or param.kind in (
                param.VAR_POSITIONAL,
                param.VAR_KEYWORD,
            ):
                continue
            config[param.name] = self._config_value(param.name)
        return config

    def _config_value(self, key: str) -> Any:
        """The argument ``key`` as the constructor got it (``_init_<key>`` when parsed)."""
        for attribute in (f"_init_{key}", key):
            if attribute in self.__dict__:
                return self.__dict__[attribute]
        kwargs = self.__dict__.get("kwargs", {})
        if key in kwargs:
            return kwargs[key]
        raise AttributeError(f"{type(self).__name__} keeps no {key!r} for get_config")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        """The metric ``get_config`` described (Keras's ``from_config``)."""
        return cls(**config)

    # -- Keras 3's stateless API (an overridden train_step/test_step calls it) ----

    @property
    def variables(self) -> list[jax.Array]:
        """The state's leaves as a list, as zeros: their number and shapes (Keras's
        ``metric.variables``, for slicing a flat ``metrics_variables``). No value lives
        here: the values are what an overridden step carries."""
        return jax.tree.leaves(self.init())

    def stateless_update_state(self, metric_variables: Any, *args: Any, **kwargs: Any) -> Any:
        """Keras's ``stateless_update_state``: ``update`` on a state given as a list of leaves.

        Args:
          metric_variables: this metric's leaves (a slice of ``metrics_variables``,
            ``len(metric.variables)`` long) or its state dict.
          *args: what ``update`` takes after the state (``y_true, y_pred``; ``Mean``: values).
          **kwargs: ``sample_weight``.

        Returns:
          The new leaves, in the form given (a list, or a dict).
        """
        state = self._as_state(metric_variables)
        new = self.update(state, *args, **kwargs)
        return new if isinstance(metric_variables, dict) else jax.tree.leaves(new)

    def stateless_result(self, metric_variables: Any) -> jax.Array:
        """Keras's ``stateless_result``: ``result`` of a state given as a list of leaves."""
        return self.result(self._as_state(metric_variables))

    def stateless_reset_state(self) -> list[jax.Array]:
        """Keras's ``stateless_reset_state``: the empty state's leaves."""
        return self.variables

    def _as_state(self, metric_variables: Any) -> State:
        if isinstance(metric_variables, dict):
            return metric_variables
        empty = self.init()
        leaves, treedef = jax.tree.flatten(empty)
        given = list(metric_variables) if isinstance(metric_variables, list | tuple) else None
        if given is None or len(given) != len(leaves):
            got = type(metric_variables).__name__
            size = f" of {len(given)}" if given is not None else ""
            raise ValueError(
                f"{type(self).__name__} {self.name!r} keeps {len(leaves)} state variables, "
                f"got a {got}{size}. Pass its slice of metrics_variables: "
                "metrics_variables[start:start + len(metric.variables)]."
            )
        return jax.tree.unflatten(treedef, given)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def __getattr__(self, name: str) -> Any:
        if name in _KERAS_STATEFUL:
            raise StatefulAPIError(
                f"{type(self).__name__}.{name}: phalanx metrics keep no state in the object "
                "(JAX steps are pure functions); the state is a value you carry. Keras's "
                "update_state/result()/reset_state become: state = metric.init(); inside the "
                "step state = metric.update(state, y_true, y_pred) (under strategy.run, add "
                "ctx.all_reduce('sum', metric.increment(y_true, y_pred)) to count every "
                "replica); float(metric.result(state)); reset with state = metric.init(). "
                "examples/custom_loop.py shows it; model.compile(metrics=[...]) does it for you."
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


_KERAS_STATEFUL = frozenset(
    {"update_state", "reset_state", "reset_states", "merge_state", "count", "total"}
)


def _dtype_name(dtype: Any) -> str:
    return "float32" if dtype is None else jnp.dtype(dtype).name


def _samplewise(values: Any, sample_weight: Any) -> tuple[jax.Array, jax.Array]:
    """Keras's ``reduce_to_samplewise_values``: per-sample weighted values and weights."""
    values = jnp.asarray(values, jnp.float32)
    if values.ndim == 0:
        values = values[None]
    if sample_weight is None:
        weight = jnp.ones(values.shape[:1], jnp.float32)
    else:
        weight = jnp.asarray(sample_weight, jnp.float32)
        values, weight = squeeze_or_expand_to_same_rank(values, weight)
        if values.ndim > weight.ndim:
            values = jnp.mean(values, axis=tuple(range(max(weight.ndim, 1), values.ndim)))
        weight = _broadcast_weight(weight, values.shape) if weight.ndim else weight
        values = masked_product(values, weight)
        if weight.ndim > 1:
            weight = jnp.mean(weight, axis=tuple(range(1, weight.ndim)))
        if weight.ndim == 0:
            weight = jnp.broadcast_to(weight, values.shape[:1])
    if values.ndim > 1:
        values = jnp.mean(values, axis=tuple(range(1, values.ndim)))
    return values, weight


class Mean(Metric):
    """The weighted mean of values (the loss tracker, and the base of function metrics).

    State: ``total`` (sum of per-example values times weights) and ``count``
    (sum of per-example weights). Values with more than one axis are first
    averaged per example, as Keras.

    Args:
      name: default ``"mean"``.
      dtype: a floating dtype, as Keras's (the state is float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> m = Mean()
      >>> state = m.update(m.init(), jnp.array([1.0, 3.0, 5.0, 7.0]))
      >>> m.result(state).item()
      4.0
      >>> m.result(m.update(m.init(), jnp.array([1.0, 3.0, 5.0, 7.0]),
      ...                   sample_weight=jnp.array([1.0, 1.0, 0.0, 0.0]))).item()
      2.0
    """

    default_name = "mean"

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(dtype=dtype, name=name)

    def init(self) -> State:
        return {"total": jnp.zeros((), jnp.float32), "count": jnp.zeros((), jnp.float32)}

    def increment(self, values: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        """Returns the contribution of ``values`` (optionally weighted)."""
        values, weight = _samplewise(values, sample_weight)
        return {"total": jnp.sum(values), "count": jnp.sum(weight)}

    def update(self, state: State, values: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        """Returns ``state`` plus the weighted ``values`` (Keras's ``Mean.update_state``)."""
        return merge_states(state, self.increment(values, sample_weight))

    def result(self, state: State) -> jax.Array:
        count = state["count"]
        return jnp.where(count == 0, 0.0, state["total"] / jnp.where(count == 0, 1.0, count))


class MeanMetricWrapper(Mean):
    """The mean over examples of ``fn(y_true, y_pred, **kwargs)`` (Keras's wrapper).

    Args:
      fn: a function returning one value per example (or per element), or one
        value for the batch (a scalar, counted as one sample, as Keras).
      name: default ``fn.__name__``.
      dtype: a floating dtype, as Keras's (the state is float32).
      **kwargs: passed to ``fn``.

    Examples:
      >>> import jax.numpy as jnp
      >>> m = MeanMetricWrapper(lambda t, p: jnp.abs(t - p), name="abs")
      >>> m.result(m.update(m.init(), jnp.array([1.0, 2.0]), jnp.array([1.0, 4.0]))).item()
      1.0
    """

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric"), dtype=dtype)
        self.fn = fn
        self.kwargs = kwargs

    def increment(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        y_true, y_pred = squeeze_or_expand_to_same_rank(jnp.asarray(y_true), jnp.asarray(y_pred))
        values = self.fn(y_true, y_pred, **self.kwargs)
        if jnp.ndim(values) == 0:  # one value for the batch (a Python float too): one sample,
            # as Keras's Mean; a batch (a replica's piece) of padding only does not count.
            seen = jnp.float32(1.0)
            if sample_weight is not None:
                seen = jnp.any(jnp.asarray(sample_weight) > 0).astype(jnp.float32)
            value = jnp.asarray(values, jnp.float32)
            return {"total": jnp.where(seen > 0, value, 0.0), "count": seen}
        return super().increment(values, sample_weight)

    def update(self, state: State, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        """Returns ``state`` plus the batch's mean-of-``fn`` contribution."""
        return merge_states(state, self.increment(y_true, y_pred, sample_weight))

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name``, ``dtype``, ``fn`` (the function itself; Keras writes its
        serialized form) and ``fn``'s keyword arguments."""
        config = super().get_config()
        if type(self) is MeanMetricWrapper:
            config.update(self.kwargs)
        return config


def apply_output_mask(metric: Any, sample_weight: Any, output_mask: Any) -> Any:
    """The sample weight a compiled ``metric`` updates with, given a model output's Keras mask.

    Keras 3's ``MeanMetricWrapper.update_state`` (the accuracies, ``"mse"``, a
    function's mean) merges ``y_pred``'s mask into the sample weights, so its
    result is ``sum(value * weight * mask) / sum(weight * mask)`` over the
    entries; the other metrics (``Precision``, ``AUC``, ``RootMeanSquaredError``,
    ``Sum``, ...) do not read the mask.

    Args:
      metric: the compiled metric.
      sample_weight: its weight of each example, ``[batch]`` (0 for padding).
      output_mask: the output's mask, ``[batch, ...]``, or None.

    Returns:
      ``sample_weight`` unchanged (None mask, or a metric that ignores masks), or
      its product with the mask, of the mask's shape.
    """
    if output_mask is None or not isinstance(metric, MeanMetricWrapper):
        return sample_weight
    keep = jnp.asarray(output_mask, jnp.float32)
    weight = jnp.asarray(sample_weight, jnp.float32)
    return weight.reshape(weight.shape + (1,) * (keep.ndim - weight.ndim)) * keep
