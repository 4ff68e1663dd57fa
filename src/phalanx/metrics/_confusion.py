"""Precision, Recall and AUC: confusion-matrix counts per threshold, as Keras 3 computes them.

Their states are weighted counts of true/false positives/negatives at each
threshold (``y_pred > threshold`` is a positive; targets are cast to bool), so
they add over replicas and steps exactly (see `phalanx.metrics._metric`).
AUC with evenly spaced thresholds puts each prediction in a bucket
(``ceil(p * (n - 1)) - 1``) and accumulates reversed cumulative sums, Keras's
optimized path; its result uses Keras's Riemann sums (ROC: trapezoids; PR:
Davis & Goadrich interpolation) and ``divide_no_nan`` everywhere.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..losses import squeeze_or_expand_to_same_rank
from ._metric import Metric, State, _broadcast_weight

EPSILON = 1e-7
NEG_INF = -1e10


def divide_no_nan(x: jax.Array, y: jax.Array) -> jax.Array:
    """``x / y``, 0 where ``y == 0``."""
    safe = jnp.where(y == 0, 1.0, y)
    return jnp.where(y == 0, 0.0, x / safe)


def _prepare(y_true, y_pred, sample_weight, class_id=None, top_k=None, flat=True):
    """Flattens targets, predictions and weights (unless ``flat=False``); zero weights zero
    their predictions."""
    y_true = jnp.asarray(y_true, jnp.float32)
    y_pred = jnp.asarray(y_pred, jnp.float32)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if sample_weight is None:
        weight = jnp.ones(y_pred.shape, jnp.float32)
    else:
        weight = jnp.asarray(sample_weight, jnp.float32)
        if weight.ndim == y_pred.ndim + 1 and weight.shape[-1] == 1:
            weight = weight[..., 0]
        weight = _broadcast_weight(weight, y_pred.shape)
    if top_k is not None:
        _, idx = jax.lax.top_k(y_pred, top_k)
        keep = jnp.sum(jax.nn.one_hot(idx, y_pred.shape[-1]), axis=-2)
        y_pred = y_pred * keep + NEG_INF * (1 - keep)
    if class_id is not None:
        _check_class_id(class_id, y_pred.shape)
        y_true, y_pred, weight = (a[..., class_id] for a in (y_true, y_pred, weight))
    y_pred = jnp.where(weight != 0, y_pred, 0.0)
    y_true = (y_true != 0).astype(jnp.float32)
    if not flat:
        return y_true, y_pred, weight
    return y_true.ravel(), y_pred.ravel(), weight.ravel()


def _check_class_id(class_id: int, shape: tuple) -> None:
    """``class_id`` indexes the class axis of predictions ``(batch, classes)``, as Keras."""
    if len(shape) == 1:
        raise ValueError(
            "When class_id is provided, y_pred must be a 2D array with shape (num_samples, "
            f"num_classes), found shape: {shape} (as Keras 3). Give predictions a class axis, "
            "or drop class_id for a single output."
        )
    if not -shape[-1] <= class_id < shape[-1]:
        raise ValueError(
            f"class_id={class_id} is not a class of predictions with {shape[-1]} classes "
            f"(shape {shape}). Use 0 <= class_id < {shape[-1]}."
        )


def confusion_counts(y_true, y_pred, weight, thresholds: jax.Array) -> State:
    """Weighted tp/fp/tn/fn at each threshold by comparison (any thresholds)."""
    positive = y_pred[None, :] > thresholds[:, None]
    pos_w = y_true * weight
    neg_w = (1.0 - y_true) * weight
    tp = jnp.sum(jnp.where(positive, pos_w, 0.0), axis=1)
    fp = jnp.sum(jnp.where(positive, neg_w, 0.0), axis=1)
    return {"tp": tp, "fp": fp, "tn": jnp.sum(neg_w) - fp, "fn": jnp.sum(pos_w) - tp}


def bucketed_counts(y_true, y_pred, weight, num_thresholds: int) -> State:
    """Keras's optimized counts for thresholds ``[-eps, 1/(n-1), ..., 1+eps]``."""
    y_pred = jnp.clip(y_pred, 0.0, 1.0)
    bucket = jnp.maximum(jnp.ceil(y_pred * (num_thresholds - 1)) - 1, 0).astype(jnp.int32)
    pos_w = y_true * weight
    neg_w = (1.0 - y_true) * weight
    zeros = jnp.zeros((num_thresholds,), jnp.float32)
    tp = jnp.cumsum(zeros.at[bucket].add(pos_w)[::-1])[::-1]
    fp = jnp.cumsum(zeros.at[bucket].add(neg_w)[::-1])[::-1]
    return {"tp": tp, "fp": fp, "tn": jnp.sum(neg_w) - fp, "fn": jnp.sum(pos_w) - tp}


