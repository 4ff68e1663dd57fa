"""Keras's ``keras.utils.pad_sequences``: ragged sequences to one padded numpy array."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UtilsArgumentError


def pad_sequences(
    sequences: Any,
    maxlen: int | None = None,
    dtype: Any = "int32",
    padding: str = "pre",
    truncating: str = "pre",
    value: Any = 0.0,
) -> np.ndarray:
    """Pads (or truncates) sequences to one length, as Keras's ``pad_sequences``.

    Each sequence is cut to ``maxlen`` (its start with ``truncating="pre"``, its end
    with ``"post"``) and padded with ``value`` before (``padding="pre"``) or after it.
    Elements may be arrays: the first non-empty sequence sets their shape. Empty
    sequences become a row of ``value``.

    Args:
      sequences: a list (anything with ``len``) of sequences.
      maxlen: the length of every row; default the longest sequence's.
      dtype: the result's dtype; ``object`` (or a numpy string dtype) for strings.
      padding: ``"pre"`` or ``"post"``: where the padding goes.
      truncating: ``"pre"`` or ``"post"``: which end of a longer sequence is cut.
      value: the padding value (a string needs ``dtype=object`` or a string dtype).

    Returns:
      A numpy array of shape ``(len(sequences), maxlen) + element_shape``.

    Raises:
      UtilsArgumentError: ``sequences`` or one of them is not iterable, a string
        ``value`` with a numeric ``dtype``, an unknown ``padding``/``truncating``, or
        elements whose shapes differ (a ``ValueError``, with Keras's messages).

    Examples:
      >>> pad_sequences([[1], [2, 3], [4, 5, 6]])
      array([[0, 0, 1],
             [0, 2, 3],
             [4, 5, 6]], dtype=int32)
      >>> pad_sequences([[1, 2, 3]], maxlen=2, padding="post", truncating="post", value=-1)
      array([[1, 2]], dtype=int32)
    """
    if not hasattr(sequences, "__len__"):
        raise UtilsArgumentError(
            f"`sequences` must be iterable. Got {type(sequences).__name__}; pass a list of "
            "sequences (e.g. list(generator))."
        )
    lengths, sample_shape = _lengths_and_sample_shape(sequences)
    if maxlen is None:
        maxlen = np.max(lengths)
    is_dtype_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_dtype_str:
        raise UtilsArgumentError(
            f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}\n"
            "You should set `dtype=object` for variable length strings."
        )
    x = np.full((len(sequences), maxlen, *sample_shape), value, dtype=dtype)
    for idx, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating == "pre":
            trunc = s[-maxlen:]
        elif truncating == "post":
            trunc = s[:maxlen]
        else:
            raise UtilsArgumentError(
                f'Truncating type "{truncating}" not understood: pass "pre" or "post".'
            )
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise UtilsArgumentError(
                f"Shape of sample {trunc.shape[1:]} of sequence at position {idx} is "
                f"different from expected shape {sample_shape} (the first non-empty "
                "sequence's); give every element one shape."
            )
        if padding == "post":
            x[idx, : len(trunc)] = trunc
        elif padding == "pre":
            x[idx, -len(trunc) :] = trunc
        else:
            raise UtilsArgumentError(
                f'Padding type "{padding}" not understood: pass "pre" or "post".'
            )
    return x


def _lengths_and_sample_shape(sequences: Any) -> tuple[list[int], tuple[int, ...]]:
    """Each sequence's length, and the element shape of the first non-empty one."""
    lengths: list[int] = []
    sample_shape: tuple[int, ...] | None = None
    for x in sequences:
        try:
            lengths.append(len(x))
        except TypeError as e:
            raise UtilsArgumentError(
                f"`sequences` must be a list of iterables. Found non-iterable: {x!s}"
            ) from e
        if sample_shape is None and len(x):
            sample_shape = np.asarray(x).shape[1:]
    return lengths, sample_shape or ()
