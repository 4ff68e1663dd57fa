"""Keras 3's intersection-over-union metrics: ``IoU``, ``MeanIoU``, ``BinaryIoU``,
``OneHotIoU``, ``OneHotMeanIoU``.

The state is the weighted ``num_classes x num_classes`` confusion matrix
(rows: targets, columns: predictions), additive over replicas and steps.
Keras keeps it in integers by default (``dtype="int32"``: float weights are
truncated); phalanx keeps float32 counts, equal for integer weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ._metric import Metric, State, check_name

_KERAS_EPSILON = 1e-7


class IoU(Metric):
    """The mean intersection-over-union of the ``target_class_ids`` (Keras's ``IoU``).

    ``iou = tp / (tp + fp + fn)`` per class; classes never seen nor predicted
    are left out of the mean.

    Args:
      num_classes: the number of classes.
      target_class_ids: the classes whose IoU is averaged.
      name: default ``"io_u"`` (Keras's).
      dtype: accepted as Keras's (the state is float32).
      ignore_class: a target class that counts nowhere.
      sparse_y_true: targets are class ids (False: one-hot, argmax over ``axis``).
      sparse_y_pred: predictions are class ids (False: scores, argmax over ``axis``).
      axis: the class axis of one-hot targets or scores; default -1.

    Raises:
      ValueError: a target class id ``>= num_classes``.
    """

    default_name = "io_u"
    direction = "up"

    def __init__(
        self,
        num_classes: int,
        target_class_ids: Sequence[int],
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_true: bool = True,
        sparse_y_pred: bool = True,
        axis: int = -1,
    ):
        self.name = check_name(name, type(self).default_name, type(self).__name__)
        self.dtype = dtype  # Keras's default is "int32"; the counts here are float32
        if max(target_class_ids) >= num_classes:
            raise ValueError(
                f"Target class id {max(target_class_ids)} is out of range, which is "
                f"[0, {num_classes})."
            )
        self.num_classes = num_classes
        self.target_class_ids = list(target_class_ids)
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis

    def init(self) -> State:
        return {"cm": jnp.zeros((self.num_classes, self.num_classes), jnp.float32)}

    def _classes(self, y_true, y_pred):
        if not self.sparse_y_true:
            y_true = jnp.argmax(jnp.asarray(y_true), axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = jnp.argmax(jnp.asarray(y_pred), axis=self.axis)
        return jnp.asarray(y_true).astype(jnp.int32), jnp.asarray(y_pred).astype(jnp.int32)

    def increment(self, y_true, y_pred, sample_weight=None) -> State:
        y_true, y_pred = self._classes(y_true, y_pred)
        y_true, y_pred = y_true.reshape(-1), y_pred.reshape(-1)
        weight = jnp.ones(y_true.shape, jnp.float32)
        if sample_weight is not None:
            weight = jnp.broadcast_to(
                jnp.asarray(sample_weight, jnp.float32).reshape(-1), y_true.shape
            )
        n = self.num_classes
        valid = (y_true >= 0) & (y_true < n) & (y_pred >= 0) & (y_pred < n)
        if self.ignore_class is not None:
            valid = valid & (y_true != self.ignore_class)
        weight = jnp.where(valid, weight, 0.0)
        cm = jnp.zeros((n, n), jnp.float32).at[
            jnp.where(valid, y_true, 0), jnp.where(valid, y_pred, 0)
        ]
        return {"cm": cm.add(weight)}

    def result(self, state: State) -> jax.Array:
        cm = state["cm"]
        tp = jnp.diag(cm)
        denominator = jnp.sum(cm, axis=0) + jnp.sum(cm, axis=1) - tp
        ids = jnp.asarray(self.target_class_ids, jnp.int32)
        tp, denominator = tp[ids], denominator[ids]
        valid = denominator > 1e-9
        iou = jnp.where(valid, tp / (denominator + _KERAS_EPSILON), 0.0)
        return jnp.sum(iou) / (jnp.sum(valid.astype(jnp.float32)) + _KERAS_EPSILON)

    def get_config(self) -> dict[str, Any]:
        """Keras's config keys (``dtype`` as given, Keras's default ``"int32"``)."""
        config = super().get_config()
        config["dtype"] = "int32" if self.dtype is None else str(jnp.dtype(self.dtype))
        return config


class MeanIoU(IoU):
    """The mean IoU over all ``num_classes`` classes (Keras's ``MeanIoU``).

    Args:
      num_classes: the number of classes.
      name: default ``"mean_io_u"``.

    ``dtype``, ``ignore_class``, ``sparse_y_true``, ``sparse_y_pred`` and ``axis`` are ``IoU``'s.
    """

    default_name = "mean_io_u"

    def __init__(
        self,
        num_classes: int,
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_true: bool = True,
        sparse_y_pred: bool = True,
        axis: int = -1,
    ):
        super().__init__(
            num_classes,
            list(range(num_classes)),
            name,
            dtype,
            ignore_class,
            sparse_y_true,
            sparse_y_pred,
            axis,
        )


class BinaryIoU(IoU):
    """IoU of binary predictions thresholded at ``threshold`` (Keras's ``BinaryIoU``).

    Args:
      target_class_ids: default ``(0, 1)``: the mean of both classes' IoU.
      threshold: a prediction ``>= threshold`` is class 1; default 0.5.
      name: default ``"binary_io_u"``.
      dtype: as ``IoU``.
    """

    default_name = "binary_io_u"

    def __init__(
        self,
        target_class_ids: Sequence[int] = (0, 1),
        threshold: float = 0.5,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(2, target_class_ids, name, dtype)
        self.threshold = threshold

    def _classes(self, y_true, y_pred):
        y_pred = (jnp.asarray(y_pred, jnp.float32) >= self.threshold).astype(jnp.int32)
        return jnp.asarray(y_true).astype(jnp.int32), y_pred


class OneHotIoU(IoU):
    """``IoU`` of one-hot targets (and, by default, score predictions): Keras's ``OneHotIoU``.

    Args:
      sparse_y_pred: predictions are class ids; default False (scores).

    ``num_classes``, ``target_class_ids``, ``name``, ``dtype``, ``ignore_class`` and ``axis``
    are ``IoU``'s.
    """

    default_name = "one_hot_io_u"

    def __init__(
        self,
        num_classes: int,
        target_class_ids: Sequence[int],
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_pred: bool = False,
        axis: int = -1,
    ):
        super().__init__(
            num_classes, target_class_ids, name, dtype, ignore_class, False, sparse_y_pred, axis
        )


class OneHotMeanIoU(MeanIoU):
    """``MeanIoU`` of one-hot targets (Keras's ``OneHotMeanIoU``).

    Args:
      sparse_y_pred: predictions are class ids; default False (scores).

    ``num_classes``, ``name``, ``dtype``, ``ignore_class`` and ``axis`` are ``MeanIoU``'s.
    """

    default_name = "one_hot_mean_io_u"

    def __init__(
        self,
        num_classes: int,
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_pred: bool = False,
        axis: int = -1,
    ):
        super().__init__(num_classes, name, dtype, ignore_class, False, sparse_y_pred, axis)
