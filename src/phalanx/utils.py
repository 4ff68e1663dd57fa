"""Keras's ``keras.utils`` helpers that the seeds' programs use."""

from __future__ import annotations

import numpy as np

__all__ = ["to_categorical"]


def to_categorical(y, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """Converts integer class labels to one-hot rows (Keras's ``to_categorical``).

    Args:
      y: integer labels, any shape; a trailing axis of size 1 is dropped, as Keras does.
      num_classes: the number of classes; default ``max(y) + 1``.
      dtype: the dtype of the result.

    Returns:
      A numpy array of shape ``y.shape + (num_classes,)``.

    Raises:
      ValueError: a label is negative or not below ``num_classes``.

    Example:
      >>> to_categorical([0, 2], 3)
      array([[1., 0., 0.],
             [0., 0., 1.]], dtype=float32)
    """
    labels = np.asarray(y, dtype=np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    bad = labels[(labels < 0) | (labels >= num_classes)]
    if bad.size:
        raise ValueError(
            f"to_categorical got label {int(bad.flat[0])} outside [0, {num_classes}) "
            f"(num_classes={num_classes}): labels must be class indices; pass num_classes="
            "the number of classes, or remap the labels."
        )
    return np.eye(num_classes, dtype=dtype)[labels]
