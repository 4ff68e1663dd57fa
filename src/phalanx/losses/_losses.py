"""Keras losses on optax: functions and classes by Keras name, returning per-example values.

The functions (``sparse_categorical_crossentropy(y_true, y_pred)``, ...)
behave as Keras's: they reduce the class/feature axis only. The classes
(``SparseCategoricalCrossentropy(from_logits=False)``, ...) return one value
per example, ``[batch]``, averaging any remaining axes (so a ``[batch, time]``
loss becomes its mean over time, which keeps Keras's ``sum_over_batch_size``
value once the step divides the sum by the global batch size). The training
step scales them: ``sum(per_example * sample_weight) / global_batch_size``.

With ``from_logits=False``, probabilities are clipped to ``[1e-7, 1 - 1e-7]``
as Keras does, unless the network also handed over its logits
(``loss(y_true, y_pred, logits=Logits(...))``, see `phalanx.losses._logits`):
then the cross-entropies are computed from the logits, finite and exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..errors import CompileArgumentError, LossArgumentError, UnknownNameError
from . import _reduction
from ._logits import Logits

EPSILON = 1e-7


class Reduction:
    """tf.keras's names of the reductions (``tf.keras.losses.Reduction``): ``reduction=``
    takes these or the same strings, and Keras 3's ``"mean"`` and ``"mean_with_sample_weight"``.

    ``AUTO`` is ``SUM_OVER_BATCH_SIZE`` (TensorFlow's meaning outside a strategy; inside
    one, where TensorFlow refuses it in custom loops, phalanx reduces the replica's
    batch alike: use ``NONE`` and ``phalanx.compute_average_loss`` there).

    Examples:
      >>> Reduction.NONE, Reduction.all()[:2]
      ('none', ('auto', 'none'))
    """

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        """Every tf.keras reduction's name."""
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: Any) -> None:
        """Raises ``LossArgumentError`` unless ``key`` names a reduction (Keras 3's or tf.keras's)."""
        _reduction.validate_reduction(key)


def _as_logits(logits: Any, activation: str) -> jax.Array | None:
    if logits is None:
        return None
    if not isinstance(logits, Logits):
        raise LossArgumentError(
            "logits= must be a phalanx Logits (what Sequential(..., return_logits=True) "
            f"returns) or None, got {type(logits).__name__}. For raw logits as "
            "predictions use from_logits=True."
        )
    return logits.value if logits.activation == activation else None


def squeeze_or_expand_to_same_rank(x1: jax.Array, x2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Keras's rule: when ranks differ by one and the longer ends in 1, align the ranks."""
    if x1.ndim == x2.ndim + 1 and x1.shape[-1] == 1:
        return (x1, x2[..., None]) if x2.ndim == 1 else (x1[..., 0], x2)
    if x2.ndim == x1.ndim + 1 and x2.shape[-1] == 1:
        return (x1[..., None], x2) if x1.ndim == 1 else (x1, x2[..., 0])
    return x1, x2


def _float(x: Any) -> jax.Array:
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)


# -- Keras's loss functions ----------------------------------------------------------------
def _check_int_axis(axis: Any) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise LossArgumentError(
            f"`axis` must be of type `int`. Received: axis={axis!r} of type {type(axis)}"
        )
    return axis


def _is_last(axis: int, ndim: int) -> bool:
    return axis in (-1, ndim - 1)


def _log_probs(y_pred: jax.Array, axis: int) -> jax.Array:
    """Keras's probabilities path: normalized along ``axis``, clipped to [1e-7, 1 - 1e-7]."""
    probs = y_pred / jnp.sum(y_pred, axis=axis, keepdims=True)
    return jnp.log(jnp.clip(probs, EPSILON, 1.0 - EPSILON))


