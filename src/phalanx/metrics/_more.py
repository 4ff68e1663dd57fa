"""Keras 3's regression, probabilistic and hinge metrics, ``RootMeanSquaredError``, ``Sum``
and ``R2Score``.

Each is a mean over examples of a loss function (``MeanMetricWrapper``) with
Keras's name, ``direction`` and ``get_config``; states are additive
(``total``, ``count``), so the compiled step accumulates them over replicas
exactly.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ..losses import _losses, _more, squeeze_or_expand_to_same_rank
from ._metric import Mean, MeanMetricWrapper, Metric, State, merge_states


def _dtype_name(dtype: Any) -> str:
    return "float32" if dtype is None else jnp.dtype(dtype).name


class _KerasMean(MeanMetricWrapper):
    """A ``MeanMetricWrapper`` of a fixed function, with Keras's name, direction and config."""

    fn_of_class: Any = None
    default_name = ""
    direction = "down"
    config_keys: tuple[str, ...] = ()
    fixed: ClassVar[dict[str, Any]] = {}  # Keras arguments taken at their default only, for now

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any):
        for key, default in self.fixed.items():
            value = kwargs.pop(key, default)
            if value != default:
                raise ValueError(
                    f"{type(self).__name__}({key}={value!r}): phalanx takes only {key}={default!r} "
                    "(Keras's default) here for now."
                )
        super().__init__(
            type(self).fn_of_class, name=name or self.default_name, dtype=dtype, **kwargs
        )
        for key, value in kwargs.items():
            setattr(self, key, value)

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name``, ``dtype`` and the metric's own arguments."""
        extra = {key: self.kwargs[key] for key in self.config_keys}
        extra.update(self.fixed)
        return {"name": self.name, "dtype": _dtype_name(self.dtype), **extra}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> _KerasMean:
        """The metric that ``get_config`` described."""
        return cls(**config)


def _metric_cosine_similarity(y_true, y_pred, axis=-1):
    return -_more.cosine_similarity(y_true, y_pred, axis=axis)


def _metric_class(
    name, fn, default_name, doc, *, direction="down", keys=(), fixed=None, **defaults
):
    def __init__(self, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - set(defaults) - set(fixed or ())
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unexpected arguments {sorted(unknown)}; it takes "
                f"{['name', 'dtype', *sorted(defaults)]}."
            )
        _KerasMean.__init__(self, name=name, dtype=dtype, **{**defaults, **kwargs})

    return type(
        name,
        (_KerasMean,),
        {
            "__doc__": doc,
            "__init__": __init__,
            "fn_of_class": staticmethod(fn),
            "default_name": default_name,
            "direction": direction,
            "config_keys": tuple(keys),
            "fixed": dict(fixed or {}),
            "__module__": __name__,
        },
    )


MeanAbsolutePercentageError = _metric_class(
    "MeanAbsolutePercentageError",
    _more.mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
    "The mean absolute percentage error over examples (Keras's metric).",
)
MeanSquaredLogarithmicError = _metric_class(
    "MeanSquaredLogarithmicError",
    _more.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
    "The mean squared logarithmic error over examples (Keras's metric).",
)
CosineSimilarity = _metric_class(
    "CosineSimilarity",
    _metric_cosine_similarity,
    "cosine_similarity",
    "The mean cosine similarity (1: same direction; Keras's metric, the loss's opposite).",
    direction="up",
    axis=-1,
)
LogCoshError = _metric_class(
    "LogCoshError", _more.log_cosh, "logcosh", "The mean log-cosh error (Keras's metric)."
)
KLDivergence = _metric_class(
    "KLDivergence", _more.kl_divergence, "kl_divergence", "The mean KL divergence (Keras's)."
)
Poisson = _metric_class("Poisson", _more.poisson, "poisson", "The mean Poisson loss (Keras's).")
Hinge = _metric_class("Hinge", _more.hinge, "hinge", "The mean hinge loss (Keras's metric).")
SquaredHinge = _metric_class(
    "SquaredHinge", _more.squared_hinge, "squared_hinge", "The mean squared hinge loss."
)
CategoricalHinge = _metric_class(
    "CategoricalHinge", _more.categorical_hinge, "categorical_hinge", "The mean categorical hinge."
)
BinaryCrossentropy = _metric_class(
    "BinaryCrossentropy",
    _losses.binary_crossentropy,
    "binary_crossentropy",
    "The mean binary cross-entropy (Keras's metric).",
    keys=("from_logits", "label_smoothing"),
    from_logits=False,
    label_smoothing=0,
)
CategoricalCrossentropy = _metric_class(
    "CategoricalCrossentropy",
    _losses.categorical_crossentropy,
    "categorical_crossentropy",
    "The mean categorical cross-entropy (Keras's metric).",
    keys=("from_logits", "label_smoothing"),
    fixed={"axis": -1},
    from_logits=False,
    label_smoothing=0,
)
SparseCategoricalCrossentropy = _metric_class(
    "SparseCategoricalCrossentropy",
    _losses.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy",
    "The mean sparse categorical cross-entropy (Keras's metric).",
    keys=("from_logits",),
    fixed={"ignore_class": None, "axis": -1},
    from_logits=False,
)


