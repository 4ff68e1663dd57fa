"""Keras 3's other losses: percentage, logarithmic, cosine, probabilistic, hinge, focal, overlap, CTC.

Each is a function with Keras's name and formula (the class/feature axis
reduced, Keras's ``backend.epsilon()`` of 1e-7 where Keras uses it) and a
`Loss` class of the same arguments, defaults and ``get_config``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from ..errors import LossArgumentError
from ._losses import EPSILON, Loss, _aligned, _float, squeeze_or_expand_to_same_rank


def _pair(y_true: Any, y_pred: Any) -> tuple[jax.Array, jax.Array]:
    """``y_pred`` as a float array and ``y_true`` in its dtype (no rank alignment)."""
    y_pred = _float(y_pred)
    return jnp.asarray(y_true).astype(y_pred.dtype), y_pred


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> jax.Array:
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7))`` over the last axis."""
    y_true, y_pred = _aligned(y_true, y_pred)
    diff = jnp.abs((y_true - y_pred) / jnp.maximum(jnp.abs(y_true), EPSILON))
    return 100.0 * jnp.mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> jax.Array:
    """``mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2)`` over the last axis."""
    y_true, y_pred = _aligned(y_true, y_pred)
    first = jnp.log(jnp.maximum(y_pred, EPSILON) + 1.0)
    second = jnp.log(jnp.maximum(y_true, EPSILON) + 1.0)
    return jnp.mean(jnp.square(first - second), axis=-1)


def _l2_normalize(x: jax.Array, axis: int) -> jax.Array:
    square_sum = jnp.sum(jnp.square(x), axis=axis, keepdims=True)
    return x * jax.lax.rsqrt(jnp.maximum(square_sum, 1e-12))


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> jax.Array:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred))`` along ``axis`` (-1 most similar)."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return -jnp.sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


def log_cosh(y_true: Any, y_pred: Any) -> jax.Array:
    """``mean(log(cosh(y_pred - y_true)))`` over the last axis, computed stably as Keras."""
    y_true, y_pred = _aligned(y_true, y_pred)
    x = y_pred - y_true
    return jnp.mean(x + jax.nn.softplus(-2.0 * x) - jnp.log(2.0).astype(x.dtype), axis=-1)


def kl_divergence(y_true: Any, y_pred: Any) -> jax.Array:
    """``sum(y_true * log(y_true / y_pred))`` over the last axis, both clipped to [1e-7, 1]."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true = jnp.clip(y_true, EPSILON, 1.0)
    y_pred = jnp.clip(y_pred, EPSILON, 1.0)
    return jnp.sum(y_true * jnp.log(y_true / y_pred), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> jax.Array:
    """``mean(y_pred - y_true * log(y_pred + 1e-7))`` over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    return jnp.mean(y_pred - y_true * jnp.log(y_pred + EPSILON), axis=-1)


def _hinge_labels(y_true: jax.Array) -> jax.Array:
    """Keras's rule: labels that are all 0 or 1 become -1 or 1; others stay as given."""
    binary = jnp.all((y_true == 0) | (y_true == 1))
    return jnp.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true: Any, y_pred: Any) -> jax.Array:
    """``mean(max(1 - y_true * y_pred, 0))`` over the last axis; labels -1/1 (0/1 converted)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return jnp.mean(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> jax.Array:
    """``mean(max(1 - y_true * y_pred, 0)**2)`` over the last axis; labels -1/1 (0/1 converted)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return jnp.mean(jnp.square(jnp.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true: Any, y_pred: Any) -> jax.Array:
    """``max(neg - pos + 1, 0)`` with ``pos = sum(y_true * y_pred)``, ``neg = max((1 - y_true) * y_pred)``."""
    y_true, y_pred = _pair(y_true, y_pred)
    pos = jnp.sum(y_true * y_pred, axis=-1)
    neg = jnp.max((1.0 - y_true) * y_pred, axis=-1)
    return jnp.maximum(neg - pos + 1.0, 0.0)


def _check_axis(axis: Any) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise LossArgumentError(
            f"`axis` must be of type `int`. Received: axis={axis!r} of type {type(axis)}."
        )
    return axis


def binary_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    apply_class_balancing: bool = False,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> jax.Array:
    """Binary cross-entropy times ``(1 - p_t) ** gamma`` (Lin et al.), averaged along ``axis``."""
    y_true, y_pred = _pair(y_true, y_pred)
    _check_same_shape("binary_focal_crossentropy", y_true.shape, y_pred.shape)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = jax.nn.sigmoid(y_pred)
    p = jnp.clip(y_pred, EPSILON, 1.0 - EPSILON)
    bce = -(y_true * jnp.log(p) + (1.0 - y_true) * jnp.log(1.0 - p))
    p_t = y_true * y_pred + (1 - y_true) * (1 - y_pred)
    focal = jnp.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1 - y_true) * (1 - alpha)) * focal
    return jnp.mean(focal, axis=axis)