def sparse_categorical_crossentropy_masked(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    ignore_class: int | None = None,
    axis: int = -1,
    *,
    logits: Logits | None = None,
) -> tuple[jax.Array, jax.Array | None]:
    """``(losses, valid)``: ``sparse_categorical_crossentropy`` and, with
    ``ignore_class``, which entries count (Keras 3 attaches it as the losses' mask)."""
    axis = _check_int_axis(axis)
    y_pred = _float(y_pred)
    labels = jnp.asarray(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[axis] == 1:
        labels = jnp.squeeze(labels, axis=axis)
    z = y_pred if from_logits else _as_logits(logits, "softmax")
    last = _is_last(axis, y_pred.ndim)
    z = z if last or from_logits else None  # the network's softmax is over the last axis
    valid = None
    if ignore_class is not None:
        valid = labels != jnp.asarray(ignore_class, y_pred.dtype)
        labels = jnp.where(valid, labels, 0)
        y_pred = jnp.where(jnp.expand_dims(valid, axis), y_pred, 0)
        z = None if z is None else jnp.where(jnp.expand_dims(valid, axis), z, 0)
    labels = labels.astype(jnp.int32)
    if last:
        if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
            labels = labels[..., 0]
        if z is not None:
            res = optax.softmax_cross_entropy_with_integer_labels(z, labels)
        else:
            log_p = _log_probs(y_pred, -1)
            res = -jnp.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]
    else:
        res = _sparse_ce_other_axis(labels, y_pred, from_logits, axis)
    if valid is not None:
        valid = valid.reshape(res.shape)
        res = jnp.where(valid, res, jnp.zeros((), res.dtype))
    return res, valid


def _sparse_ce_other_axis(labels, y_pred, from_logits: bool, axis: int) -> jax.Array:
    """Keras 3's JAX ``sparse_categorical_crossentropy`` for a class axis not the last:
    the labels have the shape of ``y_pred`` less its *last* axis, one-hot along ``axis``."""
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if labels.shape != y_pred.shape[:-1]:
        raise LossArgumentError(
            "Arguments `target` and `output` must have the same shape up until the last "
            f"dimension: target.shape={labels.shape}, output.shape={y_pred.shape}"
        )
    log_p = jax.nn.log_softmax(y_pred, axis=axis) if from_logits else _log_probs(y_pred, axis)
    target = jax.nn.one_hot(labels, y_pred.shape[axis], axis=axis, dtype=log_p.dtype)
    try:
        shape = jnp.broadcast_shapes(target.shape, log_p.shape)
    except ValueError:
        shape = None
    if shape != log_p.shape:
        raise LossArgumentError(
            f"sparse_categorical_crossentropy(axis={axis}): labels of shape {labels.shape} "
            f"one-hot along axis {axis} give {target.shape}, which does not match the "
            f"predictions' {log_p.shape} (Keras 3's JAX backend fails here too). Move the "
            "class axis last (jnp.moveaxis) and use axis=-1."
        )
    return -jnp.sum(target * log_p, axis=axis)


def sparse_categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    ignore_class: int | None = None,
    axis: int = -1,
    *,
    logits: Logits | None = None,
) -> jax.Array:
    """Cross-entropy between integer labels and class probabilities (or logits).

    Args:
      y_true: integer class indices, shape ``[...]`` or ``[..., 1]``.
      y_pred: probabilities (or logits), shape ``[..., num_classes]``.
      from_logits: whether ``y_pred`` holds logits.
      ignore_class: a label whose entries give 0 (Keras 3: the class's
        ``reduction`` then divides by the other entries' count).
      axis: the class axis (Keras 3's JAX rule for another than the last: the
        labels have the shape of ``y_pred`` less its last axis).
      logits: the network's softmax logits, used instead of clipped probabilities.

    Returns:
      The loss per example, shape ``[...]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> loss = sparse_categorical_crossentropy(
      ...     jnp.array([1, 2]), jnp.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]]))
      >>> [round(float(v), 4) for v in loss]
      [0.0513, 2.3026]
    """
    return sparse_categorical_crossentropy_masked(
        y_true, y_pred, from_logits, ignore_class, axis, logits=logits
    )[0]