class RootMeanSquaredError(Mean):
    """The square root of the weighted mean of squared errors (Keras's metric).

    Args:
      name: default ``"root_mean_squared_error"``.
      dtype: a floating dtype, as Keras's (the state is float32).
    """

    default_name = "root_mean_squared_error"
    direction = "down"

    def increment(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        y_true, y_pred = squeeze_or_expand_to_same_rank(
            jnp.asarray(y_true, jnp.float32), jnp.asarray(y_pred, jnp.float32)
        )
        return super().increment(jnp.square(y_pred - y_true), sample_weight)

    def update(self, state: State, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        """Returns ``state`` plus the batch's squared errors."""
        return merge_states(state, self.increment(y_true, y_pred, sample_weight))

    def result(self, state: State) -> jax.Array:
        return jnp.sqrt(super().result(state))

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name`` and ``dtype``."""
        return {"name": self.name, "dtype": _dtype_name(self.dtype)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> RootMeanSquaredError:
        """The metric that ``get_config`` described."""
        return cls(**config)


class Sum(Mean):
    """The weighted sum of values (Keras's ``Sum``; ``update(state, values, sample_weight)``).

    Args:
      name: default ``"sum"``.
      dtype: a floating dtype, as Keras's (the state is float32).
    """

    default_name = "sum"

    def increment(self, values: Any, sample_weight: Any = None) -> State:  # type: ignore[override]
        values = jnp.asarray(values, jnp.float32)
        if sample_weight is not None:
            weight = jnp.asarray(sample_weight, jnp.float32)
            values, weight = squeeze_or_expand_to_same_rank(values, weight)
            values = values * jnp.broadcast_to(
                weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim)), values.shape
            )
        return {"total": jnp.sum(values), "count": jnp.zeros((), jnp.float32)}

    def result(self, state: State) -> jax.Array:
        return state["total"]

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name`` and ``dtype``."""
        return {"name": self.name, "dtype": _dtype_name(self.dtype)}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Sum:
        """The metric that ``get_config`` described."""
        return cls(**config)


class R2Score(Metric):
    """The coefficient of determination (Keras's ``R2Score``), per output then aggregated.

    The state holds, per output, the weighted sums of targets, squared targets
    and squared errors and the weight (additive over replicas and steps).

    Args:
      class_aggregation: ``"uniform_average"`` (default), ``"variance_weighted_average"``
        or None (one score per output).
      num_regressors: the number of independent variables, for the adjusted R2;
        default 0 (plain R2).
      name: default ``"r2_score"``.
      dtype: a floating dtype, as Keras's (the state is float32).
      num_outputs: the targets' last axis; default 1 (phalanx only: Keras reads
        it from the first batch, and a compiled state has a fixed shape).

    Raises:
      ValueError: an argument Keras refuses.
    """

    default_name = "r2_score"
    direction = "up"

    def __init__(
        self,
        class_aggregation: str | None = "uniform_average",
        num_regressors: int = 0,
        name: str | None = None,
        dtype: Any = None,
        num_outputs: int = 1,
    ):
        super().__init__(dtype=dtype, name=name)
        valid = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in valid:
            raise ValueError(
                "Invalid value for argument `class_aggregation`. Expected one of "
                f"{valid}. Received: class_aggregation={class_aggregation}"
            )
        if num_regressors < 0:
            raise ValueError(
                "Invalid value for argument `num_regressors`. Expected a value >= 0. "
                f"Received: num_regressors={num_regressors}"
            )
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_outputs = num_outputs

    def init(self) -> State:
        zeros = jnp.zeros((self.num_outputs,), jnp.float32)
        keys = ("sum", "squared_sum", "residual", "count")
        return {**{k: zeros for k in keys}, "num_samples": jnp.zeros((), jnp.float32)}

    def increment(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> State:
        y_true, y_pred = squeeze_or_expand_to_same_rank(
            jnp.asarray(y_true, jnp.float32), jnp.asarray(y_pred, jnp.float32)
        )
        if y_pred.ndim != 2 or y_true.ndim != 2:
            raise ValueError(
                "R2Score expects 2D inputs with shape (batch_size, output_dim). Received input "
                f"shapes: y_pred.shape={y_pred.shape} and y_true.shape={y_true.shape}."
            )
        if y_true.shape[-1] != self.num_outputs:
            raise ValueError(
                f"R2Score(num_outputs={self.num_outputs}) got targets of shape {y_true.shape}: "
                f"pass num_outputs={y_true.shape[-1]}."
            )
        weight = jnp.ones(y_true.shape[:1], jnp.float32)
        if sample_weight is not None:
            weight = jnp.broadcast_to(jnp.asarray(sample_weight, jnp.float32), weight.shape)
        weight = jnp.broadcast_to(weight[:, None], y_true.shape)
        real = weight != 0
        y_true = jnp.where(real, y_true, 0.0)
        y_pred = jnp.where(real, y_pred, 0.0)
        return {
            "sum": jnp.sum(y_true * weight, axis=0),
            "squared_sum": jnp.sum(y_true * y_true * weight, axis=0),
            "residual": jnp.sum(jnp.square(y_true - y_pred) * weight, axis=0),
            "count": jnp.sum(weight, axis=0),
            "num_samples": jnp.sum(real.astype(jnp.float32)),
        }

    def result(self, state: State) -> jax.Array:
        mean = state["sum"] / state["count"]
        total = state["squared_sum"] - state["sum"] * mean
        raw = 1 - state["residual"] / total
        raw = jnp.where(jnp.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            score = jnp.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = jnp.sum(total * raw) / jnp.sum(total)
        else:
            score = raw
        k, n = self.num_regressors, state["num_samples"]
        if k == 0:
            return score
        adjusted = 1 - (1 - score) * ((n - 1) / (n - k - 1))
        # Keras falls back to the plain score when k >= n - 1 (n: the target elements seen)
        return jnp.where(k >= n - 1, score, adjusted)
