"""Keras's ``TextVectorization``: strings to token indices or to per-document encodings.

Keras 3's steps, on the host: standardize each string, split it into tokens, make
ngrams, look the tokens up in a `phalanx.layers.StringLookup` (mask token ``""`` at
index 0 in ``output_mode="int"``, then ``"[UNK]"``), then pad the rows with 0 (or
encode each document). Keras runs the string steps with TensorFlow's ops; phalanx
runs them on bytes with TensorFlow's semantics: ``"lower"`` lowercases ASCII letters
only (``tf.strings.lower``), ``"strip_punctuation"`` removes Keras's punctuation
class, ``"whitespace"`` splits on ASCII whitespace (runs of it, stripped at both
ends: ``tf.strings.split``), ``"character"`` on Unicode characters
(``tf.strings.unicode_split``), and the ngrams of each width come in the order of
``ngrams``, joined by one space (``tf.strings.ngrams``). A callable ``standardize``
receives a numpy array of ``str`` (as Keras 3 gives it on JAX) and returns one of
the same shape; a callable ``split`` receives the 1-D array of ``str`` and returns
one row of tokens a string (a list of lists, ``np.char.split``'s output, or a
`phalanx.io.RaggedTensor`).

The layer runs in the input pipeline (``dataset.map(layer)``) or on lists and numpy
arrays, as Keras 3 on JAX runs it (outside ``jit``); a traced or symbolic input is
refused.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import LayerArgumentError
from ..io import RaggedTensor
from ._index_lookup import StringLookup, check_symbolic, refuse_traced, token_rows
from ._layer import Layer
from ._symbolic import is_symbolic

_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")
_PUNCTUATION = re.compile(rb"[!\"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']")


def _as_object_array(inputs: Any) -> Any:
    if hasattr(inputs, "to_list") and hasattr(inputs, "row_splits"):
        return np.empty((len(inputs), 0), object)  # a RaggedTensor: rows, never one string
    return inputs if isinstance(inputs, np.ndarray) else np.asarray(inputs, dtype=object)


def _check_choice(value: Any, allowed: tuple, arg: str) -> None:
    if value is None or callable(value) or value in allowed:
        return
    raise LayerArgumentError(
        f"Unknown value for `{arg}` argument of layer TextVectorization. Allowed values are: "
        f"{allowed}, None, or a callable. Received: {value!r}"
    )


class TextVectorization(Layer):
    """Keras's ``TextVectorization``: text to integer sequences or to per-document vectors.

    Args:
      max_tokens: the largest vocabulary (the mask ``""`` in ``"int"`` mode and the OOV
        ``"[UNK]"`` included); ``adapt`` keeps the most frequent tokens that fit.
      standardize: ``"lower_and_strip_punctuation"`` (default), ``"lower"``,
        ``"strip_punctuation"``, None, or a callable on a numpy array of ``str``.
      split: ``"whitespace"`` (default), ``"character"``, None (each string is one
        token), or a callable from a 1-D array of ``str`` to rows of tokens.
      ngrams: None, an int ``n`` (the ngrams of widths 1 to ``n``) or a tuple of widths.
      output_mode: ``"int"`` (default: one index a token, rows padded with 0),
        ``"multi_hot"``, ``"count"`` or ``"tf_idf"`` (one vector a document).
      output_sequence_length: ``"int"`` mode: pad or cut each row to this length.
      pad_to_max_tokens: the vectors have ``max_tokens`` entries, not the vocabulary size.
      vocabulary: a list of tokens, or a path or URL of a file of one token a line.
      idf_weights: with ``output_mode="tf_idf"`` and a ``vocabulary``: one weight a token.
      sparse: refused (Keras 3 has it on TensorFlow only).
      ragged: ``"int"`` mode: a `phalanx.io.RaggedTensor` of the rows, unpadded (Keras 3
        has it on TensorFlow only; ``output_sequence_length`` still cuts).
      encoding: the encoding of the strings (``"utf-8"``).
      name: the layer's name.
      vocabulary_size: Keras's saved vocabulary size (from ``get_config``): the depth of
        the encodings until the vocabulary is set (a ``.keras`` file's assets load later).
      has_input_vocabulary: Keras's saved flag: the vocabulary was given, not adapted.

    Examples:
      >>> layer = TextVectorization(max_tokens=5000, output_sequence_length=4)
      >>> layer.adapt(["foo bar", "bar baz", "baz bada boom"])
      >>> layer([["foo qux bar"], ["qux baz"]]).tolist()
      [[4, 1, 3, 0], [1, 2, 0, 0]]
      >>> TextVectorization(vocabulary=["earth", "wind", "and", "fire"]).get_vocabulary()
      ['', '[UNK]', 'earth', 'wind', 'and', 'fire']
    """

    runs_on_host = True
    #: Keras's saver writes the state twice: the layer's (its ``save_assets`` is its lookup
    #: layer's) and its ``_lookup_layer`` attribute's, which Keras's loader reads too.
    keras_state_paths = ("", "_lookup_layer/")

    def __init__(
        self,
        max_tokens: int | None = None,
        standardize: Any = "lower_and_strip_punctuation",
        split: Any = "whitespace",
        ngrams: int | tuple | None = None,
        output_mode: str = "int",
        output_sequence_length: int | None = None,
        pad_to_max_tokens: bool = False,
        vocabulary: Any = None,
        idf_weights: Any = None,
        sparse: bool = False,
        ragged: bool = False,
        encoding: str = "utf-8",
        name: str | None = None,
        *,
        vocabulary_size: int | None = None,
        has_input_vocabulary: bool | None = None,
    ):
        super().__init__(name=name)
        if sparse:
            raise LayerArgumentError(
                "TextVectorization: sparse=True is not supported by phalanx (Keras 3 has it "
                "on the TensorFlow backend only); use the dense output."
            )
        _check_choice(standardize, _STANDARDIZE, "standardize")
        _check_choice(split, _SPLIT, "split")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if output_mode not in ("int", "multi_hot", "count", "tf_idf"):
            raise LayerArgumentError(
                "TextVectorization output_mode must be one of 'int', 'multi_hot', 'count' or "
                f"'tf_idf' in phalanx (Keras's 'one_hot' needs TensorFlow); got {output_mode!r}."
            )
        if not (
            ngrams is None
            or isinstance(ngrams, int)
            or (isinstance(ngrams, tuple) and all(isinstance(item, int) for item in ngrams))
        ):
            raise LayerArgumentError(
                f"`ngrams` must be None, an integer, or a tuple of integers. Received: ngrams={ngrams}"
            )
        if output_mode == "int" and not (
            output_sequence_length is None or isinstance(output_sequence_length, int)
        ):
            raise LayerArgumentError(
                "`output_sequence_length` must be either None or an integer when `output_mode` "
                f"is 'int'. Received: output_sequence_length={output_sequence_length}"
            )
        if output_mode != "int" and output_sequence_length is not None:
            raise LayerArgumentError(
                "`output_sequence_length` must not be set if `output_mode` is not 'int'. "
                f"Received output_sequence_length={output_sequence_length}."
            )
        if ragged and output_mode != "int":
            raise LayerArgumentError(
                "`ragged` must not be true if `output_mode` is not `'int'`. Received: "
                f"ragged={ragged} and output_mode={output_mode}"
            )
        self.max_tokens = max_tokens
        self.standardize = standardize
        self.split = split
        self.ngrams = ngrams
        self._widths = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self.output_mode = output_mode
        self.output_sequence_length = output_sequence_length
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.sparse = False
        self.ragged = bool(ragged)
        self.encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens,
            vocabulary=vocabulary,
            idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens,
            mask_token="",
            output_mode=output_mode,
            encoding=encoding,
            vocabulary_size=vocabulary_size,
            has_input_vocabulary=has_input_vocabulary,
        )

    # -- the vocabulary (the StringLookup's) ----------------------------------------------

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learns the vocabulary (and the IDF weights) from the tokens of ``data``.

        Args:
          data: a list of strings or a numpy array (each string a document), or an
            iterable of batches of them (a `phalanx.data.Dataset`, a generator).
          batch_size: refused (Keras's argument, unused there too); batch the data instead.
          steps: the number of batches to read from an iterable; None: all of them.
        """
        if batch_size is not None:
            raise LayerArgumentError(
                f"TextVectorization.adapt: batch_size={batch_size!r} is not supported; give "
                "a batched dataset or an array."
            )
        lookup = self._lookup_layer
        lookup.reset_state()
        if isinstance(data, list | tuple | np.ndarray) or hasattr(data, "__array__"):
            array = np.asarray(data, dtype=object)
            lookup.update_state(self._preprocess(array[:, None] if array.ndim == 1 else array))
        else:
            for i, batch in enumerate(data):
                if steps is not None and i >= steps:
                    break
                lookup.update_state(self._preprocess(batch))
        lookup.finalize_state()

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Sets the vocabulary (a list, or a file's path) and, for ``"tf_idf"``, the weights."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights=idf_weights)

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """Every index's token (``""`` and ``"[UNK]"`` first unless
        ``include_special_tokens=False``)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        """The number of indices (mask and OOV included)."""
        return self._lookup_layer.vocabulary_size()

    def get_config(self) -> dict:
        config = super().get_config()
        config["max_tokens"] = self.max_tokens
        config["ngrams"] = list(self.ngrams) if isinstance(self.ngrams, tuple) else self.ngrams
        for key in ("standardize", "split"):
            value = getattr(self, key)
            config[key] = value if value is None or isinstance(value, str) else value.__name__
        lookup = self._lookup_layer.get_config()
        for key in ("vocabulary", "idf_weights", "vocabulary_size"):
            config[key] = lookup[key]
        return config

    @classmethod
    def from_config(cls, config: dict) -> TextVectorization:
        config = dict(config)
        for key in ("standardize", "split"):
            value = config.get(key)
            if (value is not None and not isinstance(value, str)) or (
                isinstance(value, str) and value not in _STANDARDIZE + _SPLIT
            ):
                raise LayerArgumentError(
                    f"TextVectorization.from_config: {key}={value!r} is a function; phalanx "
                    "runs no code from a configuration: make the layer in Python with it."
                )
        if isinstance(config.get("ngrams"), list):
            config["ngrams"] = tuple(config["ngrams"])
        return super().from_config(config)

    @property
    def symbolic_dtype(self) -> str:
        """The dtype of a symbolic output (Keras's ``compute_output_spec``)."""
        return "int64" if self.output_mode == "int" else "float32"

    def compute_output_shape(self, input_shape: Any) -> tuple:
        """Keras's: ``(output_sequence_length,)`` per example (``"int"``), else ``(depth,)``."""
        if self.output_mode == "int":
            return (self.output_sequence_length,)
        lookup = self._lookup_layer
        return (lookup.max_tokens if self.pad_to_max_tokens else lookup.encoding_depth(),)

    def save_own_variables(self, store: dict) -> None:
        """Keras's hook (its StringLookup's): ``store["idf_weights"]`` for ``"tf_idf"``."""
        self._lookup_layer.save_own_variables(store)

    def load_own_variables(self, store: Any) -> None:
        """Keras's hook: the IDF weights from ``store["idf_weights"]``."""
        self._lookup_layer.load_own_variables(store)

    def save_assets(self, dir_path: str) -> None:
        """Keras's hook: an adapted vocabulary as ``dir_path/vocabulary.txt``."""
        self._lookup_layer.save_assets(dir_path)

    def load_assets(self, dir_path: str) -> None:
        """Keras's hook: the vocabulary from ``dir_path/vocabulary.txt``."""
        self._lookup_layer.load_assets(dir_path)

    # -- the steps ------------------------------------------------------------------------

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if self.name is None:
            self.name = "text_vectorization"
        if is_symbolic(inputs):  # Input(dtype="string") -> this layer: recorded, as Keras
            check_symbolic(self, inputs, strings=True)
            return Layer.__call__(self, inputs, *args, **kwargs)
        refuse_traced(self, inputs)
        # One string (an unbatched dataset's element): Keras's 1-D tokens, a 1-D output.
        one = self.split is not None and np.ndim(_as_object_array(inputs)) == 0
        tokens = self._preprocess(inputs)
        lookup = self._lookup_layer
        if self.output_mode != "int":
            if isinstance(tokens, np.ndarray) and tokens.ndim <= 1:
                return lookup(tokens)
            out = lookup.encode_rows(token_rows(tokens))
        elif isinstance(tokens, np.ndarray):
            return self._fit_length(lookup(tokens))
        else:
            out = self._int_rows(tokens)
            if one and isinstance(out, RaggedTensor):
                return np.asarray(out.values)
        return out[0] if one else out

    def _int_rows(self, tokens: list) -> Any:
        """Rows of tokens as ids, padded with 0 (or a RaggedTensor with ``ragged=True``)."""
        lookup = self._lookup_layer
        index = lookup._index()
        rows = [lookup._ids(row, index)[: self.output_sequence_length] for row in tokens]
        if self.ragged:
            lengths = [len(r) for r in rows]
            return RaggedTensor.from_row_lengths(
                np.asarray([i for r in rows for i in r], np.int64), lengths
            )
        width = self.output_sequence_length
        width = max((len(r) for r in rows), default=0) if width is None else width
        out = np.zeros((len(rows), width), np.int64)
        for r, row in enumerate(rows):
            out[r, : len(row)] = row
        return out

    def _fit_length(self, ids: np.ndarray) -> np.ndarray:
        """Dense ``"int"`` output cut or padded with 0 to ``output_sequence_length``."""
        n = self.output_sequence_length
        if n is None or self.ragged or ids.ndim == 0:
            return ids
        ids = ids[..., :n]
        pad = [(0, 0)] * (ids.ndim - 1) + [(0, n - ids.shape[-1])]
        return np.pad(ids, pad)

    def _bytes(self, inputs: Any) -> np.ndarray:
        if hasattr(inputs, "to_list") and hasattr(inputs, "row_splits"):
            inputs = inputs.to_list()
        array = np.asarray(inputs, dtype=object)
        encode = np.vectorize(
            lambda s: s.encode(self.encoding) if isinstance(s, str) else bytes(s), otypes=[object]
        )
        return encode(array) if array.size else array

    def _standardized(self, data: np.ndarray) -> np.ndarray:
        if callable(self.standardize):
            text = np.vectorize(lambda b: b.decode(self.encoding), otypes=[str])(data)
            return self._bytes(self.standardize(text))
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            data = np.vectorize(bytes.lower, otypes=[object])(data) if data.size else data
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            strip = lambda b: _PUNCTUATION.sub(b"", b)  # noqa: E731
            data = np.vectorize(strip, otypes=[object])(data) if data.size else data
        return data

    def _preprocess(self, inputs: Any) -> Any:
        """The tokens of ``inputs``: a numpy array (``split=None``, no ngrams) or rows."""
        data = self._standardized(self._bytes(inputs))
        if self.split is None:
            if self._widths is None:
                return data
            rows = [data.tolist()] if data.ndim <= 1 else data.reshape(len(data), -1).tolist()
            return [self._ngrams(row) for row in rows]
        if data.ndim > 1:
            if data.shape[-1] != 1:
                raise LayerArgumentError(
                    "When using `TextVectorization` to tokenize strings, the input rank must be "
                    "1 or the last shape dimension must be 1. Received: "
                    f"inputs.shape={data.shape} with rank={data.ndim}"
                )
            data = data[..., 0]
        if data.ndim > 1:
            raise LayerArgumentError(
                f"TextVectorization splits a batch of strings (rank 1, or rank 2 of shape "
                f"(batch, 1)); got shape {data.shape + (1,)}. Reshape the input to (batch,)."
            )
        if data.ndim == 0:
            data = data[None]
        rows = self._split(data)
        return rows if self._widths is None else [self._ngrams(row) for row in rows]

    def _split(self, data: np.ndarray) -> list:
        if self.split == "whitespace":
            return [s.split() for s in data.tolist()]
        if self.split == "character":
            return [
                [c.encode("utf-8") for c in s.decode("utf-8", "replace")] for s in data.tolist()
            ]
        text = np.asarray([s.decode(self.encoding) for s in data.tolist()], dtype=str)
        out = self.split(text)
        if hasattr(out, "to_list") and hasattr(out, "row_splits"):
            out = out.to_list()
        return [self._bytes(list(row)).tolist() for row in out]

    def _ngrams(self, row: list) -> list:
        out = []
        for n in self._widths:
            out += [b" ".join(row[i : i + n]) for i in range(len(row) - n + 1)]
        return out
