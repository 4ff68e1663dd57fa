"""Keras's ``Hashing`` layer: strings or integers to ``num_bins`` hash bins, for input
pipelines (``dataset.map(hashing)``) and numpy arrays, as Keras recommends it.

Keras computes it with TensorFlow: integers become their decimal strings
(``tf.as_string``; floats are truncated to int64 first), then the bin is
``Fingerprint64(s) % bins`` (``tf.strings.to_hash_bucket_fast``) or, with a salt,
``SipHash-2-4(salt, s) % bins`` (``to_hash_bucket_strong``). phalanx runs the same
hashes in pure Python (`_hashes`), so the bins are TensorFlow's. With a
``mask_value``, that value is bin 0 and the others are hashed into bins 1 to
``num_bins - 1``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..errors import LayerArgumentError
from . import _hashes
from ._args import is_positive_int
from ._layer import Layer

_MODES = ("int", "one_hot", "multi_hot", "count")


def as_strings(values: np.ndarray) -> np.ndarray:
    """``values`` as an object array of bytes: strings UTF-8 encoded, numbers as
    ``tf.as_string`` writes int64s (floats truncated first, as Keras)."""
    if values.dtype.kind in "SUO":
        return np.vectorize(_as_bytes, otypes=[object])(values) if values.size else values
    if values.dtype.kind == "f":
        values = values.astype(np.int64)
    if values.dtype.kind not in "iub":
        raise LayerArgumentError(
            f"Hashing takes strings or integers, got an array of dtype {values.dtype}."
        )
    return np.vectorize(lambda v: str(int(v)).encode(), otypes=[object])(values)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise LayerArgumentError(
        f"Hashing takes strings or integers, got {value!r} ({type(value).__name__})."
    )


def encode(ids: np.ndarray, mode: str, depth: int, dtype: Any) -> np.ndarray:
    """Keras's ``encode_categorical_inputs``: ``ids`` as one-hot, multi-hot or counts."""
    if mode == "int":
        return ids.astype(dtype)
    if ids.ndim == 0:
        ids = ids[None]
    if mode == "one_hot":
        if ids.ndim > 1 and ids.shape[-1] == 1:
            ids = ids[..., 0]
        return np.eye(depth, dtype=dtype)[ids]
    out = np.zeros((*ids.shape[:-1], depth), dtype)
    rows = out.reshape(-1, depth)
    for row, sample in zip(rows, ids.reshape(-1, ids.shape[-1]), strict=True):
        np.add.at(row, sample, 1)
    return np.minimum(out, 1) if mode == "multi_hot" else out


class Hashing(Layer):
    """Keras's ``Hashing``: hashes strings or integers into ``num_bins`` bins.

    The bins are TensorFlow's (FarmHash ``Fingerprint64``, or SipHash-2-4 with
    ``salt``), so a model trained with Keras's layer sees the same indices. It runs
    on numpy arrays, lists and in ``dataset.map``; a traced input (inside a compiled
    model) is refused.

    Args:
      num_bins: the number of bins, the mask's included.
      mask_value: a value mapped to bin 0 (the others then hash into
        ``[1, num_bins)``); None (default): no mask.
      salt: None (FarmHash), an int ``s`` (SipHash with the key ``(s, s)``) or two
        ints (the key).
      output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
      sparse: not supported when True (raises).
      dtype: the output dtype; default ``"int64"`` for ``"int"``, else float32.

    Examples:
      >>> Hashing(num_bins=3)([["A"], ["B"], ["C"], ["D"], ["E"]]).tolist()
      [[1], [0], [1], [1], [2]]
      >>> Hashing(num_bins=3, salt=[133, 137])(["A", "B", "C", "D", "E"]).tolist()
      [1, 2, 1, 0, 2]
    """

    def __init__(
        self,
        num_bins: int,
        mask_value: Any = None,
        salt: Any = None,
        output_mode: str = "int",
        sparse: bool = False,
        *,
        name: str | None = None,
        dtype: Any = None,
    ):
        super().__init__(name=name)
        if not is_positive_int(num_bins):
            raise LayerArgumentError(
                "The `num_bins` for `Hashing` cannot be `None` or non-positive values. "
                f"Received: num_bins={num_bins!r}; e.g. Hashing(num_bins=64)."
            )
        if output_mode not in _MODES:
            raise LayerArgumentError(
                "Invalid value for argument `output_mode`. Expected one of "
                f"{_MODES}. Received: output_mode={output_mode!r}"
            )
        dtype = dtype or ("int64" if output_mode == "int" else "float32")
        if output_mode == "int" and str(dtype) not in ("int32", "int64"):
            raise LayerArgumentError(
                "When `output_mode=\"int\"`, `dtype` should be an integer type, 'int32' or "
                f"'int64'. Received: dtype={dtype!r}"
            )
        if sparse:
            raise LayerArgumentError(
                "Hashing: sparse=True is not supported by phalanx (outputs are dense arrays)."
            )
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.output_mode = output_mode
        self.sparse = False
        self.salt = _salt(salt)
        self.output_dtype = str(dtype)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(x)):
            raise LayerArgumentError(
                "Hashing runs in the input pipeline (dataset.map(layer)) or on numpy arrays, "
                "not inside a compiled model: hash the data before fit."
            )
        if self.name is None:
            self.name = "hashing"
        values = np.asarray(x)
        return encode(self.hash_to_bins(values), self.output_mode, self.num_bins, self.output_dtype)

    def hash_to_bins(self, values: np.ndarray) -> np.ndarray:
        """The bin of each value (int64, the shape of ``values``), mask included."""
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask = _equal(values, self.mask_value)
        strings = as_strings(values)
        if self.salt is None:
            hashed = [_hashes.fingerprint64(s) % bins for s in strings.ravel()]
        else:
            key = (self.salt[0], self.salt[1])
            hashed = [_hashes.siphash64(key, s) % bins for s in strings.ravel()]
        out = np.asarray(hashed, np.int64).reshape(values.shape)
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        return out

    def compute_output_shape(self, input_shape: Any) -> tuple:
        input_shape = tuple(input_shape)
        if self.output_mode == "int":
            return input_shape
        return (*input_shape[:-1], self.num_bins)

    def get_config(self) -> dict:
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self.output_dtype,
            "num_bins": self.num_bins,
            "salt": None if self.salt is None else list(self.salt),
            "mask_value": self.mask_value,
            "output_mode": self.output_mode,
            "sparse": self.sparse,
        }


def _salt(salt: Any) -> tuple[int, int] | None:
    if salt is None:
        return None
    if isinstance(salt, tuple | list) and len(salt) == 2 and all(_is_int(s) for s in salt):
        return (int(salt[0]), int(salt[1]))
    if _is_int(salt):
        return (int(salt), int(salt))
    raise LayerArgumentError(
        "The `salt` argument for `Hashing` can only be a tuple of size 2 integers, or a "
        f"single integer. Received: salt={salt!r}."
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _equal(values: np.ndarray, mask_value: Any) -> np.ndarray:
    """``values == mask_value`` elementwise, strings compared as bytes (TensorFlow's)."""
    if values.dtype.kind in "SUO":
        target = _as_bytes(mask_value) if isinstance(mask_value, str | bytes) else mask_value
        return np.vectorize(lambda v: _as_bytes(v) == target, otypes=[bool])(values)
    return values == mask_value
