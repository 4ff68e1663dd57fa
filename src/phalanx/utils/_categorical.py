"""Keras's ``keras.utils.to_categorical``: integer class labels to one-hot rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LabelOutOfRangeError


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """Converts integer class labels to one-hot rows (Keras's ``to_categorical``).

    Args:
      y: integer labels, any shape; a trailing axis of size 1 is dropped, as Keras does.
      num_classes: the number of classes; default ``max(y) + 1``.
      dtype: the dtype of the result.

    Returns:
      A numpy array of shape ``y.shape + (num_classes,)``.

    Raises:
      LabelOutOfRangeError: a label is not a class index (negative, not below
        ``num_classes``, not a whole number, not a number), or ``num_classes`` is
        not a positive int (a ``ValueError``).

    Examples:
      >>> to_categorical([0, 2], 3)
      array([[1., 0., 0.],
             [0., 0., 1.]], dtype=float32)
    """
    if num_classes is not None and (
        isinstance(num_classes, bool)
        or not isinstance(num_classes, int | np.integer)
        or num_classes < 1
    ):
        raise LabelOutOfRangeError(
            f"to_categorical's num_classes must be a positive int (the number of classes), got "
            f"{type(num_classes).__name__} {num_classes!r}; or leave it out for max(y) + 1."
        )
    labels = _class_indices(y)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    bad = labels[(labels < 0) | (labels >= num_classes)]
    if bad.size:
        raise LabelOutOfRangeError(
            f"to_categorical got label {int(bad.flat[0])} outside [0, {num_classes}) "
            f"(num_classes={num_classes}): labels must be class indices; pass num_classes="
            "the number of classes, or remap the labels."
        )
    return np.eye(num_classes, dtype=dtype)[labels]


def _class_indices(y) -> np.ndarray:
    """``y`` as int64 class indices; labels that are not whole numbers raise (Keras truncates)."""
    values = np.asarray(y)
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        whole = np.isfinite(values) & (values == np.round(values))
        if whole.all():
            return values.astype(np.int64)
        first = values[~whole].flat[0]
        raise LabelOutOfRangeError(
            f"to_categorical got label {float(first):g}, which is not a class index (a whole "
            "number): labels are integers 0..num_classes-1; round or cast them "
            "(y.astype(np.int32)) on purpose. Soft targets need no to_categorical: give them "
            "to categorical_crossentropy as they are."
        )
    example = f" (e.g. {values.flat[0].item()!r})" if values.size else ""
    raise LabelOutOfRangeError(
        f"to_categorical takes integer class labels, got an array of dtype {values.dtype}"
        f"{example}. Map names to indices first: np.unique(y, return_inverse=True)[1]."
    )