def _parse_thresholds(thresholds: Any, default: float) -> np.ndarray:
    if thresholds is None:
        thresholds = [default]
    values = np.atleast_1d(np.asarray(thresholds, np.float32))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"thresholds must be a float or a list of floats, got {thresholds!r}.")
    return values


class _ThresholdMetric(Metric):
    keys: tuple[str, ...] = ()
    direction = "up"

    def __init__(
        self,
        thresholds: float | Sequence[float] | None = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(dtype=dtype, name=name)
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else NEG_INF
        self._init_thresholds = thresholds
        self.thresholds = _parse_thresholds(thresholds, default)

    def init(self) -> State:
        return {k: jnp.zeros(self.thresholds.shape, jnp.float32) for k in self.keys}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        prepared = _prepare(y_true, y_pred, sample_weight, self.class_id, self.top_k)
        counts = confusion_counts(*prepared, jnp.asarray(self.thresholds))
        return {k: counts[k] for k in self.keys}

    def _value(self, values: jax.Array) -> jax.Array:
        return values[0] if values.shape == (1,) else values


class Precision(_ThresholdMetric):
    """The fraction of predicted positives (``y_pred > threshold``) that are positive.

    Args:
      thresholds: a float or list of floats in [0, 1]; default 0.5 (or, with
        ``top_k``, every top-k prediction). A list gives one value per threshold.
      top_k: consider only the ``k`` highest predictions of each example.
      class_id: consider only this class (last axis index).
      name: default ``"precision"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> m = Precision()
      >>> round(m.result(m.update(m.init(), jnp.array([0, 1, 1, 1]),
      ...                          jnp.array([1, 0, 1, 1]))).item(), 5)
      0.66667
    """

    default_name = "precision"
    keys = ("tp", "fp")

    def result(self, state: State) -> jax.Array:
        return self._value(divide_no_nan(state["tp"], state["tp"] + state["fp"]))


class Recall(_ThresholdMetric):
    """The fraction of positives predicted positive (``y_pred > threshold``).

    Args:
      thresholds: a float or list of floats in [0, 1]; default 0.5.
      top_k: consider only the ``k`` highest predictions of each example.
      class_id: consider only this class (last axis index).
      name: default ``"recall"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> m = Recall()
      >>> round(m.result(m.update(m.init(), jnp.array([0, 1, 1, 1]),
      ...                          jnp.array([1, 0, 1, 1]))).item(), 5)
      0.66667
    """

    default_name = "recall"
    keys = ("tp", "fn")

    def result(self, state: State) -> jax.Array:
        return self._value(divide_no_nan(state["tp"], state["tp"] + state["fn"]))


class AUC(Metric):
    """Area under the ROC or precision-recall curve, approximated over thresholds (Keras's AUC).

    Multi-class predictions are flattened (each label-prediction pair counts),
    as Keras with ``multi_label=False``; with ``multi_label=True`` each label has
    its own curve and the result is the (``label_weights``-weighted) mean of their
    areas.

    Args:
      num_thresholds: the number of thresholds (> 1); default 200.
      curve: ``"ROC"`` (default), ``"PR"`` or ``"PRGAIN"`` (precision-recall gain).
      summation_method: ``"interpolation"`` (default), ``"minoring"`` or ``"majoring"``.
      thresholds: explicit thresholds in [0, 1] (then ``num_thresholds`` is
        ``len(thresholds) + 2``: ``-eps`` and ``1 + eps`` are added).
      multi_label: one curve per label (last axis), averaged; needs ``num_labels``
        in phalanx (Keras reads it from the first batch).
      num_labels: the number of labels, with ``multi_label``.
      label_weights: a weight per label: in the average with ``multi_label``, on
        each label's pairs without.
      from_logits: apply a sigmoid to predictions first.
      name: default ``"auc"``.
      dtype: a floating dtype, as Keras\'s (the state is float32).

    Examples:
      >>> import jax.numpy as jnp
      >>> m = AUC(num_thresholds=3)
      >>> m.result(m.update(m.init(), jnp.array([0, 0, 1, 1]),
      ...                   jnp.array([0, 0.5, 0.3, 0.9]))).item()
      0.75
    """

    default_name = "auc"
    direction = "up"

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Sequence[float] | None = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ):
        super().__init__(dtype=dtype, name=name)
        if multi_label and num_labels is None:
            raise NotImplementedError(
                "AUC(multi_label=True) needs num_labels= in phalanx (its state has one column "
                "per label, and compiled states have fixed shapes; Keras reads it from the "
                "first batch): e.g. AUC(multi_label=True, num_labels=y.shape[-1])."
            )
        if curve.upper() not in ("ROC", "PR", "PRGAIN"):
            raise ValueError(f"curve must be 'ROC', 'PR' or 'PRGAIN', got {curve!r}.")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(
                "summation_method must be 'interpolation', 'minoring' or 'majoring', "
                f"got {summation_method!r}."
            )
        self.curve = curve.upper()
        self.summation_method = summation_method
        self.from_logits = from_logits
        self.multi_label = multi_label
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else list(np.asarray(label_weights))
        self._init_thresholds = thresholds
        self._evenly = thresholds is None
        if thresholds is None:
            if num_thresholds <= 1:
                raise ValueError(f"num_thresholds must be an int > 1, got {num_thresholds}.")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            inner = sorted(float(t) for t in thresholds)
            num_thresholds = len(inner) + 2
        self.num_thresholds = num_thresholds
        self.thresholds = np.array([0.0 - EPSILON, *inner, 1.0 + EPSILON], np.float32)

    def init(self) -> State:
        shape = (self.num_thresholds,) + ((self.num_labels,) if self.multi_label else ())
        return {k: jnp.zeros(shape, jnp.float32) for k in ("tp", "fp", "tn", "fn")}

    def _counts(self, y_true, y_pred, weight) -> State:
        if self._evenly:
            return bucketed_counts(y_true, y_pred, weight, self.num_thresholds)
        return confusion_counts(y_true, y_pred, weight, jnp.asarray(self.thresholds))

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        y_pred = jnp.asarray(y_pred, jnp.float32)
        if self.from_logits:
            y_pred = jax.nn.sigmoid(y_pred)
        if not self.multi_label:
            if self.label_weights is not None:  # Keras: weights each label's pairs
                sample_weight = _label_weighted(sample_weight, y_pred, self.label_weights)
            return self._counts(*_prepare(y_true, y_pred, sample_weight))
        y_true, y_pred, weight = _prepare(y_true, y_pred, sample_weight, flat=False)
        if y_pred.ndim != 2 or y_pred.shape[-1] != self.num_labels:
            raise ValueError(
                f"AUC(multi_label=True, num_labels={self.num_labels}) expects predictions of "
                f"shape (batch, {self.num_labels}), got {y_pred.shape}."
            )
        return jax.vmap(self._counts, in_axes=1, out_axes=1)(y_true, y_pred, weight)

    def result(self, state: State) -> jax.Array:
        tp, fp, tn, fn = (state[k] for k in ("tp", "fp", "tn", "fn"))
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._over_labels(_interpolate_pr_auc(tp, fp, fn))
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, divide_no_nan(tp, tp + fp)
        else:
            x, y = _precision_recall_gain(tp, fp, tn, fn)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = jnp.minimum(y[:-1], y[1:])
        else:
            heights = jnp.maximum(y[:-1], y[1:])
        return self._over_labels((x[:-1] - x[1:]) * heights)

    def _over_labels(self, terms: jax.Array) -> jax.Array:
        """Keras: the sum of the Riemann terms; with multi_label the (weighted) mean of the
        labels' sums."""
        if not self.multi_label:
            return jnp.sum(terms)
        by_label = jnp.sum(terms, axis=0)
        if self.label_weights is None:
            return jnp.mean(by_label)
        weights = jnp.asarray(self.label_weights, jnp.float32)
        return divide_no_nan(jnp.sum(by_label * weights), jnp.sum(weights))


