"""Keras's ``StringLookup`` and ``IntegerLookup``: tokens to indices (and back), for data
pipelines (``dataset.map(lookup)``) and eager calls on numpy arrays.

Keras 3's index layout: the mask token (when given) at 0, then ``num_oov_indices``
out-of-vocabulary indices, then the vocabulary in its order; ``adapt`` orders tokens
by count, ties by the token, both descending (Keras's ``np.lexsort(...)[::-1]``).
Strings are bytes in ``phalanx.data`` pipelines; ``str`` tokens are taken as their
UTF-8 bytes. The lookup is a Python dictionary applied to numpy arrays: it runs in
the input pipeline, not in a compiled model (a traced input is refused).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import numpy as np

from ..errors import LayerArgumentError
from ._layer import Layer

_MODES = ("int", "one_hot", "multi_hot", "count")


class IndexLookup(Layer):
    """The shared mechanism of ``StringLookup`` and ``IntegerLookup`` (see there)."""

    _kind = ""

    def __init__(
        self,
        max_tokens: int | None,
        num_oov_indices: int,
        mask_token: Any,
        oov_token: Any,
        vocabulary: Any,
        invert: bool,
        output_mode: str,
        *,
        name: str | None = None,
        **unsupported: Any,
    ):
        super().__init__(name=name)
        layer = type(self).__name__
        for key, value in unsupported.items():
            if value not in (None, False):
                raise LayerArgumentError(f"{layer}: {key}={value!r} is not supported by phalanx.")
        if num_oov_indices not in (0, 1):
            raise LayerArgumentError(
                f"{layer}: num_oov_indices={num_oov_indices!r} is not supported by phalanx "
                "(Keras hashes tokens into several OOV indices with farmhash); use 0 or 1."
            )
        if output_mode not in _MODES:
            raise LayerArgumentError(
                f"{layer} output_mode must be one of {_MODES} in phalanx, got {output_mode!r}."
            )
        if invert and output_mode != "int":
            raise LayerArgumentError(f"{layer}: invert=True needs output_mode='int'.")
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def _token(self, token: Any) -> Any:
        """A token as the layer keys it (bytes for strings, int for integers)."""
        raise NotImplementedError

    def set_vocabulary(self, vocabulary: Any) -> None:
        """Sets the vocabulary (a list of tokens, in index order)."""
        tokens = tuple(self._token(t) for t in np.ravel(np.asarray(vocabulary)).tolist())
        if len(set(tokens)) != len(tokens):
            raise LayerArgumentError(
                f"{type(self).__name__}: the vocabulary holds repeated tokens: {tokens}."
            )
        self.vocabulary = tokens

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns the vocabulary from ``data`` (an array, or an iterable of batches)."""
        counts: Counter = Counter()
        batches = [data] if hasattr(data, "shape") or isinstance(data, list) else data
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            counts.update(self._token(t) for t in np.ravel(np.asarray(batch)).tolist())
        for special in (self.mask_token, self.oov_token):
            if special is not None:
                counts.pop(self._token(special), None)
        ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        reserved = self._offset()
        if self.max_tokens is not None:
            ordered = ordered[: max(self.max_tokens - reserved, 0)]
        self.vocabulary = tuple(t for t, _ in ordered)

    def _offset(self) -> int:
        return self.num_oov_indices + (self.mask_token is not None)

    def get_vocabulary(self) -> list:
        """Every index's token: the mask token, the OOV token, then the vocabulary."""
        head = [] if self.mask_token is None else [self._out(self.mask_token)]
        head += [self._out(self.oov_token)] * self.num_oov_indices
        return head + [self._out(t) for t in self._require_vocabulary()]

    def vocabulary_size(self) -> int:
        """The number of indices (mask and OOV included)."""
        return self._offset() + len(self._require_vocabulary())

    def _out(self, token: Any) -> Any:
        return token

    def _require_vocabulary(self) -> tuple:
        if self.vocabulary is None:
            raise ValueError(
                f"{type(self).__name__} has no vocabulary: give vocabulary= or call adapt(data)."
            )
        return self.vocabulary

    def get_config(self) -> dict:
        config = super().get_config()
        config["vocabulary"] = (
            None if self.vocabulary is None else list(self.get_vocabulary()[self._offset() :])
        )
        return config

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(x)):
            raise LayerArgumentError(
                f"{type(self).__name__} runs in the input pipeline (dataset.map(layer)) or on "
                "numpy arrays, not inside a compiled model: apply it to the data before fit."
            )
        if self.name is None:
            self.name = type(self).__name__.lower()
        return self._lookup(np.asarray(x))

    def _lookup(self, x: np.ndarray) -> np.ndarray:
        vocabulary = self._require_vocabulary()
        if self.invert:
            table = self.get_vocabulary()
            return np.vectorize(
                lambda i: table[i] if 0 <= i < len(table) else table[self._offset() - 1],
                otypes=[object],
            )(x).astype(self._dtype_of_tokens())
        index = {t: i + self._offset() for i, t in enumerate(vocabulary)}
        if self.mask_token is not None:
            index[self._token(self.mask_token)] = 0
        oov = self._offset() - 1 if self.num_oov_indices else None

        def look(token):
            found = index.get(self._token(token), oov)
            if found is None:
                raise ValueError(
                    f"{type(self).__name__}: {token!r} is not in the vocabulary and "
                    "num_oov_indices=0."
                )
            return found

        ids = np.vectorize(look, otypes=[np.int64])(x) if x.size else x.astype(np.int64)
        if self.output_mode == "int":
            return ids
        return _encode(ids, self.vocabulary_size(), self.output_mode)

    def _dtype_of_tokens(self) -> Any:
        raise NotImplementedError


