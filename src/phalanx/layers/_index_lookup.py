"""Keras's ``StringLookup`` and ``IntegerLookup``: tokens to indices (and back), for data
pipelines (``dataset.map(lookup)``) and eager calls on numpy arrays.

Keras 3's index layout: the mask token (when given, in ``output_mode="int"``) at 0,
then ``num_oov_indices`` out-of-vocabulary indices, then the vocabulary in its order;
in the other output modes a mask token is dropped from the encoding and takes no
index. With several OOV indices an unknown token's index is TensorFlow's hash bucket,
as Keras: strings by FarmHash ``Fingerprint64`` (SipHash-2-4 with a ``salt``,
`phalanx.layers._hashes`), integers by ``floormod`` or, with ``oov_method="farmhash"``,
the hash of their decimal string. ``adapt`` orders tokens by count, ties by the token, both descending (Keras's
``np.lexsort(...)[::-1]``); in ``output_mode="tf_idf"`` it also learns Keras's
inverse document frequencies ``log(1 + documents / (1 + documents holding the token))``,
the OOV slots taking their mean. Strings are bytes in ``phalanx.data`` pipelines;
``str`` tokens are taken as their bytes in ``encoding``. The lookup is a Python
dictionary applied to numpy arrays: it runs in the input pipeline, not in a compiled
model (a traced or symbolic input is refused). ``TextVectorization``
(`phalanx.layers._text_vectorization`) looks its tokens up through a ``StringLookup``.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import jax
import numpy as np

from ..errors import LayerArgumentError
from ..io import RaggedTensor, _fs
from . import _hashes
from ._layer import Layer
from ._symbolic import is_symbolic

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_ALIASES = {"binary": "multi_hot", "tf-idf": "tf_idf"}


def refuse_traced(layer: Layer, x: Any) -> None:
    """Raises for an input that is not data on the host (a jit tracer)."""
    if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(x)):
        raise LayerArgumentError(
            f"{type(layer).__name__} runs in the input pipeline (dataset.map(layer)) or on "
            "numpy arrays and lists, not inside a compiled model (as Keras 3 on JAX): apply "
            "it to the data before fit, and give the model its integer or float output."
        )


def check_symbolic(layer: Layer, x: Any, strings: bool) -> None:
    """Raises for a symbolic input of the wrong kind: strings (``Input(dtype="string")``)
    for ``TextVectorization``/``StringLookup``, integers for ``IntegerLookup``."""
    ok = x.dtype == "string" if strings else x.dtype != "string" and x.dtype.kind in "iu"
    if not ok:
        wanted = 'Input(..., dtype="string")' if strings else 'Input(..., dtype="int32")'
        raise LayerArgumentError(
            f"{type(layer).__name__} takes {'strings' if strings else 'integers'} and runs in "
            f"the input pipeline; it was called on a symbolic input of dtype {x.dtype}. Give "
            f"it {wanted}, or map the data through it (dataset.map(layer))."
        )


def token_rows(data: Any) -> list:
    """``data`` as documents (rows of tokens): a RaggedTensor's or a list's rows, a rank-1
    array as one document, a higher-rank array's rows (Keras's ``update_state``)."""
    if hasattr(data, "to_list") and hasattr(data, "row_splits"):
        return data.to_list()
    if (
        isinstance(data, list | tuple)
        and data
        and all(isinstance(r, list | tuple | np.ndarray) for r in data)
    ):
        return [np.ravel(np.asarray(r, dtype=object)).tolist() for r in data]
    array = np.asarray(data, dtype=object)
    if array.ndim <= 1:
        return [np.ravel(array).tolist()]
    return array.reshape(len(array), -1).tolist()


class IndexLookup(Layer):
    """The shared mechanism of ``StringLookup`` and ``IntegerLookup`` (see there)."""

    runs_on_host = True
    #: Where Keras's saver writes the layer's state under ``layers/<key>/`` of a ``.keras``
    #: file (``assets/``, ``model.weights.h5``): the layer's own path.
    keras_state_paths: tuple = ("",)

    def __init__(
        self,
        max_tokens: int | None,
        num_oov_indices: int,
        mask_token: Any,
        oov_token: Any,
        vocabulary: Any,
        idf_weights: Any,
        invert: bool,
        output_mode: str,
        pad_to_max_tokens: bool,
        sparse: bool,
        *,
        name: str | None = None,
        vocabulary_size: int | None = None,
        has_input_vocabulary: bool | None = None,
    ):
        super().__init__(name=name)
        layer = type(self).__name__
        output_mode = _ALIASES.get(output_mode, output_mode)
        if sparse:
            raise LayerArgumentError(
                f"{layer}: sparse=True is not supported by phalanx (Keras 3 has it on the "
                "TensorFlow backend only); use the dense output."
            )
        if max_tokens is not None and max_tokens <= 1:
            raise LayerArgumentError(
                f"If set, `max_tokens` must be greater than 1. Received: max_tokens={max_tokens}"
            )
        if pad_to_max_tokens and max_tokens is None:
            raise LayerArgumentError(
                "If pad_to_max_tokens is True, must set `max_tokens`. "
                f"Received: max_tokens={max_tokens}"
            )
        if not isinstance(num_oov_indices, int | np.integer) or num_oov_indices < 0:
            raise LayerArgumentError(
                "`num_oov_indices` must be greater than or equal to 0. "
                f"Received: num_oov_indices={num_oov_indices!r}"
            )
        if output_mode not in _MODES:
            raise LayerArgumentError(
                f"{layer} output_mode must be one of {_MODES}, got {output_mode!r}."
            )
        if invert and output_mode != "int":
            raise LayerArgumentError(f"{layer}: invert=True needs output_mode='int'.")
        if idf_weights is not None and output_mode != "tf_idf":
            raise LayerArgumentError(
                "`idf_weights` should only be set if `output_mode` is `'tf_idf'`. "
                f"Received: output_mode={output_mode!r}."
            )
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.sparse = False
        # Keras's serialization: the constructor's list (a file's tokens go to the assets).
        self._input_vocabulary = None if isinstance(vocabulary, str | os.PathLike) else vocabulary
        self._input_idf_weights = idf_weights
        self._has_input_vocabulary = (
            vocabulary is not None if has_input_vocabulary is None else has_input_vocabulary
        )
        # Keras's saved size: the depth of the encodings until the vocabulary loads (a
        # .keras file's layers are built before their assets are read, as in Keras).
        self._saved_size = vocabulary_size
        self._tokens: tuple = ()
        self._idf: tuple | None = None  # a tuple: nnx keeps no arrays as static attributes
        self._counts: Counter = Counter()
        self._document_counts: Counter = Counter()
        self._documents = 0
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise LayerArgumentError(
                "When specifying the `vocabulary` argument, in TF-IDF output mode, the "
                "`idf_weights` argument must also be provided."
            )
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- the index layout ---------------------------------------------------------------

    def _token(self, token: Any) -> Any:
        """A token as the layer keys it (bytes for strings, int for integers)."""
        raise NotImplementedError

    def _out(self, token: Any) -> Any:
        return token

    def _oov_start(self) -> int:
        return int(self.mask_token is not None and self.output_mode == "int")

    def _offset(self) -> int:
        return self._oov_start() + self.num_oov_indices

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """Every index's token: the mask token (``output_mode="int"``), the OOV token, then
        the vocabulary; ``include_special_tokens=False``: the vocabulary alone."""
        tokens = [self._out(t) for t in self._tokens]
        if not include_special_tokens:
            return tokens
        head = [self._out(self.mask_token)] if self._oov_start() else []
        return head + [self._out(self.oov_token)] * self.num_oov_indices + tokens

    def vocabulary_size(self) -> int:
        """The number of indices (mask and OOV included)."""
        return self._offset() + len(self._tokens)

    def encoding_depth(self) -> int:
        """The vocabulary size, or before a vocabulary is set the size saved in the config
        (``vocabulary_size``: Keras's ``_frozen_vocab_size``)."""
        if not self._tokens and self._saved_size is not None:
            return int(self._saved_size)
        return self.vocabulary_size()

    @property
    def idf_weights(self) -> np.ndarray | None:
        """``output_mode="tf_idf"``: each index's weight (float32), else None."""
        return None if self._idf is None else np.asarray(self._idf, np.float32)

    # -- setting and learning the vocabulary --------------------------------------------

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Sets the vocabulary (and, for ``output_mode="tf_idf"``, the IDF weights).

        Args:
          vocabulary: the tokens in index order (a list, tuple or 1-D array, with or
            without the mask and OOV tokens at its head), or a path or URL of a text
            file with one token a line (read through `phalanx.io`).
          idf_weights: one weight per token; required with ``output_mode="tf_idf"``,
            refused otherwise.
        """
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise LayerArgumentError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise LayerArgumentError(
                "`idf_weights` should only be set if output_mode is `'tf_idf'`. Received: "
                f"output_mode={self.output_mode!r} and idf_weights={idf_weights!r}"
            )
        if isinstance(vocabulary, str | os.PathLike):
            self._tokens = self._tokens_from_file(os.fspath(vocabulary))
            return
        values = [self._token(t) for t in np.ravel(np.asarray(vocabulary, dtype=object))]
        if not values:
            raise LayerArgumentError(
                f"Cannot set an empty vocabulary. Received: vocabulary={vocabulary!r}"
            )
        special = self.get_vocabulary()[: self._offset()]
        special = [self._token(t) for t in special]
        found_special = values[: self._offset()] == special
        tokens = values[self._offset() :] if found_special else values
        self._check_tokens(tokens)
        self._tokens = tuple(tokens)
        if idf_weights is not None:
            self._set_idf(idf_weights, len(tokens), found_special)

    def _tokens_from_file(self, path: str) -> tuple:
        if not _fs.exists(path):
            raise LayerArgumentError(f"Vocabulary file {path} does not exist.")
        if self.output_mode == "tf_idf":
            raise LayerArgumentError(
                "output_mode `'tf_idf'` does not support loading a vocabulary from file."
            )
        with _fs.open(path, "rb") as f:
            lines = f.read().decode(getattr(self, "encoding", "utf-8")).splitlines()
        tokens = [self._token(line) for line in lines]
        self._check_tokens(tokens)
        return tuple(tokens)

    def _check_tokens(self, tokens: list) -> None:
        seen: Counter = Counter(tokens)
        repeated = [t for t, n in seen.items() if n > 1]
        if repeated:
            raise LayerArgumentError(
                "The passed vocabulary has at least one repeated term. Please uniquify your "
                f"dataset. The repeated terms are: {[self._out(t) for t in repeated]}"
            )
        if self.mask_token is not None and self._token(self.mask_token) in seen:
            raise LayerArgumentError(
                f"Found reserved mask token {self.mask_token!r} at unexpected location in "
                "`vocabulary`: the vocabulary need not include the mask and OOV tokens; "
                "remove them, or put them only at its start, in that order."
            )
        if self.invert and self.oov_token is not None and self._token(self.oov_token) in seen:
            raise LayerArgumentError(
                f"Found reserved OOV token {self.oov_token!r} at unexpected location in "
                "`vocabulary` (invert=True): remove it, or put it only at the start."
            )
        size = self._offset() + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise LayerArgumentError(
                "Attempted to set a vocabulary larger than the maximum vocab size. Received "
                f"vocabulary size is {size}; `max_tokens` is {self.max_tokens}."
            )

    def _set_idf(self, idf_weights: Any, n_tokens: int, found_special: bool) -> None:
        weights = np.asarray(idf_weights, dtype=np.float32)
        if weights.ndim != 1:
            raise LayerArgumentError(
                f"TF-IDF data must be a 1-index array. Received: shape {weights.shape}"
            )
        if len(weights) != n_tokens + (self._offset() if found_special else 0):
            raise LayerArgumentError(
                "`idf_weights` must be the same length as vocabulary. len(idf_weights) is "
                f"{len(weights)}; len(vocabulary) is {n_tokens}"
            )
        front = 0 if found_special else self._offset()
        back = self.max_tokens - front - len(weights) if self.pad_to_max_tokens else 0
        fill = 0.0 if found_special else float(np.average(weights))
        self._idf = tuple(np.pad(weights, (front, back), constant_values=(fill, 0.0)).tolist())

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns the vocabulary (and the IDF weights) from ``data``.

        Args:
          data: a list, tuple or array (a rank-1 one: each element a document), or an
            iterable of batches (a `phalanx.data.Dataset`, a generator).
          steps: the number of batches to read from an iterable; None: all of them.
        """
        self.reset_state()
        if isinstance(data, list | tuple | np.ndarray | jax.Array):
            array = np.asarray(data, dtype=object) if not _ragged(data) else None
            if array is not None and array.ndim == 1:
                array = array[:, None]
            self.update_state(data if array is None else array)
        else:
            for i, batch in enumerate(data):
                if steps is not None and i >= steps:
                    break
                self.update_state(batch)
        self.finalize_state()

    def update_state(self, data: Any) -> None:
        """Counts the tokens of one batch (Keras's ``update_state``)."""
        if self._has_input_vocabulary:
            raise LayerArgumentError(
                f"Cannot adapt layer '{self.name}' after setting a static vocabulary via "
                "`vocabulary` argument or `set_vocabulary()` method."
            )
        rows = token_rows(data)
        for row in rows:
            keys = [self._token(t) for t in row]
            self._counts.update(keys)
            if self.output_mode == "tf_idf":
                self._document_counts.update(set(keys))
        self._documents += len(rows)

    def finalize_state(self) -> None:
        """Makes the counted tokens the vocabulary (Keras's ``finalize_state``)."""
        if self._has_input_vocabulary or not self._counts:
            return
        for special in (self.mask_token, self.oov_token):
            if special is not None:
                self._counts.pop(self._token(special), None)
        ordered = sorted(self._counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        if self.max_tokens is not None:
            ordered = ordered[: self.max_tokens - self._offset()]
        self._tokens = tuple(t for t, _ in ordered)
        if self.output_mode == "tf_idf":
            df = np.array([self._document_counts[t] for t in self._tokens], np.float64)
            idf = np.log(1 + self._documents / (1 + df)).astype(np.float32)
            self._set_idf(idf, len(idf), found_special=False)
        self.reset_state()

    def reset_state(self) -> None:
        """Forgets the counts of ``update_state`` (not the vocabulary)."""
        self._counts, self._document_counts, self._documents = Counter(), Counter(), 0

    # -- configuration ------------------------------------------------------------------

    def get_config(self) -> dict:
        config = super().get_config()
        config["vocabulary"] = _listify(self._input_vocabulary)
        config["idf_weights"] = _listify(self._input_idf_weights)
        config["vocabulary_size"] = self.vocabulary_size()
        return config

    # -- Keras's saving hooks (``.keras``: ``assets/<layer>/vocabulary.txt``, ``idf_weights``)

    def save_own_variables(self, store: dict) -> None:
        """Keras's hook: ``store["idf_weights"]`` in ``output_mode="tf_idf"``."""
        if self.output_mode == "tf_idf":
            store["idf_weights"] = self.idf_weights

    def load_own_variables(self, store: Any) -> None:
        """Keras's hook: the IDF weights from ``store["idf_weights"]`` (``"tf_idf"``)."""
        if self.output_mode == "tf_idf":
            self._idf = tuple(np.asarray(store["idf_weights"], np.float32).tolist())

    def save_assets(self, dir_path: str) -> None:
        """Keras's hook: an adapted (or file) vocabulary as ``dir_path/vocabulary.txt``, one
        token a line, the special tokens first (a given list is in ``get_config``)."""
        if self._input_vocabulary is not None:
            return
        text = "\n".join(str(w) for w in self.get_vocabulary(include_special_tokens=True))
        _fs.makedirs(dir_path)
        with _fs.open(_vocabulary_file(dir_path), "wb") as f:
            f.write(text.encode(getattr(self, "encoding", "utf-8")))

    def load_assets(self, dir_path: str) -> None:
        """Keras's hook: the vocabulary from ``dir_path/vocabulary.txt`` (``save_assets``)."""
        if self._input_vocabulary is not None:
            return
        with _fs.open(_vocabulary_file(dir_path), "rb") as f:
            lines = f.read().decode(getattr(self, "encoding", "utf-8")).splitlines()
        while lines and lines[-1] == "":
            lines.pop()
        idf = self._idf
        self._idf = None
        values = lines if isinstance(self, StringLookup) else [int(v) for v in lines]
        self.set_vocabulary(values, idf_weights=idf)

    # -- the lookup ---------------------------------------------------------------------

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        if self.name is None:
            self.name = type(self).__name__.lower()
        if is_symbolic(x):  # Input(dtype="string") -> lookup: recorded, as Keras's spec
            check_symbolic(self, x, strings=isinstance(self, StringLookup) != self.invert)
            return super().__call__(x, *args, **kwargs)
        refuse_traced(self, x)
        if isinstance(x, RaggedTensor):  # Keras: the values looked up, each row a sample
            if self.output_mode != "int":
                return self.encode_rows(x.to_list())
            return x.with_values(self._lookup(np.asarray(x.values)))
        return self._lookup(np.asarray(x) if not isinstance(x, np.ndarray) else x)

    @property
    def symbolic_dtype(self) -> str:
        """The dtype of a symbolic output (Keras's ``compute_output_spec``)."""
        if self.invert:
            return "string" if isinstance(self, StringLookup) else str(self.vocabulary_dtype)
        return "int64" if self.output_mode == "int" else "float32"

    def compute_output_shape(self, input_shape: Any) -> tuple:
        """Keras's: the input's shape (``"int"``), else the last axis becomes the depth
        (``"one_hot"``: an axis of the depth is added, replacing a last axis of 1)."""
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = self.max_tokens if self.pad_to_max_tokens else self.encoding_depth()
        if self.output_mode == "one_hot" and not (shape and shape[-1] == 1):
            return (*shape, depth)
        return (*shape[:-1], depth)

    def _index(self) -> dict:
        index = {t: i + self._offset() for i, t in enumerate(self._tokens)}
        if self.mask_token is not None:
            index[self._token(self.mask_token)] = 0 if self.output_mode == "int" else -1
        return index

    def _ids(self, tokens: list, index: dict) -> list:
        out = []
        for token in tokens:
            key = self._token(token)
            found = index.get(key)
            if found is None:
                found = self._oov_index(key)
            out.append(found)
        return out

    def _oov_index(self, key: Any) -> int:
        """The OOV index of a token not in the vocabulary: the one OOV index, or with
        several Keras's bucket (`_oov_bucket`) after the mask's index."""
        if self.num_oov_indices == 0:
            raise ValueError(
                f"When `num_oov_indices=0` all inputs should be in vocabulary, found OOV "
                f"value {self._out(key)!r}; consider setting `num_oov_indices=1`."
            )
        if self.num_oov_indices == 1:
            return self._oov_start()
        return self._oov_start() + self._oov_bucket(key)

    def _oov_bucket(self, key: Any) -> int:
        """Keras's bucket in ``[0, num_oov_indices)`` of an OOV token: TensorFlow's
        ``to_hash_bucket_fast`` (FarmHash ``Fingerprint64``) of its bytes, or with a
        ``salt`` ``to_hash_bucket_strong`` (SipHash-2-4 keyed by the salt)."""
        data = self._hash_bytes(key)
        if self.salt is None:
            return _hashes.fingerprint64(data) % self.num_oov_indices
        return _hashes.siphash64(self.salt, data) % self.num_oov_indices

    def _hash_bytes(self, key: Any) -> bytes:
        raise NotImplementedError

    def _depth(self) -> int:
        if self.pad_to_max_tokens:
            return self.max_tokens
        if not self._tokens and self.output_mode != "int":
            raise LayerArgumentError(
                f"When using `output_mode={self.output_mode}` and `pad_to_max_tokens=False`, "
                "you must set the layer's vocabulary before calling it. Either pass a "
                "`vocabulary` argument to the layer, or call `adapt` with some sample data."
            )
        return self.vocabulary_size()

    def _lookup(self, x: np.ndarray) -> np.ndarray:
        if self.invert:
            table = self.get_vocabulary()
            oov = self._out(self.oov_token) if self.oov_token is not None else None
            return np.vectorize(
                lambda i: table[i] if 0 <= i < len(table) else oov,
                otypes=[object],
            )(x).astype(self._dtype_of_tokens())
        depth = self._depth() if self.output_mode != "int" else None
        flat = np.ravel(np.asarray(x, dtype=object)).tolist()
        ids = np.asarray(self._ids(flat, self._index()), np.int64).reshape(x.shape)
        if self.output_mode == "int":
            return ids
        return self._encode(ids, depth)

    def encode_rows(self, rows: list) -> np.ndarray:
        """Documents (rows of tokens) as Keras's (rows, depth) encoding (``TextVectorization``)."""
        depth, index = self._depth(), self._index()
        out = np.zeros((len(rows), depth), np.float32)
        for r, row in enumerate(rows):
            ids = np.asarray(self._ids(row, index), np.int64)
            np.add.at(out[r], ids[(ids >= 0) & (ids < depth)], 1.0)
        return self._weigh(out)

    def _encode(self, ids: np.ndarray, depth: int) -> np.ndarray:
        """Keras's one-hot / multi-hot / count / tf-idf encodings of indices (float32); the
        last axis is the sample's tokens, a dropped mask token is -1."""
        ids = ids[None] if ids.ndim == 0 else ids
        if self.output_mode == "one_hot":
            ids = ids[..., 0] if ids.ndim > 1 and ids.shape[-1] == 1 else ids
            return np.where((ids >= 0)[..., None], np.eye(depth, dtype=np.float32)[ids], 0.0)
        rows = ids.reshape(-1, ids.shape[-1])
        out = np.zeros((len(rows), depth), np.float32)
        for r, row in enumerate(rows):
            np.add.at(out[r], row[(row >= 0) & (row < depth)], 1.0)
        return self._weigh(out).reshape(ids.shape[:-1] + (depth,))

    def _weigh(self, counts: np.ndarray) -> np.ndarray:
        if self.output_mode == "multi_hot":
            return np.minimum(counts, 1.0)
        if self.output_mode == "tf_idf":
            if self._idf is None:
                raise LayerArgumentError(
                    "When `output_mode` is `'tf_idf'`, `idf_weights` must be provided."
                )
            return counts * self.idf_weights[: counts.shape[-1]]
        return counts

    def _dtype_of_tokens(self) -> Any:
        raise NotImplementedError


def _oov_method(oov_method: str, salt: Any) -> str:
    if oov_method not in ("floormod", "farmhash"):
        raise LayerArgumentError(
            f"`oov_method` must be 'floormod' or 'farmhash'. Received: oov_method={oov_method!r}"
        )
    return oov_method


def _salt(salt: Any) -> Any:
    """Keras's ``salt`` check: None, an int, or two ints (kept as a pair)."""
    if salt is None:
        return None
    if isinstance(salt, tuple | list) and len(salt) == 2:
        return tuple(salt)
    if isinstance(salt, int):
        return (salt, salt)
    raise LayerArgumentError(
        "The `salt` argument for `IndexLookup` can only be a tuple of 2 integers, or a "
        f"single integer. Received: salt={salt}."
    )


def _vocabulary_file(dir_path: Any) -> str:
    return os.fspath(dir_path).rstrip("/") + "/vocabulary.txt"


def _ragged(data: Any) -> bool:
    """A list of rows of different lengths (which numpy cannot make an array of)."""
    if not isinstance(data, list | tuple) or not data:
        return False
    if not all(isinstance(r, list | tuple | np.ndarray) for r in data):
        return False
    return len({len(r) for r in data}) > 1


def _listify(value: Any) -> Any:
    if value is None:
        return None
    return [v.decode() if isinstance(v, bytes) else v for v in np.asarray(value).tolist()]


class StringLookup(IndexLookup):
    """Keras's ``StringLookup``: strings to integer indices (``invert=True``: back).

    Args:
      max_tokens: the largest number of indices (mask and OOV included); ``adapt``
        keeps the most frequent tokens that fit.
      num_oov_indices: the number of OOV indices: 1 (default: unknown tokens get
        index 0, or 1 after a mask), 0 (unknown tokens raise), or more: each unknown
        token goes to Keras's bucket, the FarmHash ``Fingerprint64`` of its bytes
        (with ``salt``: SipHash-2-4) modulo ``num_oov_indices``, as TensorFlow's
        ``to_hash_bucket_fast`` (``to_hash_bucket_strong``).
      mask_token: a token that maps to index 0 in ``output_mode="int"`` (dropped in
        the other modes), or None.
      oov_token: the token ``invert`` gives for the OOV index; default ``"[UNK]"``.
      vocabulary: a list of tokens, a path or URL of a file of one token a line, or
        None (then ``adapt``).
      idf_weights: with ``output_mode="tf_idf"`` and a ``vocabulary``: one weight a token.
      invert: map indices to tokens.
      output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"``, ``"count"`` or
        ``"tf_idf"`` (the counts times the IDF weights).
      pad_to_max_tokens: the encodings have ``max_tokens`` entries, not the vocabulary size.
      sparse: refused (Keras 3 has it on TensorFlow only).
      encoding: the encoding of ``str`` tokens (``"utf-8"``).
      name: the layer's name.
      salt: with several OOV indices, the SipHash-2-4 key (an int ``s``: ``(s, s)``,
        or two ints) of the OOV buckets; None: FarmHash. No effect with 0 or 1.
      oov_method: ``"floormod"`` or ``"farmhash"``; strings are always hashed, as
        in Keras (the argument only matters for ``IntegerLookup``).
      vocabulary_size: Keras's saved vocabulary size (from ``get_config``): the depth of
        the encodings until the vocabulary is set (a ``.keras`` file's assets load later).
      has_input_vocabulary: Keras's saved flag: the vocabulary was given, not adapted.

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
        name: str | None = None,
        salt: Any = None,
        *,
        oov_method: str = "floormod",
        vocabulary_size: int | None = None,
        has_input_vocabulary: bool | None = None,
    ):
        self.encoding = encoding
        self.oov_method = _oov_method(oov_method, salt)
        self.salt = _salt(salt)
        super().__init__(
            max_tokens,
            num_oov_indices,
            mask_token,
            oov_token,
            vocabulary,
            idf_weights,
            invert,
            output_mode,
            pad_to_max_tokens,
            sparse,
            name=name,
            vocabulary_size=vocabulary_size,
            has_input_vocabulary=has_input_vocabulary,
        )

    def _token(self, token: Any) -> bytes:
        return token.encode(self.encoding) if isinstance(token, str) else bytes(token)

    def _hash_bytes(self, key: bytes) -> bytes:
        return key  # strings are always hashed (Keras: whatever ``oov_method``)

    def _out(self, token: Any) -> str:
        return self._token(token).decode(self.encoding)

    def _dtype_of_tokens(self) -> Any:
        return np.bytes_


class IntegerLookup(IndexLookup):
    """Keras's ``IntegerLookup``: integer tokens to contiguous indices (``invert=True``: back).

    Args:
      max_tokens: the largest number of indices ``adapt`` keeps.
      num_oov_indices: the number of OOV indices: 1 (default), 0 (unknown tokens
        raise), or more: each unknown token goes to the bucket of ``oov_method``.
      mask_token: a token that maps to index 0 (``output_mode="int"``), or None.
      oov_token: the token ``invert`` gives for the OOV index; default -1.
      vocabulary: a list of ints, a path of a file of one a line, or None (then ``adapt``).
      vocabulary_dtype: the dtype of ``invert``'s output (``"int64"``).
      idf_weights: with ``output_mode="tf_idf"`` and a ``vocabulary``: one weight a token.
      invert: map indices to tokens.
      output_mode: ``"int"`` (default), ``"one_hot"``, ``"multi_hot"``, ``"count"`` or
        ``"tf_idf"``.
      sparse: refused (Keras 3 has it on TensorFlow only).
      pad_to_max_tokens: the encodings have ``max_tokens`` entries.
      oov_method: how several OOV indices split unknown tokens: ``"floormod"``
        (default: ``token % num_oov_indices``, as ``tf.math.floormod``) or
        ``"farmhash"`` (FarmHash ``Fingerprint64`` of the token's decimal string, as
        ``tf.strings.to_hash_bucket_fast(tf.strings.as_string(token))``). No effect
        with 0 or 1 OOV index.
      salt: with ``oov_method="farmhash"``: SipHash-2-4 with this key (an int ``s``:
        ``(s, s)``, or two ints) instead of FarmHash; refused with ``"floormod"``.
      name: the layer's name.
      vocabulary_size: Keras's saved vocabulary size (from ``get_config``): the depth of
        the encodings until the vocabulary is set (a ``.keras`` file's assets load later).
      has_input_vocabulary: Keras's saved flag: the vocabulary was given, not adapted.

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
        vocabulary: Any = None,
        vocabulary_dtype: str = "int64",
        idf_weights: Any = None,
        invert: bool = False,
        output_mode: str = "int",
        sparse: bool = False,
        pad_to_max_tokens: bool = False,
        oov_method: str = "floormod",
        salt: Any = None,
        name: str | None = None,
        *,
        vocabulary_size: int | None = None,
        has_input_vocabulary: bool | None = None,
    ):
        self.vocabulary_dtype = vocabulary_dtype
        if salt is not None and oov_method != "farmhash":
            raise LayerArgumentError(
                f"`salt` can only be used when `oov_method='farmhash'`. Received: oov_method={oov_method}"
            )
        self.oov_method = _oov_method(oov_method, salt)
        self.salt = _salt(salt)
        super().__init__(
            max_tokens,
            num_oov_indices,
            mask_token,
            oov_token,
            vocabulary,
            idf_weights,
            invert,
            output_mode,
            pad_to_max_tokens,
            sparse,
            name=name,
            vocabulary_size=vocabulary_size,
            has_input_vocabulary=has_input_vocabulary,
        )

    def _token(self, token: Any) -> int:
        return int(token)

    def _oov_bucket(self, key: int) -> int:
        if self.oov_method == "floormod":  # Keras's default: tf.math.floormod
            return key % self.num_oov_indices
        return super()._oov_bucket(key)

    def _hash_bytes(self, key: int) -> bytes:
        return str(key).encode()  # tf.strings.as_string of an int64

    def _dtype_of_tokens(self) -> Any:
        return np.dtype(self.vocabulary_dtype)