def _label_weighted(sample_weight, y_pred, label_weights) -> jax.Array:
    """Keras's ``label_weights`` without ``multi_label``: each label's pairs weighted."""
    weights = jnp.broadcast_to(jnp.asarray(label_weights, jnp.float32), y_pred.shape)
    if sample_weight is None:
        return weights
    sample_weight = jnp.asarray(sample_weight, jnp.float32)
    return _broadcast_weight(sample_weight, y_pred.shape) * weights


def _precision_recall_gain(tp, fp, tn, fn) -> tuple[jax.Array, jax.Array]:
    """Keras's PRGAIN coordinates (recall gain, precision gain), with its fixes."""
    scale = divide_no_nan(tp + fn, tn + fp)
    recall_gain = 1.0 - scale * divide_no_nan(fn, tp)
    precision_gain = 1.0 - scale * divide_no_nan(fp, tp)
    recall_gain = jnp.where(tp == 0, 0.0, recall_gain)
    precision_gain = jnp.where(tp == 0, 1.0, precision_gain)
    return jnp.maximum(recall_gain, 0.0), precision_gain


def _interpolate_pr_auc(tp: jax.Array, fp: jax.Array, fn: jax.Array) -> jax.Array:
    """Keras's PR-AUC interpolation (Davis & Goadrich 2006): each interval's area."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = divide_no_nan(dtp, jnp.maximum(dp, 0.0))
    intercept = tp[1:] - slope * p[1:]
    both = (p[:-1] > 0) & (p[1:] > 0)
    ratio = jnp.where(both, divide_no_nan(p[:-1], jnp.maximum(p[1:], 0.0)), 1.0)
    increment = divide_no_nan(
        slope * (dtp + intercept * jnp.log(ratio)), jnp.maximum(tp[1:] + fn[1:], 0.0)
    )
    return increment


def _evenly_spaced(thresholds: np.ndarray) -> bool:
    """Keras's ``is_evenly_distributed_thresholds``: 3 or more, ``i / (n - 1)`` each."""
    n = thresholds.size
    return n >= 3 and bool(np.allclose(thresholds, np.arange(n) / (n - 1), atol=EPSILON))