def _encode(ids: np.ndarray, depth: int, mode: str) -> np.ndarray:
    """Keras's one-hot / multi-hot / count encodings of indices (float32)."""
    if mode == "one_hot":
        ids = ids[..., 0] if ids.ndim > 1 and ids.shape[-1] == 1 else ids
        return np.eye(depth, dtype=np.float32)[ids]
    rows = ids if ids.ndim > 1 else ids[None]
    out = np.zeros((rows.shape[0], depth), np.float32)
    for r, row in enumerate(rows):
        np.add.at(out[r], row, 1.0)
    out = np.minimum(out, 1.0) if mode == "multi_hot" else out
    return out if ids.ndim > 1 else out[0]


class StringLookup(IndexLookup):
    """Keras's ``StringLookup``: strings to integer indices (``invert=True``: back).

    Args:
      max_tokens: the largest number of indices ``adapt`` keeps (mask and OOV included).
      num_oov_indices: 1 (default: unknown tokens get index 0, or 1 after a mask)
        or 0 (unknown tokens raise); more is not supported (Keras hashes them).
      mask_token: a token that maps to index 0, or None.
      oov_token: the token ``invert`` gives for the OOV index; default ``"[UNK]"``.
      vocabulary: a list of tokens, or None (then ``adapt``).
      invert: map indices to tokens.
      output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"`` or ``"count"``.

    Examples:
      >>> import numpy as np
      >>> StringLookup(vocabulary=["a", "b"])(np.array([[b"a", b"c"], [b"b", b"b"]])).tolist()
      [[1, 0], [2, 2]]
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: Any = None,
        oov_token: str = "[UNK]",
        vocabulary: Any = None,
        idf_weights: Any = None,
        invert: bool = False,
        output_mode: str = "int",
        pad_to_max_tokens: bool = False,
        sparse: bool = False,
        encoding: str = "utf-8",
        *,
        name: str | None = None,
    ):
        self.encoding = encoding
        super().__init__(
            max_tokens,
            num_oov_indices,
            mask_token,
            oov_token,
            vocabulary,
            invert,
            output_mode,
            name=name,
            idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens,
            sparse=sparse,
        )

    def _token(self, token: Any) -> bytes:
        return token.encode(self.encoding) if isinstance(token, str) else bytes(token)

    def _out(self, token: Any) -> str:
        return self._token(token).decode(self.encoding)

    def _dtype_of_tokens(self) -> Any:
        return np.bytes_


class IntegerLookup(IndexLookup):
    """Keras's ``IntegerLookup``: integer tokens to contiguous indices (``invert=True``: back).

    Args:
      max_tokens: the largest number of indices ``adapt`` keeps.
      num_oov_indices: 1 (default) or 0; more is not supported.
      mask_token: a token that maps to index 0, or None.
      oov_token: the token ``invert`` gives for the OOV index; default -1.
      vocabulary: a list of ints, or None (then ``adapt``).
      invert: map indices to tokens.
      output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"`` or ``"count"``.

    Examples:
      >>> import numpy as np
      >>> IntegerLookup(vocabulary=[12, 36])(np.array([12, 7, 36])).tolist()
      [1, 0, 2]
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        num_oov_indices: int = 1,
        mask_token: int | None = None,
        oov_token: int = -1,
        output_mode: str = "int",
        sparse: bool = False,
        vocabulary: Any = None,
        vocabulary_dtype: str = "int64",
        idf_weights: Any = None,
        invert: bool = False,
        pad_to_max_tokens: bool = False,
        *,
        name: str | None = None,
    ):
        self.vocabulary_dtype = vocabulary_dtype
        super().__init__(
            max_tokens,
            num_oov_indices,
            mask_token,
            oov_token,
            vocabulary,
            invert,
            output_mode,
            name=name,
            idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens,
            sparse=sparse,
        )

    def _token(self, token: Any) -> int:
        return int(token)

    def _dtype_of_tokens(self) -> Any:
        return np.dtype(self.vocabulary_dtype)
