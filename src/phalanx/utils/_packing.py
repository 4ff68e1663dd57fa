"""Keras's ``pack_x_y_sample_weight``/``unpack_x_y_sample_weight``: the ``(x, y, w)`` forms."""

from __future__ import annotations

from typing import Any

from ..errors import UtilsArgumentError


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """Splits a batch into ``(x, y, sample_weight)``, with None for what it lacks, as Keras.

    For a ``train_step``/``test_step`` of one's own: ``x``, ``(x,)``, ``(x, y)`` and
    ``(x, y, sample_weight)`` (a list as a tuple) all unpack.

    Args:
      data: ``x`` (anything but a tuple or list), or a tuple/list of 1 to 3 items.

    Returns:
      ``(x, y, sample_weight)``.

    Raises:
      UtilsArgumentError: a tuple or list of more than 3 items (a ``ValueError``).

    Examples:
      >>> unpack_x_y_sample_weight((1, 2))
      (1, 2, None)
      >>> unpack_x_y_sample_weight(1)
      (1, None, None)
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) == 1:
        return (data[0], None, None)
    if len(data) == 2:
        return (data[0], data[1], None)
    if len(data) == 3:
        return (data[0], data[1], data[2])
    raise UtilsArgumentError(
        "Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
        f"found: {data}. Pack several inputs into one item first: ((x1, x2), y)."
    )


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """Packs ``x``, ``y`` and ``sample_weight`` into the form ``fit`` takes, as Keras.

    ``x`` alone stays as it is (a tuple or list ``x`` is wrapped: ``(x,)``), then
    ``(x, y)``, then ``(x, y, sample_weight)``.

    Args:
      x: the inputs.
      y: the targets, or None.
      sample_weight: the weights, or None (ignored when ``y`` is None, as Keras).

    Returns:
      ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

    Examples:
      >>> pack_x_y_sample_weight(1)
      1
      >>> pack_x_y_sample_weight(1, 2)
      (1, 2)
      >>> pack_x_y_sample_weight((1, 2))
      ((1, 2),)
    """
    if y is None:
        return x if not isinstance(x, tuple | list) else (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)