class _ConditionCount(Metric):
    """The weighted count of one confusion-matrix cell at each threshold (Keras's base)."""

    key = ""

    def __init__(
        self,
        thresholds: float | Sequence[float] | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(dtype=dtype, name=name)
        self._init_thresholds = thresholds
        self.thresholds = _parse_thresholds(thresholds, 0.5)

    def init(self) -> State:
        return {self.key: jnp.zeros(self.thresholds.shape, jnp.float32)}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        prepared = _prepare(y_true, y_pred, sample_weight)
        if _evenly_spaced(self.thresholds):
            counts = bucketed_counts(*prepared, self.thresholds.size)
        else:
            counts = confusion_counts(*prepared, jnp.asarray(self.thresholds))
        return {self.key: counts[self.key]}

    def result(self, state: State) -> jax.Array:
        values = state[self.key]
        return values[0] if values.shape == (1,) else values


def _count_class(cls_name: str, key: str, default_name: str, what: str) -> type:
    doc = f"""The weighted number of {what} (``y_pred > threshold``), as Keras's ``{cls_name}``.

    Args:
      thresholds: a float or list of floats in [0, 1]; default 0.5. A list gives
        one count per threshold.
      name: default ``"{default_name}"``.
      dtype: a floating dtype, as Keras's (the state is float32).
    """
    return type(
        cls_name,
        (_ConditionCount,),
        {"__doc__": doc, "key": key, "default_name": default_name, "__module__": __name__},
    )


TruePositives = _count_class("TruePositives", "tp", "true_positives", "true positives")
FalsePositives = _count_class("FalsePositives", "fp", "false_positives", "false positives")
TrueNegatives = _count_class("TrueNegatives", "tn", "true_negatives", "true negatives")
FalseNegatives = _count_class("FalseNegatives", "fn", "false_negatives", "false negatives")


class _SensitivitySpecificityBase(Metric):
    """Keras's ``SensitivitySpecificityBase``: counts at ``num_thresholds`` even thresholds
    ``[0, 1/(n-1), ..., 1]``, and the best of one rate where another meets ``value``."""

    direction = "up"
    value_name = ""  # the constraint's argument name (recall, precision, ...)

    def __init__(
        self,
        value,
        num_thresholds=200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(dtype=dtype, name=name)
        if not 0 <= value <= 1:
            raise ValueError(
                f"Argument `{self.value_name}` must be in the range [0, 1]. "
                f"Received: {self.value_name}={value}"
            )
        if num_thresholds <= 0:
            raise ValueError(
                "Argument `num_thresholds` must be an integer > 0. "
                f"Received: num_thresholds={num_thresholds}"
            )
        setattr(self, self.value_name, value)
        self.value = value
        self.num_thresholds = num_thresholds
        self.class_id = class_id

    def init(self) -> State:
        size = 1 if self.num_thresholds == 1 else self.num_thresholds
        return {k: jnp.zeros((size,), jnp.float32) for k in ("tp", "fp", "tn", "fn")}

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        prepared = _prepare(y_true, y_pred, sample_weight, self.class_id)
        if self.num_thresholds == 1:
            return confusion_counts(*prepared, jnp.asarray([0.5], jnp.float32))
        return bucketed_counts(*prepared, self.num_thresholds)

    def _best(self, constrained, dependent) -> jax.Array:
        feasible = constrained >= self.value
        return jnp.max(jnp.where(feasible, dependent, 0.0), initial=0.0)

    @staticmethod
    def _rates(state: State) -> dict[str, jax.Array]:
        tp, fp, tn, fn = (state[k] for k in ("tp", "fp", "tn", "fn"))
        return {
            "sensitivity": divide_no_nan(tp, tp + fn),  # = recall
            "specificity": divide_no_nan(tn, tn + fp),
            "precision": divide_no_nan(tp, tp + fp),
        }


def _at_class(cls_name, value_name, best, constrained, default_name, doc) -> type:
    def __init__(
        self,
        value=None,
        num_thresholds=200,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
        **kw,
    ):
        if value_name in kw:
            value = kw.pop(value_name)
        if kw or value is None:
            raise TypeError(
                f"{cls_name}({value_name}, num_thresholds=200, class_id=None, name=None, "
                f"dtype=None): {value_name} is required; got unexpected {sorted(kw)}."
            )
        _SensitivitySpecificityBase.__init__(self, value, num_thresholds, class_id, name, dtype)

    def result(self, state):
        rates = self._rates(state)
        return self._best(rates[constrained], rates[best])

    def get_config(self):
        return {
            "name": self.name,
            "dtype": "float32" if self.dtype is None else jnp.dtype(self.dtype).name,
            "class_id": self.class_id,
            "num_thresholds": self.num_thresholds,
            value_name: self.value,
        }

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
        for n, d in (
            (value_name, inspect.Parameter.empty),
            ("num_thresholds", 200),
            ("class_id", None),
            ("name", None),
            ("dtype", None),
        )
    ]
    __init__.__signature__ = inspect.Signature(params)
    return type(
        cls_name,
        (_SensitivitySpecificityBase,),
        {
            "__doc__": doc,
            "__init__": __init__,
            "result": result,
            "get_config": get_config,
            "value_name": value_name,
            "default_name": default_name,
            "__module__": __name__,
        },
    )


_AT_ARGS = """
    Args:
      {value}: the constraint, in [0, 1].
      num_thresholds: thresholds evenly spaced over [0, 1]; default 200.
      class_id: consider only this class (last axis index).
      name: default ``"{name}"``.
      dtype: a floating dtype, as Keras's (the state is float32).
"""

SensitivityAtSpecificity = _at_class(
    "SensitivityAtSpecificity",
    "specificity",
    "sensitivity",
    "specificity",
    "sensitivity_at_specificity",
    "The best sensitivity where specificity is >= ``specificity`` (Keras's metric).\n"
    + _AT_ARGS.format(value="specificity", name="sensitivity_at_specificity"),
)
SpecificityAtSensitivity = _at_class(
    "SpecificityAtSensitivity",
    "sensitivity",
    "specificity",
    "sensitivity",
    "specificity_at_sensitivity",
    "The best specificity where sensitivity is >= ``sensitivity`` (Keras's metric).\n"
    + _AT_ARGS.format(value="sensitivity", name="specificity_at_sensitivity"),
)
PrecisionAtRecall = _at_class(
    "PrecisionAtRecall",
    "recall",
    "precision",
    "sensitivity",
    "precision_at_recall",
    "The best precision where recall is >= ``recall`` (Keras's metric).\n"
    + _AT_ARGS.format(value="recall", name="precision_at_recall"),
)
RecallAtPrecision = _at_class(
    "RecallAtPrecision",
    "precision",
    "sensitivity",
    "precision",
    "recall_at_precision",
    "The best recall where precision is >= ``precision`` (Keras's metric; 0 when no "
    "threshold reaches it).\n" + _AT_ARGS.format(value="precision", name="recall_at_precision"),
)