def categorical_focal_crossentropy(
    y_true: Any,
    y_pred: Any,
    alpha: float = 0.25,
    gamma: float = 2.0,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> jax.Array:
    """Categorical cross-entropy times ``alpha * (1 - p) ** gamma``, summed along ``axis``."""
    _check_axis(axis)
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true.shape[-1]
    if from_logits:
        y_pred = jax.nn.softmax(y_pred, axis=axis)
    output = y_pred / jnp.sum(y_pred, axis=axis, keepdims=True)
    output = jnp.clip(output, EPSILON, 1.0 - EPSILON)
    cce = -y_true * jnp.log(output)
    return jnp.sum(jnp.power(1.0 - output, gamma) * alpha * cce, axis=axis)


def dice(y_true: Any, y_pred: Any, axis: Any = None) -> jax.Array:
    """``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + 1e-7)`` over ``axis``.

    ``axis=None`` (Keras's default) sums over everything, the batch too: one
    value for the whole batch. Give the non-batch axes (``axis=(1, 2, 3)``)
    for one value per example.
    """
    y_true, y_pred = _pair(y_true, y_pred)
    axis = tuple(axis) if isinstance(axis, list) else axis
    intersection = jnp.sum(y_true * y_pred, axis=axis)
    total = jnp.sum(y_true, axis=axis) + jnp.sum(y_pred, axis=axis)
    return 1 - 2.0 * intersection / (total + EPSILON)


def tversky(
    y_true: Any, y_pred: Any, alpha: float = 0.5, beta: float = 0.5, axis: Any = None
) -> jax.Array:
    """``1 - TP / (TP + alpha * FP + beta * FN + 1e-7)`` over ``axis`` (``None``: everything)."""
    y_true, y_pred = _pair(y_true, y_pred)
    axis = tuple(axis) if isinstance(axis, list) else axis
    intersection = jnp.sum(y_true * y_pred, axis=axis)
    fp = jnp.sum((1 - y_pred) * y_true, axis=axis)
    fn = jnp.sum(y_pred * (1 - y_true), axis=axis)
    return 1 - intersection / (intersection + fp * alpha + fn * beta + EPSILON)


def ctc(y_true: Any, y_pred: Any) -> jax.Array:
    """Connectionist temporal classification loss (``optax.ctc_loss``), one value per sequence.

    Args:
      y_true: integer labels ``(batch, max_length)``; 0 is the blank and pads the end.
      y_pred: logits ``(batch, time, num_classes)`` (not softmaxed).
    """
    y_true, y_pred = jnp.asarray(y_true), _float(y_pred)
    if y_true.ndim != 2:
        raise LossArgumentError(
            "Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` "
            f"in integer format. Received: y_true.shape={y_true.shape}"
        )
    if y_pred.ndim != 3:
        raise LossArgumentError(
            "Logits `y_pred` are expected to be a tensor of shape `(batch_size, max_length, "
            f"num_classes)`. Received: y_pred.shape={y_pred.shape}"
        )
    labels = y_true.astype(jnp.int32)
    label_length = jnp.sum(labels != 0, axis=-1)
    label_paddings = (jnp.arange(labels.shape[1]) >= label_length[:, None]).astype(y_pred.dtype)
    logit_paddings = jnp.zeros(y_pred.shape[:2], y_pred.dtype)
    return optax.ctc_loss(y_pred, logit_paddings, labels, label_paddings, blank_id=0)


def _check_same_shape(name: str, t: tuple, p: tuple) -> None:
    if len(t) == len(p) and all(a == b for a, b in zip(t, p, strict=True)):
        return
    raise LossArgumentError(
        f"{name}: arguments `target` and `output` must have the same shape, as Keras 3 "
        f"requires. Received: target.shape={t}, output.shape={p}. Give y the model's output "
        "shape."
    )


# -- classes ---------------------------------------------------------------------------------
class _Wrapper(Loss):
    """A Keras loss class around one of the functions above, with its keyword arguments."""

    fn: Any = None
    default_name = ""
    align = True  # Keras's LossFunctionWrapper aligns the ranks first (squeeze or expand)
    # A loss of the whole batch (Dice(axis=None)) reduces as Keras: "none" and the means give
    # that one value, weights multiply it per example.
    spread_scalar = False

    def __init__(self, *, name=None, reduction="sum_over_batch_size", dtype=None, **kwargs):
        super().__init__(name=name or self.default_name, reduction=reduction, dtype=dtype)
        self._fn_kwargs = kwargs
        for key, value in kwargs.items():
            setattr(self, key, value)

    def call(self, y_true, y_pred, logits):
        if self.align:
            y_true, y_pred = squeeze_or_expand_to_same_rank(
                jnp.asarray(y_true), jnp.asarray(y_pred)
            )
        return type(self).fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name``, ``reduction`` and the loss's own arguments (and the
        ``dtype`` when not float32)."""
        dtype = {} if self.dtype == "float32" else {"dtype": self.dtype}
        return {"name": self.name, "reduction": self.reduction, **self._fn_kwargs, **dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        """The loss that ``get_config`` described."""
        return cls(**config)


def _loss_class(name: str, fn, doc: str, **defaults):
    """Builds ``class Name(_Wrapper)`` whose ``__init__`` takes ``defaults`` by keyword."""

    def __init__(self, *, name=None, reduction="sum_over_batch_size", dtype=None, **kwargs):
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise LossArgumentError(
                f"{type(self).__name__} got unexpected arguments {sorted(unknown)}; it takes "
                f"{sorted(defaults) + ['name', 'reduction', 'dtype']}."
            )
        _Wrapper.__init__(
            self, name=name, reduction=reduction, dtype=dtype, **{**defaults, **kwargs}
        )

    return type(
        name,
        (_Wrapper,),
        {
            "__doc__": doc,
            "__init__": __init__,
            "fn": staticmethod(fn),
            "default_name": fn.__name__,
            "__module__": __name__,
        },
    )


MeanAbsolutePercentageError = _loss_class(
    "MeanAbsolutePercentageError",
    mean_absolute_percentage_error,
    'Keras\'s ``MeanAbsolutePercentageError`` (``"mape"``): see ``mean_absolute_percentage_error``.',
)
MeanSquaredLogarithmicError = _loss_class(
    "MeanSquaredLogarithmicError",
    mean_squared_logarithmic_error,
    'Keras\'s ``MeanSquaredLogarithmicError`` (``"msle"``): see ``mean_squared_logarithmic_error``.',
)
CosineSimilarity = _loss_class(
    "CosineSimilarity",
    cosine_similarity,
    "Keras's ``CosineSimilarity(axis=-1)``: see ``cosine_similarity``.",
    axis=-1,
)
LogCosh = _loss_class("LogCosh", log_cosh, "Keras's ``LogCosh``: see ``log_cosh``.")
KLDivergence = _loss_class(
    "KLDivergence", kl_divergence, 'Keras\'s ``KLDivergence`` (``"kld"``): see ``kl_divergence``.'
)
Poisson = _loss_class("Poisson", poisson, "Keras's ``Poisson``: see ``poisson``.")
Hinge = _loss_class("Hinge", hinge, "Keras's ``Hinge``: see ``hinge``.")
SquaredHinge = _loss_class("SquaredHinge", squared_hinge, "Keras's ``SquaredHinge``.")
CategoricalHinge = _loss_class(
    "CategoricalHinge", categorical_hinge, "Keras's ``CategoricalHinge``."
)
BinaryFocalCrossentropy = _loss_class(
    "BinaryFocalCrossentropy",
    binary_focal_crossentropy,
    "Keras's ``BinaryFocalCrossentropy``: see ``binary_focal_crossentropy``.",
    apply_class_balancing=False,
    alpha=0.25,
    gamma=2.0,
    from_logits=False,
    label_smoothing=0.0,
    axis=-1,
)
CategoricalFocalCrossentropy = _loss_class(
    "CategoricalFocalCrossentropy",
    categorical_focal_crossentropy,
    "Keras's ``CategoricalFocalCrossentropy``: see ``categorical_focal_crossentropy``.",
    alpha=0.25,
    gamma=2.0,
    from_logits=False,
    label_smoothing=0.0,
    axis=-1,
)
Dice = _loss_class("Dice", dice, "Keras's ``Dice(axis=None)``: see ``dice``.", axis=None)
Tversky = _loss_class(
    "Tversky", tversky, "Keras's ``Tversky``: see ``tversky``.", alpha=0.5, beta=0.5, axis=None
)
CTC = _loss_class("CTC", ctc, "Keras's ``CTC``: see ``ctc``.")
CTC.align = False
CTC.check_shapes = lambda self, t, p: (
    None
    if len(t) == 1 and len(p) == 2
    else "CTC takes labels (batch, max_length) and logits (batch, time, classes)."
)

#: The classes above, for ``losses.get`` (names and functions).
CLASSES = (
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    CosineSimilarity,
    LogCosh,
    KLDivergence,
    Poisson,
    Hinge,
    SquaredHinge,
    CategoricalHinge,
    BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy,
    Dice,
    Tversky,
    CTC,
)