def categorical_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
    *,
    logits: Logits | None = None,
) -> jax.Array:
    """Cross-entropy between one-hot (or soft) labels and class probabilities (or logits).

    Args:
      y_true: one-hot or probability labels, shape ``[..., num_classes]``.
      y_pred: probabilities (or logits), the same shape.
      from_logits: whether ``y_pred`` holds logits.
      label_smoothing: mix the labels with the uniform distribution by this much
        (over the last axis's size, as Keras 3, whatever ``axis``).
      axis: the class axis.
      logits: the network's softmax logits, used instead of clipped probabilities.

    Returns:
      The loss per example, shape ``[...]``.
    """
    axis = _check_int_axis(axis)
    y_pred = _float(y_pred)
    y_true = _float(y_true).astype(y_pred.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_pred.shape[-1]
    if not _is_last(axis, y_pred.ndim):
        if y_true.shape != y_pred.shape:
            raise LossArgumentError(
                "Arguments `target` and `output` must have the same shape. Received: "
                f"target.shape={y_true.shape}, output.shape={y_pred.shape}"
            )
        log_p = jax.nn.log_softmax(y_pred, axis=axis) if from_logits else _log_probs(y_pred, axis)
        return -jnp.sum(y_true * log_p, axis=axis)
    z = y_pred if from_logits else _as_logits(logits, "softmax")
    if z is not None:
        return optax.softmax_cross_entropy(z, y_true)
    return -jnp.sum(y_true * _log_probs(y_pred, -1), axis=-1)


def binary_crossentropy(
    y_true: Any,
    y_pred: Any,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
    *,
    logits: Logits | None = None,
) -> jax.Array:
    """Binary cross-entropy averaged over ``axis`` (the last by default), as Keras.

    Args:
      y_true: labels in {0, 1} (or soft), shape ``[..., d]``.
      y_pred: probabilities (or logits), the same shape.
      from_logits: whether ``y_pred`` holds logits.
      label_smoothing: squeeze the labels towards 0.5 by this much.
      axis: the axis the mean is taken over.
      logits: the network's sigmoid logits, used instead of clipped probabilities.

    Returns:
      The loss per example, shape ``[...]``.
    """
    y_pred = _float(y_pred)
    y_true = _float(y_true).astype(y_pred.dtype)
    z = y_pred if from_logits else _as_logits(logits, "sigmoid")
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    if y_true.shape != y_pred.shape:  # Keras 3 raises too (ops.binary_crossentropy)
        raise LossArgumentError(
            "binary_crossentropy: arguments `target` and `output` must have the same shape, as "
            f"Keras 3 requires. Received: target.shape={y_true.shape}, "
            f"output.shape={y_pred.shape}. Give y the model's output shape."
        )
    if z is not None:
        z = z if z.ndim == y_pred.ndim else z.reshape(y_pred.shape)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if z is not None:
        return jnp.mean(optax.sigmoid_binary_cross_entropy(z, y_true), axis=axis)
    p = jnp.clip(y_pred, EPSILON, 1.0 - EPSILON)
    return -jnp.mean(y_true * jnp.log(p) + (1.0 - y_true) * jnp.log1p(-p), axis=axis)


def _aligned(y_true: Any, y_pred: Any) -> tuple[jax.Array, jax.Array]:
    y_pred = _float(y_pred)
    y_true = _float(y_true).astype(y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return tuple(jnp.broadcast_arrays(y_true, y_pred))


def mean_squared_error(y_true: Any, y_pred: Any) -> jax.Array:
    """Mean of squared errors over the last axis.

    Examples:
      >>> import jax.numpy as jnp
      >>> mean_squared_error(jnp.array([[0., 1.], [0., 0.]]),
      ...                    jnp.array([[1., 1.], [1., 0.]])).tolist()
      [0.5, 0.5]
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return jnp.mean(optax.squared_error(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> jax.Array:
    """Mean of absolute errors over the last axis."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return jnp.mean(jnp.abs(y_pred - y_true), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> jax.Array:
    """Huber loss over the last axis: quadratic within ``delta``, linear beyond, as Keras.

    Examples:
      >>> import jax.numpy as jnp
      >>> round(float(huber(jnp.array([[0., 1.], [0., 0.]]),
      ...                   jnp.array([[0.6, 0.4], [0.4, 0.6]])).mean()), 3)
      0.155
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return jnp.mean(optax.huber_loss(y_pred, y_true, delta=delta), axis=-1)


# -- classes ---------------------------------------------------------------------------------
class Loss:
    """Base class of phalanx losses: a Keras loss (per-example values, reduced when called).

    Subclasses implement ``call(y_true, y_pred, logits)`` (Keras's function), or
    ``call_masked`` when the loss masks some of its values (``ignore_class``).

    Args:
      name: the loss's name (logged as ``loss`` by ``fit``).
      reduction: how calling the loss, and ``fit``/``evaluate``, reduce it, as
        Keras 3: ``"sum_over_batch_size"`` (default; also ``"mean"``, and
        tf.keras's ``"auto"``): the weighted sum over the valid entries' count;
        ``"mean_with_sample_weight"``: over the sample weights' sum; ``"sum"``:
        the sum; ``"none"`` (or None): calling the loss gives one value per
        example, ``[batch]``, for ``phalanx.compute_average_loss`` in a custom
        loop (``Reduction.NONE``; the mean over an example's entries, where
        Keras 3 keeps them: ``[batch, time]`` for a sequence; a weight of 0
        gives exactly 0); ``compile`` refuses such a loss object, as
        Keras 3's ``fit`` fails on it (a function's name, ``"mse"``, is
        reduced as ``"sum_over_batch_size"``). ``fit`` reduces over the global
        batch, the same on any number of replicas.
      dtype: the dtype the loss computes in (Keras 3: targets and predictions
        are cast to it, and the reduction runs in it): None (float32),
        ``"bfloat16"``, ``"float16"``, ``"float64"`` (with JAX's x64 mode),
        ``"mixed_bfloat16"``/``"mixed_float16"`` or a dtype policy (its
        ``compute_dtype``). ``fit`` adds the replicas' values in float32.
    """

    #: Which accuracy ``"accuracy"`` means with this loss (Keras's rule), or None.
    accuracy_kind: str | None = None
    #: The constructor arguments ``get_config`` returns besides ``name`` and ``reduction``.
    config_keys: tuple[str, ...] = ()
    #: A scalar from ``call`` is one value per example (False: of the whole batch, Keras's).
    spread_scalar = True

    def __init__(
        self,
        *,
        name: str | None = None,
        reduction: str | None = "sum_over_batch_size",
        dtype: Any = None,
    ):
        self.reduction = _reduction.validate_reduction(reduction)
        self._dtype = _reduction.compute_dtype(type(self).__name__, dtype)
        self.name = name

    @property
    def dtype(self) -> str:
        """The dtype the loss computes in (Keras's ``loss.dtype``), e.g. ``"float32"``."""
        return self._dtype

    def get_config(self) -> dict[str, Any]:
        """Keras's config: ``name``, ``reduction`` and the loss's own arguments (and the
        ``dtype``, which Keras 3's leaves out, when not float32)."""
        extra = {key: getattr(self, key) for key in self.config_keys}
        dtype = {} if self._dtype == "float32" else {"dtype": self._dtype}
        return {"name": self.name, "reduction": self.reduction, **extra, **dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Loss:
        """The loss ``get_config`` described (Keras's ``from_config``)."""
        return cls(**config)

    def call(self, y_true: jax.Array, y_pred: jax.Array, logits: Logits | None) -> jax.Array:
        """Returns Keras's unreduced loss (the class/feature axis reduced)."""
        raise NotImplementedError

    def call_masked(self, y_true, y_pred, logits) -> tuple[jax.Array, jax.Array | None]:
        """``(unreduced loss, mask of the entries that count or None)``; ``call``'s by default."""
        return self.call(y_true, y_pred, logits), None

    def check_shapes(self, y_true_shape: tuple, y_pred_shape: tuple) -> str | None:
        """Returns what is wrong with per-example target/output shapes, or None when they fit."""
        t, p = _align_shapes(tuple(y_true_shape), tuple(y_pred_shape))
        if not _broadcastable(t, p):
            return f"{self.name} compares targets and outputs element by element."
        return None

    def _values(self, y_true, y_pred, logits) -> tuple[jax.Array, jax.Array | None, int]:
        """The unreduced values in ``dtype``, their mask, and the batch size."""
        y_true, y_pred = jnp.asarray(y_true), jnp.asarray(y_pred)
        problem = self.check_shapes(y_true.shape[1:], y_pred.shape[1:])
        if problem is not None:
            raise LossArgumentError(
                f"{problem} Received targets of shape {y_true.shape[1:]} and predictions of "
                f"shape {y_pred.shape[1:]} per example (in a batch: {y_true.shape} and "
                f"{y_pred.shape}). Give y the model's output shape (for class indices, use a "
                "sparse_ loss)."
            )
        batch = y_pred.shape[0] if y_pred.ndim else 1
        dtype = self._dtype
        if logits is not None and isinstance(logits, Logits):
            logits = Logits(jnp.asarray(logits.value, dtype), logits.activation)
        # Keras 3 casts both to the loss's dtype (integer labels too).
        values, valid = self.call_masked(
            jnp.asarray(y_true, dtype), jnp.asarray(y_pred, dtype), logits
        )
        values = jnp.asarray(values)
        if values.ndim == 0 and self.spread_scalar:
            values = jnp.broadcast_to(values, (batch,))
        return values, valid, batch

    def per_example(
        self,
        y_true: Any,
        y_pred: Any,
        sample_weight: Any = None,
        *,
        logits: Logits | None = None,
    ) -> jax.Array:
        """Returns the weighted loss of each example, shape ``[batch]``, float32.

        Examples whose weight is 0 contribute exactly 0, even when their
        predictions are not finite (padding); entries the loss masks
        (``ignore_class``) contribute 0. Each example's value is the mean over
        its entries (``fit`` reduces with ``batch_terms`` instead).

        Args:
          y_true: the targets, leading batch axis.
          y_pred: the network's outputs, leading batch axis.
          sample_weight: None, or weights of shape ``[batch]`` (or the shape of
            the unreduced loss).
          logits: the network's ``Logits`` (or None).

        Returns:
          A float array ``[batch]``.
        """
        values, _, batch = self._values(y_true, y_pred, logits)
        return _per_example(values, batch, sample_weight)

    def batch_terms(
        self, y_true: Any, y_pred: Any, weight: Any, mask: Any, *, logits: Logits | None = None
    ) -> tuple[jax.Array, jax.Array | None]:
        """This piece of the batch's ``(numerator, divisor)`` of the reduced loss (float32).

        ``fit``'s loss is the sum over replicas of the numerators over that of the
        divisors (None: 1, for ``"sum"``), Keras 3's value on the global batch.

        Args:
          y_true: as ``per_example``.
          y_pred: as ``per_example``.
          logits: as ``per_example``.
          weight: each example's sample weight, ``[batch]`` (0 for padding).
          mask: 1 for real examples, 0 for padding, ``[batch]``.
        """
        values, valid, _ = self._values(y_true, y_pred, logits)
        return _reduction.batch_terms(values, valid, weight, mask, self.reduction)

    def __call__(
        self,
        y_true: Any,
        y_pred: Any,
        sample_weight: Any = None,
        *,
        logits: Logits | None = None,
    ) -> jax.Array:
        """Returns the loss, reduced as ``reduction`` says (the batch's mean by default), in
        ``dtype`` (Keras 3's ``Loss.__call__``)."""
        values, valid, batch = self._values(y_true, y_pred, logits)
        if self.reduction in (None, "none") and values.ndim:  # one value per example
            return _per_example(values, batch, sample_weight).astype(values.dtype)
        return _reduction.reduce_weighted_values(
            values, sample_weight, valid, self.reduction, self._dtype
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _per_example(values: jax.Array, batch: int, sample_weight: Any) -> jax.Array:
    """``[batch]`` float32: each example's weighted values, their mean over its entries."""
    values = jnp.asarray(values, jnp.float32)
    if values.ndim == 0:
        values = jnp.broadcast_to(values, (batch,))
    if sample_weight is not None:
        weight = jnp.asarray(sample_weight, values.dtype)
        weight, values = squeeze_or_expand_to_same_rank(weight, values)
        if weight.ndim < values.ndim:
            weight = weight.reshape(weight.shape + (1,) * (values.ndim - weight.ndim))
        values = jnp.where(weight != 0, values * weight, 0.0)
    if values.ndim > 1:
        values = jnp.mean(values, axis=tuple(range(1, values.ndim)))
    return values


def _align_shapes(t: tuple, p: tuple) -> tuple[tuple, tuple]:
    if len(t) == len(p) + 1 and t and t[-1] == 1:
        return t[:-1], p
    if len(p) == len(t) + 1 and p and p[-1] == 1:
        return t, p[:-1]
    return t, p


def _broadcastable(t: tuple, p: tuple) -> bool:
    n = max(len(t), len(p))
    t, p = (1,) * (n - len(t)) + t, (1,) * (n - len(p)) + p
    return all(a is None or b is None or a == b or 1 in (a, b) for a, b in zip(t, p, strict=True))


def _compatible(t: tuple, p: tuple) -> bool:
    return len(t) == len(p) and all(
        a is None or b is None or a == b for a, b in zip(t, p, strict=True)
    )


class SparseCategoricalCrossentropy(Loss):
    """Cross-entropy for integer labels, ``[batch]`` or ``[batch, 1]``, against class scores.

    Args:
      from_logits: whether predictions are logits (no softmax applied).
      name: default ``"sparse_categorical_crossentropy"``.
      reduction: see `Loss`.

    Examples:
      >>> import jax.numpy as jnp
      >>> loss = SparseCategoricalCrossentropy(reduction="sum_over_batch_size")
      >>> round(float(loss(jnp.array([1, 2]), jnp.array([[0.05, 0.95, 0], [0.1, 0.8, 0.1]]))), 3)
      1.177
    """

    accuracy_kind = "sparse_categorical"
    config_keys = ("from_logits", "ignore_class", "axis")

    def __init__(
        self,
        from_logits: bool = False,
        ignore_class: int | None = None,
        *,
        reduction: str | None = "sum_over_batch_size",
        axis: int = -1,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(
            name=name or "sparse_categorical_crossentropy", reduction=reduction, dtype=dtype
        )
        if ignore_class is not None and (
            isinstance(ignore_class, bool) or not isinstance(ignore_class, int | np.integer)
        ):
            raise LossArgumentError(
                f"SparseCategoricalCrossentropy(ignore_class={ignore_class!r}): ignore_class "
                "is the integer label whose entries are left out (e.g. -1 or 255), or None."
            )
        self.from_logits = from_logits
        self.ignore_class = None if ignore_class is None else int(ignore_class)
        self.axis = _check_int_axis(axis)

    def call(self, y_true, y_pred, logits):
        return self.call_masked(y_true, y_pred, logits)[0]

    def call_masked(self, y_true, y_pred, logits):
        return sparse_categorical_crossentropy_masked(
            y_true, y_pred, self.from_logits, self.ignore_class, self.axis, logits=logits
        )

    def out_of_range(self, y_true, y_pred):
        """Labels ``[batch, k]`` and whether each is not a class index in ``[0, classes)`` (traced).

        The step reduces these into a flag checked when the logs are fetched,
        since a label ``-1`` would read the last class and one ``>= classes`` NaN.
        Float labels must be whole numbers (``1.0`` is class 1, as in Keras);
        ``0.5`` or NaN would be truncated to a class silently.
        """
        labels = jnp.reshape(y_true, (y_true.shape[0], -1))
        bad = (labels < 0) | (labels >= y_pred.shape[self.axis])
        if jnp.issubdtype(labels.dtype, jnp.floating):
            bad = bad | (labels != jnp.floor(labels))  # NaN too: NaN != NaN
        if self.ignore_class is not None:  # the ignored label (-1, 255) is not a mistake
            bad = bad & (labels != self.ignore_class)
        return labels, bad

    def check_shapes(self, y_true_shape, y_pred_shape):
        t, p = tuple(y_true_shape), tuple(y_pred_shape)
        if not _is_last(self.axis, len(p) + 1):
            return None  # Keras 3's own rule for another class axis: the function checks
        if not p:
            return "sparse_categorical_crossentropy needs outputs with a class axis."
        if _compatible(t, p[:-1]) or _compatible(t, (*p[:-1], 1)):
            return None
        return (
            f"{self.name} expects integer class indices of shape "
            f"{(None, *p[:-1])} or {(None, *p[:-1], 1)}."
            + (" Targets look one-hot: use categorical_crossentropy." if t == p else "")
        )


class CategoricalCrossentropy(Loss):
    """Cross-entropy for one-hot (or soft) labels of the output's shape.

    Args:
      from_logits: whether predictions are logits.
      label_smoothing: mix the labels with the uniform distribution by this much.
      name: default ``"categorical_crossentropy"``.
      reduction: see `Loss`.
    """

    accuracy_kind = "categorical"
    config_keys = ("from_logits", "label_smoothing", "axis")

    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis=-1,
        *,
        name: str | None = None,
        reduction: str = "sum_over_batch_size",
        dtype=None,
    ):
        super().__init__(name=name or "categorical_crossentropy", reduction=reduction, dtype=dtype)
        self.from_logits = from_logits
        self.label_smoothing = float(label_smoothing)
        self.axis = _check_int_axis(axis)

    def call(self, y_true, y_pred, logits):
        return categorical_crossentropy(
            y_true, y_pred, self.from_logits, self.label_smoothing, self.axis, logits=logits
        )

    def check_shapes(self, y_true_shape, y_pred_shape):
        if _compatible(tuple(y_true_shape), tuple(y_pred_shape)):
            return None
        hint = ""
        if _compatible(tuple(y_true_shape), tuple(y_pred_shape)[:-1]) or tuple(y_true_shape) == (
            1,
        ):
            hint = " Targets look like class indices: use sparse_categorical_crossentropy."
        return f"{self.name} expects one-hot targets of the output's shape.{hint}"


class BinaryCrossentropy(Loss):
    """Binary cross-entropy averaged over the last axis.

    Args:
      from_logits: whether predictions are logits.
      label_smoothing: squeeze labels towards 0.5 by this much.
      name: default ``"binary_crossentropy"``.
      reduction: see `Loss`.

    Examples:
      >>> import jax.numpy as jnp
      >>> loss = BinaryCrossentropy(from_logits=True, reduction="mean")
      >>> round(float(loss(jnp.array([0., 1., 0., 0.]), jnp.array([-18.6, 0.51, 2.94, -12.8]))), 3)
      0.865
    """

    accuracy_kind = "binary"
    config_keys = ("from_logits", "label_smoothing", "axis")

    def __init__(
        self,
        from_logits: bool = False,
        label_smoothing: float = 0.0,
        axis=-1,
        *,
        name: str | None = None,
        reduction: str = "sum_over_batch_size",
        dtype=None,
    ):
        super().__init__(name=name or "binary_crossentropy", reduction=reduction, dtype=dtype)
        self.from_logits = from_logits
        self.label_smoothing = float(label_smoothing)
        self.axis = _check_int_axis(axis)

    def check_shapes(self, y_true_shape, y_pred_shape):
        t, p = _align_shapes(tuple(y_true_shape), tuple(y_pred_shape))
        if _compatible(t, p):
            return None
        return f"{self.name} needs targets of the outputs' shape (Keras 3 raises too)."

    def call(self, y_true, y_pred, logits):
        return binary_crossentropy(
            y_true, y_pred, self.from_logits, self.label_smoothing, self.axis, logits=logits
        )


class MeanSquaredError(Loss):
    """Mean of squared errors over the last axis (``"mse"``).

    Args:
      name: default ``"mean_squared_error"``.
      reduction: see `Loss`.
    """

    def __init__(
        self, *, name: str | None = None, reduction: str = "sum_over_batch_size", dtype=None
    ):
        super().__init__(name=name or "mean_squared_error", reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred, logits):
        return mean_squared_error(y_true, y_pred)


class MeanAbsoluteError(Loss):
    """Mean of absolute errors over the last axis (``"mae"``).

    Args:
      name: default ``"mean_absolute_error"``.
      reduction: see `Loss`.
    """

    def __init__(
        self, *, name: str | None = None, reduction: str = "sum_over_batch_size", dtype=None
    ):
        super().__init__(name=name or "mean_absolute_error", reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred, logits):
        return mean_absolute_error(y_true, y_pred)


class Huber(Loss):
    """Huber loss over the last axis (``optax.huber_loss``).

    Args:
      delta: where the loss turns from quadratic to linear; default 1.0.
      name: default ``"huber_loss"``.
      reduction: see `Loss`.
    """

    config_keys = ("delta",)  # Keras 3's config leaves delta out; phalanx keeps it

    def __init__(
        self,
        delta: float = 1.0,
        *,
        name: str | None = None,
        reduction: str = "sum_over_batch_size",
        dtype=None,
    ):
        super().__init__(name=name or "huber_loss", reduction=reduction, dtype=dtype)
        self.delta = float(delta)

    def call(self, y_true, y_pred, logits):
        return huber(y_true, y_pred, self.delta)


class LossFunctionWrapper(Loss):
    """Wraps any ``fn(y_true, y_pred) -> per-example or scalar`` as a `Loss`.

    A scalar result is taken as the batch's mean loss and given to every
    example (so the step's ``sum / global_batch_size`` reproduces it);
    ``sample_weight`` then weights those equal shares.

    Args:
      fn: the function.
      name: default ``fn.__name__``.
      reduction: see `Loss`.
      **kwargs: passed to ``fn`` on every call.
    """

    def __init__(
        self,
        fn: Callable,
        *,
        name: str | None = None,
        reduction: str | None = "sum_over_batch_size",
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(
            name=name or getattr(fn, "__name__", "loss"), reduction=reduction, dtype=dtype
        )
        self.fn = fn
        self.kwargs = kwargs

    def call(self, y_true, y_pred, logits):
        return self.fn(y_true, y_pred, **self.kwargs)

    def check_shapes(self, y_true_shape, y_pred_shape):
        return None


_CLASSES: dict[str, type[Loss]] = {
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy,
    "mean_squared_error": MeanSquaredError,
    "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError,
    "mae": MeanAbsoluteError,
    "huber": Huber,
    "huber_loss": Huber,
}
_FUNCTIONS = {
    sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
    categorical_crossentropy: CategoricalCrossentropy,
    binary_crossentropy: BinaryCrossentropy,
    mean_squared_error: MeanSquaredError,
    mean_absolute_error: MeanAbsoluteError,
    huber: Huber,
}


def _registry() -> tuple[dict[str, type[Loss]], dict[Any, type[Loss]]]:
    """Every loss by Keras name and by function (the classes of ``_more`` included)."""
    from . import _more

    classes = dict(_CLASSES)
    functions = dict(_FUNCTIONS)
    for cls in _more.CLASSES:
        classes[cls.fn.__name__] = cls
        functions[cls.fn] = cls
    classes.update(
        {
            "mape": _more.MeanAbsolutePercentageError,
            "msle": _more.MeanSquaredLogarithmicError,
            "kld": _more.KLDivergence,
        }
    )
    return classes, functions


def get(identifier: Any) -> Loss | None:
    """Returns a `Loss` for a Keras name, a class, an instance or a callable.

    Args:
      identifier: ``"sparse_categorical_crossentropy"``, ``"mse"``, ... (names
        and class names, case-insensitive for class names), a ``Loss`` class or
        instance, a phalanx loss function, any ``fn(y_true, y_pred)``, or None.

    Returns:
      A ``Loss`` (None for None). A string keeps its spelling as ``name``
      (``"mse"`` logs as ``mse``), as Keras. A function's name (``"mse"``), a
      function or a callable gives ``reduction="none"`` (Keras returns the
      function, which gives one loss per example); a class or its name, the
      class's default (the batch's mean).

    Raises:
      UnknownNameError: an unknown name (the message lists the known ones and the closest).
      CompileArgumentError: something that is not a loss.

    Examples:
      >>> get("sparse_categorical_crossentropy")
      SparseCategoricalCrossentropy(name='sparse_categorical_crossentropy')
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    known, functions = _registry()
    if isinstance(identifier, str):
        by_class = {cls.__name__.lower(): cls for cls in known.values()}
        cls = known.get(identifier) or by_class.get(identifier.lower())
        if cls is None:
            raise UnknownNameError.of(
                "loss",
                identifier,
                [*known, *(cls.__name__ for cls in functions.values())],
                hint="Or give a phalanx.losses object, or any function (y_true, y_pred) -> "
                "per-example losses.",
            )
        if identifier in known:  # a function's name: Keras returns the function (per example)
            return cls(name=identifier, reduction="none")
        return cls()
    if identifier in functions:
        return functions[identifier](name=identifier.__name__, reduction="none")
    if callable(identifier):
        return LossFunctionWrapper(identifier, reduction="none")
    raise CompileArgumentError(
        f"Cannot use {type(identifier).__name__} {identifier!r} as a loss: give a name "
        "('mse'), a phalanx.losses object, or a function (y_true, y_pred) -> per-example losses."
    )
