"""What ``fit``/``evaluate``/``predict`` are given, checked before any data is adapted.

The adapters (``_adapter``) take arrays, datasets and generators; this module
refuses, with what to do instead, what none of them can take and what would
fail deep inside numpy or JAX: a string ``x``, a Python list of rows, arrays of
strings or objects, ``x``/``y``/``sample_weight`` with different numbers of
examples (``fit`` checks its learning-rate schedule with
``phalanx.optimizers``' ``check_schedule``). Every check reads shapes, dtypes
and types only, never the data.

Python lists follow Keras 3: its array adapter takes arrays and structures of
arrays, so a list of numbers (rows) is refused there too ("Unrecognized data
type"); a list of *arrays* is several model inputs, one array each, and passes.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import numpy as np

from ...errors import FitInputError

_NUMERIC_KINDS = "biufc"


def check_inputs(
    x: Any, y: Any = None, sample_weight: Any = None, *, where: str, validation_data: Any = None
) -> None:
    """Raises ``FitInputError`` for inputs no adapter can take (module docstring).

    Args:
      x, y, sample_weight: as given to ``fit``/``evaluate``/``predict``.
      where: ``"fit"``, ``"evaluate"`` or ``"predict"``, for the messages.
      validation_data: ``fit``'s ``(x_val, y_val[, sample_weight_val])``, checked alike.
    """
    _check_one(x, y, sample_weight, where=f"{where}'s")
    if isinstance(validation_data, tuple) and 1 <= len(validation_data) <= 3:
        parts = (*validation_data, None, None)[:3]
        _check_one(*parts, where=f"{where}'s validation_data")
    elif validation_data is not None:  # fit reads anything else as x alone (Keras's rule)
        _check_one(validation_data, None, None, where=f"{where}'s validation_data")


def _check_one(x: Any, y: Any, sample_weight: Any, *, where: str) -> None:
    for name, value in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        if value is not None:
            _check_kind(value, f"{where} {name}", name)
    _check_lengths(x, y, sample_weight, where)


def _check_kind(value: Any, what: str, name: str) -> None:
    if isinstance(value, str | bytes):
        raise FitInputError(
            f"{what} is a {type(value).__name__} ({value!r:.60}), not data. Pass arrays "
            "(numpy or jax, or a tuple/list/dict of them, one per model input), a "
            "phalanx.data.Dataset, or a generator of batches; to read files, build a dataset "
            "(e.g. phalanx.data.TFRecordDataset(paths).map(parse)) and pass it."
        )
    if _is_rows(value):
        kind = type(value).__name__
        raise FitInputError(
            f"{what} is a Python {kind} of {_count(len(value), 'row')} of numbers. As in "
            f"Keras 3, a "
            f"{kind} holds several model inputs (one array each), not rows: convert it, "
            f"{name} = np.asarray({name}, dtype=np.float32) (np.int32 for class labels)."
        )
    for path, leaf in _leaves(value):
        if isinstance(leaf, str | bytes):
            raise FitInputError(
                f"{what}{jax.tree_util.keystr(path)} is a {type(leaf).__name__} "
                f"({leaf!r:.60}); every input must be an array of numbers."
            )
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and np.dtype(dtype).kind not in _NUMERIC_KINDS:
            at = jax.tree_util.keystr(path)
            kind = {"U": "strings", "S": "bytes", "O": "Python objects"}.get(
                np.dtype(dtype).kind, "non-numbers"
            )
            raise FitInputError(
                f"{what}{at} is an array of dtype {np.dtype(dtype)} ({kind}); models take "
                "numbers. Encode it first (e.g. map each string to an integer id with a "
                "vocabulary, or parse numbers with .astype(np.float32))."
            )


def _leaves(value: Any) -> list[tuple[Any, Any]]:
    """(path, leaf) of arrays and their containers; nothing for datasets, generators, others."""
    if not isinstance(value, np.ndarray | jax.Array | list | tuple | dict):
        return []
    return jax.tree_util.tree_flatten_with_path(value)[0]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _is_rows(value: Any) -> bool:
    """A list/tuple whose first item is a number or a list/tuple of them (a table of rows)."""
    if not isinstance(value, list | tuple) or not value:
        return False
    first = value[0]
    while isinstance(first, list | tuple) and first:
        first = first[0]
    return isinstance(first, numbers.Number) and not isinstance(first, np.ndarray)


def _rows(tree: Any) -> dict[int, tuple[str, tuple]]:
    """Leading dimension -> (path, shape) of the first array with it, for ``tree``'s arrays."""
    found: dict[int, tuple[str, tuple]] = {}
    for path, leaf in _leaves(tree):
        if isinstance(leaf, np.ndarray | jax.Array) and leaf.ndim:
            found.setdefault(int(leaf.shape[0]), (jax.tree_util.keystr(path), tuple(leaf.shape)))
    return found


def _check_lengths(x: Any, y: Any, sample_weight: Any, where: str) -> None:
    """x's arrays, y's and sample_weight need one row per example (arrays only)."""
    named = [(n, v) for n, v in (("x", x), ("y", y)) if v is not None]
    seen: list[str] = []
    rows: set[int] = set()
    for name, value in named:
        for n, (path, shape) in _rows(value).items():
            rows.add(n)
            seen.append(f"{name}{path} has {n} (shape {shape})")
    if len(rows) > 1:
        raise FitInputError(
            f"{where} inputs need the same number of examples (rows) in every array; "
            f"{', '.join(seen)}. Pass x and y of the same examples."
        )
    if sample_weight is None or not rows or not hasattr(sample_weight, "shape"):
        return
    n, shape = rows.pop(), tuple(np.shape(sample_weight))
    if shape not in ((n,), (n, 1)):
        raise FitInputError(
            f"{where} sample_weight needs one weight per example: shape ({n},) for the {n} "
            f"examples of x; got shape {shape}. Give each example one weight (per-class "
            "weights go in class_weight=)."
        )


def check_batched(parts: list, first: int) -> None:
    """Raises ``FitInputError`` when a streamed batch has a rank-0 part: the input yields
    single examples (a ``Dataset`` never batched), each misread as a batch."""
    for i, part in enumerate(parts):
        for name, value in zip(("x", "y", "sample_weight"), part, strict=True):
            shapes = [np.shape(leaf) for leaf in jax.tree.leaves(value)]
            if () in shapes:
                raise FitInputError(
                    f"Batch {first + i} of the input is a single example, not a batch: its "
                    f"{name} has shapes {shapes}, and a batch's parts have a leading axis of "
                    "examples. Batch the dataset: dataset.batch(32) (after shuffle, before "
                    "prefetch); a generator yields whole batches."
                )


def check_batch_rows(parts: list, sizes: list[int], first: int) -> None:
    """Raises ``FitInputError`` unless each streamed batch's y and sample_weight match its x.

    ``parts`` are ``(x, y, sample_weight)`` of the batches of one execution, the
    first being batch ``first`` of the epoch, ``sizes`` their x's rows. Shapes
    only (a few microseconds per batch).
    """
    for i, ((_, y, sw), n) in enumerate(zip(parts, sizes, strict=True)):
        if sw is not None and np.shape(sw) not in ((n,), (n, 1)):
            raise FitInputError(
                f"Batch {first + i} of the input has {n} examples in x, but its sample_weight "
                f"has shape {np.shape(sw)}: a batch's sample_weight needs one weight per example, "
                f"shape ({n},)."
            )
        for leaf in jax.tree.leaves(y):
            if not np.ndim(leaf) or np.shape(leaf)[0] != n:
                raise FitInputError(
                    f"Batch {first + i} of the input has {n} examples in x, but its y has shape "
                    f"{np.shape(leaf)}: a batch's y needs one row per example of its x."
                )
