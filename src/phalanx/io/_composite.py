"""Host-side sparse and ragged values: ``SparseTensor``, ``RaggedTensor`` and their specs.

TensorFlow returns these from ``parse_example`` (``VarLenFeature``,
``SparseFeature``, ``RaggedFeature``) and from ``ragged_batch`` /
``sparse_batch``. phalanx's are plain numpy containers with TF's field and
method names, so code that reads ``.indices``/``.values``/``.dense_shape`` or
``.values``/``.row_splits``/``.to_list()``/``.to_tensor()`` ports unchanged.
They are host values: a compiled step takes dense arrays, so ``fit`` and
``distribute_dataset`` refuse them and ask for ``to_tensor()``/``to_dense()``
(or ``padded_batch``) first.

Each is one leaf of a dataset element (not a tuple of its parts), and its
``element_spec`` entry is a `SparseTensorSpec` or `RaggedTensorSpec`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["RaggedTensor", "RaggedTensorSpec", "SparseTensor", "SparseTensorSpec"]

_SPLITS_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _default_fill(dtype: np.dtype) -> Any:
    return b"" if dtype.kind == "O" else dtype.type(0)


def _dims(shape: Sequence[int | None] | None) -> tuple[int | None, ...] | None:
    return None if shape is None else tuple(None if d is None else int(d) for d in shape)


def _as_values(values: Any) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    arr = np.asarray(values)
    if arr.dtype.kind in "SU":  # strings as exact bytes, as every phalanx string array
        out = np.empty(arr.shape, object)
        out[...] = np.vectorize(
            lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v), otypes=[object]
        )(arr)
        return out
    return arr


def _int_vector(x: Any, what: str, dtype: Any = None) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype} ({x!r:.60}).")
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a vector (1-D), got shape {arr.shape}.")
    return arr.astype(dtype if dtype is not None else np.int64, copy=False)


# ---------------------------------------------------------------------------
# SparseTensor
# ---------------------------------------------------------------------------


class SparseTensor:
    """A sparse array: ``values[i]`` sits at ``indices[i]`` of a ``dense_shape`` array (``tf.sparse.SparseTensor``).

    ``indices`` is ``(nnz, rank)`` int64, ``values`` ``(nnz,)``, ``dense_shape``
    ``(rank,)`` int64. From ``parse_example`` and ``sparse_batch`` the indices
    are in row-major order, so `to_ragged` is cheap.

    Args:
        indices: the coordinates of the values, ``(nnz, rank)`` integers.
        values: one value per index row.
        dense_shape: the shape of the dense array.

    Raises:
        ValueError: the three do not fit together (the message gives their shapes).

    Examples:
        >>> st = SparseTensor([[0, 0], [0, 1], [2, 0]], [5, 6, 7], [3, 2])
        >>> st.to_dense().tolist()
        [[5, 6], [0, 0], [7, 0]]
        >>> st.to_ragged().to_list()
        [[5, 6], [], [7]]
        >>> st.shape, st.dtype
        ((3, 2), dtype('int64'))
    """

    __slots__ = ("dense_shape", "indices", "values")

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        dense_shape = _int_vector(dense_shape, "SparseTensor dense_shape")
        values = _as_values(values)
        indices = np.asarray(indices)
        if indices.size == 0:
            indices = indices.reshape(0, len(dense_shape))
        if indices.dtype.kind not in "iu":
            raise TypeError(f"SparseTensor indices must be integers, got dtype {indices.dtype}.")
        indices = indices.astype(np.int64, copy=False)
        if (
            values.ndim != 1
            or indices.ndim != 2
            or indices.shape != (len(values), len(dense_shape))
        ):
            raise ValueError(
                "SparseTensor needs indices of shape (nnz, rank), values of shape (nnz,) and "
                f"dense_shape of shape (rank,); got indices {indices.shape}, values "
                f"{values.shape}, dense_shape {dense_shape.shape}."
            )
        self.indices, self.values, self.dense_shape = indices, values, dense_shape

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values."""
        return self.values.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """``dense_shape`` as a tuple of ints."""
        return tuple(int(d) for d in self.dense_shape)

    def to_dense(self, default_value: Any = None) -> np.ndarray:
        """Returns the dense array, filled with ``default_value`` (0 or ``b""``) where absent
        (``tf.sparse.to_dense``)."""
        if default_value is None:
            default_value = _default_fill(self.values.dtype)
        out = np.full(self.shape, default_value, self.values.dtype)
        bad = ((self.indices < 0) | (self.indices >= self.dense_shape)).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"SparseTensor.to_dense: indices[{i}] = {self.indices[i].tolist()} is out of "
                f"bounds: need 0 <= index < {self.shape} (as TF's SparseToDense)."
            )
        if len(self.values):
            out[tuple(self.indices.T)] = self.values
        return out

    def to_ragged(self) -> RaggedTensor:
        """Returns the rows (first index) as a `RaggedTensor` of rank 2; needs row-major
        indices of rank 2 (``tf.RaggedTensor.from_sparse``)."""
        if len(self.dense_shape) == 1:
            return RaggedTensor(self.values, np.array([0, len(self.values)], np.int64))
        if len(self.dense_shape) != 2:
            raise ValueError(
                f"to_ragged needs a rank-2 SparseTensor, got dense_shape {self.shape}; "
                "use to_dense() instead."
            )
        counts = np.bincount(self.indices[:, 0], minlength=int(self.dense_shape[0]))
        splits = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=splits[1:])
        return RaggedTensor(self.values, splits)

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self.indices.tolist()!r:.200}, "
            f"values={self.values.tolist()!r:.200}, dense_shape={self.shape})"
        )


class SparseTensorSpec:
    """The ``element_spec`` entry of a `SparseTensor` component (``tf.SparseTensorSpec``).

    Args:
        shape: the dense shape, ``None`` for a dimension that varies (or ``None`` for unknown rank).
        dtype: the values' dtype.

    Examples:
        >>> SparseTensorSpec((None, None), "int64")
        SparseTensorSpec(shape=(None, None), dtype=int64)
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: Sequence[int | None] | None = None, dtype: Any = np.float32):
        self.shape = _dims(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def from_value(cls, value: SparseTensor) -> SparseTensorSpec:
        """The spec of a `SparseTensor`."""
        return cls(value.shape, value.dtype)

    def is_compatible_with(self, other: Any) -> bool:
        """Whether ``other`` (a `SparseTensor` or a spec) has a compatible shape and dtype."""
        if isinstance(other, SparseTensor):
            other = SparseTensorSpec.from_value(other)
        if not isinstance(other, SparseTensorSpec) or other.dtype != self.dtype:
            return False
        return _shapes_compatible(self.shape, other.shape)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is SparseTensorSpec
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self) -> int:
        return hash((SparseTensorSpec, self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"SparseTensorSpec(shape={self.shape}, dtype={self.dtype.name})"


# ---------------------------------------------------------------------------
# RaggedTensor
# ---------------------------------------------------------------------------


class RaggedTensor:
    """Rows of different lengths: ``values`` split by ``row_splits`` (``tf.RaggedTensor``).

    Row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``. ``values`` is a
    numpy array (its dimensions after the first are uniform) or another
    ``RaggedTensor`` (a further ragged dimension): ``nested_row_splits`` lists
    the splits from the outermost in, ``flat_values`` is the innermost array.

    Args:
        values: a numpy array or a ``RaggedTensor``.
        row_splits: ``nrows + 1`` non-decreasing int64 (or int32) offsets, from 0
            to ``len(values)``.

    Raises:
        ValueError: the splits do not partition ``values`` (the message says how).

    Examples:
        >>> r = RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 2, 3])
        >>> len(r), r[0].tolist(), r.row_lengths().tolist(), r.to_list()
        (3, [1, 2], [2, 0, 1], [[1, 2], [], [3]])
        >>> r.to_tensor(default_value=-1).tolist()
        [[1, 2], [-1, -1], [3, -1]]
        >>> r.shape, r.ragged_rank
        ((3, None), 1)
    """

    __slots__ = ("_uniform", "row_splits", "values")

    def __init__(self, values: Any, row_splits: Any, *, _uniform: int | None = None):
        if not isinstance(values, RaggedTensor):
            values = _as_values(values)
            if values.ndim == 0:
                raise ValueError("RaggedTensor values must have rank >= 1, got a scalar.")
        splits = np.asarray(row_splits)
        dtype = splits.dtype if splits.dtype in _SPLITS_DTYPES else np.dtype(np.int64)
        splits = _int_vector(splits, "RaggedTensor row_splits", dtype)
        n = len(values)
        if len(splits) == 0 or splits[0] != 0 or splits[-1] != n or (np.diff(splits) < 0).any():
            raise ValueError(
                "RaggedTensor row_splits must start at 0, never decrease, and end at "
                f"len(values) = {n}; got {splits.tolist()!r:.120}."
            )
        self.values, self.row_splits, self._uniform = values, splits, _uniform

    # -- construction (tf.RaggedTensor's factory names) ------------------------------------

    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any) -> RaggedTensor:
        """Rows ``values[row_splits[i]:row_splits[i+1]]``."""
        return cls(values, row_splits)

    @classmethod
    def from_row_lengths(cls, values: Any, row_lengths: Any) -> RaggedTensor:
        """Consecutive rows of ``row_lengths[i]`` values."""
        lengths = _int_vector(row_lengths, "row_lengths")
        if (lengths < 0).any():
            raise ValueError(f"row_lengths must be >= 0, got {lengths.tolist()!r:.120}.")
        return cls(values, _splits_of(lengths, _splits_dtype(row_lengths)))

    @classmethod
    def from_row_starts(cls, values: Any, row_starts: Any) -> RaggedTensor:
        """Rows starting at ``row_starts[i]``; the last row ends at ``len(values)``."""
        starts = _int_vector(row_starts, "row_starts", _splits_dtype(row_starts))
        if len(starts) and starts[0] != 0:
            raise ValueError(f"row_starts must begin at 0, got {starts.tolist()!r:.120}.")
        return cls(values, np.append(starts, len(values)).astype(starts.dtype))

    @classmethod
    def from_row_limits(cls, values: Any, row_limits: Any) -> RaggedTensor:
        """Rows ending at ``row_limits[i]``; the first row starts at 0."""
        limits = _int_vector(row_limits, "row_limits", _splits_dtype(row_limits))
        return cls(values, np.concatenate([np.zeros(1, limits.dtype), limits]))

    @classmethod
    def from_value_rowids(
        cls, values: Any, value_rowids: Any, nrows: int | None = None
    ) -> RaggedTensor:
        """``values[j]`` goes to row ``value_rowids[j]`` (sorted); ``nrows`` defaults to the last id + 1."""
        ids = _int_vector(value_rowids, "value_rowids")
        if len(ids) != len(values):
            raise ValueError(
                f"value_rowids needs one id per value: {len(ids)} ids for {len(values)} values."
            )
        if (ids < 0).any() or (np.diff(ids) < 0).any():
            raise ValueError(f"value_rowids must be sorted and >= 0, got {ids.tolist()!r:.120}.")
        n = int(ids[-1]) + 1 if nrows is None and len(ids) else int(nrows or 0)
        if len(ids) and ids[-1] >= n:
            raise ValueError(f"value_rowids has id {int(ids[-1])} but nrows is {n}.")
        return cls(values, _splits_of(np.bincount(ids, minlength=n), _splits_dtype(value_rowids)))

    @classmethod
    def from_uniform_row_length(
        cls, values: Any, uniform_row_length: int, nrows: int | None = None
    ) -> RaggedTensor:
        """Rows of ``uniform_row_length`` values each (a uniform dimension of a ragged value)."""
        length = int(uniform_row_length)
        n = len(values)
        if length < 0 or (length and n % length) or (length == 0 and n):
            raise ValueError(
                f"from_uniform_row_length: {n} values do not split into rows of {length}."
            )
        rows = n // length if length else int(nrows or 0)
        if nrows is not None and int(nrows) != rows:
            raise ValueError(f"from_uniform_row_length: {n} values make {rows} rows, not {nrows}.")
        return cls(values, np.arange(rows + 1, dtype=np.int64) * length, _uniform=length)

    @classmethod
    def from_nested_row_splits(
        cls, flat_values: Any, nested_row_splits: Sequence[Any]
    ) -> RaggedTensor:
        """Wraps ``flat_values`` in one ragged dimension per splits vector (outermost first)."""
        if not len(nested_row_splits):
            raise ValueError("from_nested_row_splits needs at least one row_splits vector.")
        result = flat_values
        for splits in reversed(list(nested_row_splits)):
            result = cls(result, splits)
        return result

    @classmethod
    def from_tensor(cls, tensor: Any, ragged_rank: int = 1) -> RaggedTensor:
        """A dense array of rank > ``ragged_rank`` with its first ``ragged_rank + 1`` dimensions
        as rows (all full, so ``shape`` is the array's, as TF's)."""
        arr = _as_values(tensor)
        if not 1 <= ragged_rank < arr.ndim:
            raise ValueError(
                f"from_tensor needs 1 <= ragged_rank < rank; got ragged_rank {ragged_rank} for "
                f"an array of shape {arr.shape}."
            )
        lead = arr.shape[: ragged_rank + 1]
        result: Any = arr.reshape(-1, *arr.shape[ragged_rank + 1 :])
        for axis in range(ragged_rank, 0, -1):
            outer = int(np.prod(lead[:axis], dtype=np.int64))
            splits = np.arange(outer + 1, dtype=np.int64) * lead[axis]
            result = cls(result, splits, _uniform=int(lead[axis]))
        return result

    # -- structure -------------------------------------------------------------------------

    @property
    def flat_values(self) -> np.ndarray:
        """The innermost values array."""
        v = self.values
        while isinstance(v, RaggedTensor):
            v = v.values
        return v

    @property
    def nested_row_splits(self) -> tuple[np.ndarray, ...]:
        """The row_splits of each ragged dimension, outermost first."""
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v.row_splits)
            v = v.values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        """How many ragged (row-split) dimensions this value has."""
        return len(self.nested_row_splits)

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the flat values."""
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self) -> np.dtype:
        """int64 or int32."""
        return self.row_splits.dtype

    @property
    def shape(self) -> tuple[int | None, ...]:
        """``(nrows, None or the uniform length per ragged dimension, *flat_values.shape[1:])``."""
        dims: list[int | None] = [self.nrows()]
        v: Any = self
        while isinstance(v, RaggedTensor):
            dims.append(v._uniform)
            v = v.values
        dims[-1:] = [dims[-1], *v.shape[1:]]
        return tuple(dims)

    def nrows(self) -> int:
        """The number of rows."""
        return len(self.row_splits) - 1

    def row_lengths(self) -> np.ndarray:
        """The length of every row."""
        return np.diff(self.row_splits)

    def row_starts(self) -> np.ndarray:
        """Where each row starts in ``values``."""
        return self.row_splits[:-1]

    def row_limits(self) -> np.ndarray:
        """Where each row ends in ``values``."""
        return self.row_splits[1:]

    def value_rowids(self) -> np.ndarray:
        """The row of each value."""
        return np.repeat(np.arange(self.nrows(), dtype=self.row_splits.dtype), self.row_lengths())

    def with_values(self, new_values: Any) -> RaggedTensor:
        """The same row partition over ``new_values`` (of the same length)."""
        return RaggedTensor(new_values, self.row_splits, _uniform=self._uniform)

    def with_row_splits_dtype(self, dtype: Any) -> RaggedTensor:
        """The same value with every row_splits cast to ``dtype`` (int32 or int64)."""
        dtype = np.dtype(dtype)
        inner = self.values
        if isinstance(inner, RaggedTensor):
            inner = inner.with_row_splits_dtype(dtype)
        return RaggedTensor(inner, self.row_splits.astype(dtype), _uniform=self._uniform)

    def __len__(self) -> int:
        return self.nrows()

    def __getitem__(self, i: int) -> Any:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"RaggedTensor rows are indexed by an int, got {type(i).__name__}.")
        i = range(self.nrows())[i]
        lo, hi = int(self.row_splits[i]), int(self.row_splits[i + 1])
        if isinstance(self.values, RaggedTensor):
            return _slice_rows(self.values, lo, hi)
        return self.values[lo:hi]

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.nrows()))

    # -- conversion ------------------------------------------------------------------------

    def to_list(self) -> list[Any]:
        """The rows as nested Python lists (``tf.RaggedTensor.to_list``)."""
        inner = (
            self.values.to_list() if isinstance(self.values, RaggedTensor) else self.values.tolist()
        )
        s = self.row_splits.tolist()
        return [inner[s[i] : s[i + 1]] for i in range(len(s) - 1)]

    def to_tensor(
        self, default_value: Any = None, shape: Sequence[int | None] | None = None
    ) -> np.ndarray:
        """The dense array, rows padded with ``default_value`` (0 or ``b""``) to the longest
        (``tf.RaggedTensor.to_tensor``); ``shape`` pads or truncates to a fixed shape (``None``
        dimensions keep the longest)."""
        full_shape = _bounding_shape(self)
        fill = _default_fill(self.dtype) if default_value is None else default_value
        full = np.full(full_shape, fill, self.dtype)
        _fill(full, self)
        if shape is None:
            return full
        if len(shape) != len(full_shape):
            raise ValueError(
                f"to_tensor: shape {tuple(shape)} has rank {len(shape)}, the value has rank "
                f"{len(full_shape)}."
            )
        target = tuple(d if s is None else int(s) for d, s in zip(full_shape, shape, strict=True))
        out = np.full(target, fill, self.dtype)
        common = tuple(slice(0, min(a, b)) for a, b in zip(target, full_shape, strict=True))
        out[common] = full[common]
        return out

    def numpy(self) -> list[Any]:
        """``to_list()`` (a ragged value has no single numpy array)."""
        return self.to_list()

    def __repr__(self) -> str:
        return f"<RaggedTensor {self.to_list()!r:.300}>"


def _splits_dtype(x: Any) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype in _SPLITS_DTYPES else np.dtype(np.int64)


def _splits_of(lengths: np.ndarray, dtype: Any = np.int64) -> np.ndarray:
    splits = np.zeros(len(lengths) + 1, dtype)
    np.cumsum(lengths, out=splits[1:])
    return splits


def _slice_rows(rt: RaggedTensor, lo: int, hi: int) -> RaggedTensor:
    splits = rt.row_splits[lo : hi + 1]
    a, b = int(splits[0]), int(splits[-1])
    inner = _slice_rows(rt.values, a, b) if isinstance(rt.values, RaggedTensor) else rt.values[a:b]
    return RaggedTensor(inner, splits - splits[0], _uniform=rt._uniform)


def _bounding_shape(rt: RaggedTensor) -> tuple[int, ...]:
    dims = [rt.nrows()]
    v: Any = rt
    while isinstance(v, RaggedTensor):
        lengths = v.row_lengths()
        dims.append(int(lengths.max()) if len(lengths) else 0)
        v = v.values
    return (*dims, *v.shape[1:])


def _fill(out: np.ndarray, rt: RaggedTensor) -> None:
    """Writes ``rt``'s values into ``out``, which has ``rt``'s bounding shape."""
    index: list[np.ndarray] = []  # per value of the current level: its coordinates so far
    v: Any = rt
    while isinstance(v, RaggedTensor):
        ids = v.value_rowids().astype(np.int64)
        pos = np.arange(len(v.values), dtype=np.int64) - v.row_splits[ids].astype(np.int64)
        index = [i[ids] for i in index] if index else [ids]
        index.append(pos)
        v = v.values
    out[tuple(index)] = v


def concat_rows(items: Sequence[Any]) -> Any:
    """``items`` (arrays, or RaggedTensors of one ragged rank) joined along their first axis."""
    if not isinstance(items[0], RaggedTensor):
        return np.concatenate(items)
    ranks = {r.ragged_rank if isinstance(r, RaggedTensor) else 0 for r in items}
    if len(ranks) != 1:
        raise ValueError(f"cannot join RaggedTensors of different ragged ranks {sorted(ranks)}.")
    inner = concat_rows([r.values for r in items])
    dtype = items[0].row_splits.dtype
    offsets = np.cumsum([0] + [len(r.values) for r in items[:-1]])
    splits = np.concatenate(
        [np.zeros(1, dtype)] + [r.row_splits[1:] + o for r, o in zip(items, offsets, strict=True)]
    ).astype(dtype)
    uniform = items[0]._uniform if all(r._uniform == items[0]._uniform for r in items) else None
    return RaggedTensor(inner, splits, _uniform=uniform)


def stack_rows(items: Sequence[Any], row_splits_dtype: Any = None) -> RaggedTensor:
    """A RaggedTensor whose row ``i`` is ``items[i]`` (arrays of one rank and trailing shape, or
    RaggedTensors of one ragged rank): batching ragged values, as ``tf.data``'s ``batch``."""
    if row_splits_dtype is None:
        first = items[0]
        row_splits_dtype = first.row_splits.dtype if isinstance(first, RaggedTensor) else np.int64
    lengths = np.fromiter((len(r) for r in items), np.int64, len(items))
    return RaggedTensor(concat_rows(items), _splits_of(lengths, row_splits_dtype))


def stack_sparse(items: Sequence[SparseTensor]) -> SparseTensor:
    """A SparseTensor with a new leading dimension over ``items`` (of one rank); its
    ``dense_shape`` is ``[len(items), *the largest dense_shape]``, as ``tf.data``'s ``batch``."""
    ranks = {len(s.dense_shape) for s in items}
    if len(ranks) != 1:
        raise ValueError(f"cannot batch SparseTensors of different ranks {sorted(ranks)}.")
    shape = np.max(np.stack([s.dense_shape for s in items]), axis=0)
    rows = np.repeat(np.arange(len(items), dtype=np.int64), [len(s.values) for s in items])
    indices = np.concatenate([s.indices for s in items])
    values = np.concatenate([s.values for s in items]) if items else np.zeros(0)
    return SparseTensor(np.column_stack([rows, indices]), values, [len(items), *shape])


class RaggedTensorSpec:
    """The ``element_spec`` entry of a `RaggedTensor` component (``tf.RaggedTensorSpec``).

    Args:
        shape: the shape, ``None`` where a dimension is ragged or varies.
        dtype: the flat values' dtype.
        ragged_rank: how many ragged dimensions (default: rank - 1).
        row_splits_dtype: int64 (default) or int32.

    Examples:
        >>> RaggedTensorSpec((2, None), "int64")
        RaggedTensorSpec(shape=(2, None), dtype=int64, ragged_rank=1, row_splits_dtype=int64)
    """

    __slots__ = ("dtype", "ragged_rank", "row_splits_dtype", "shape")

    def __init__(
        self,
        shape: Sequence[int | None] | None = None,
        dtype: Any = np.float32,
        ragged_rank: int | None = None,
        row_splits_dtype: Any = np.int64,
    ):
        self.shape = _dims(shape)
        self.dtype = np.dtype(dtype)
        if ragged_rank is None:
            if self.shape is None:
                raise ValueError("RaggedTensorSpec needs a ragged_rank when shape is None.")
            ragged_rank = len(self.shape) - 1
        self.ragged_rank = int(ragged_rank)
        if self.shape is not None and not 0 <= self.ragged_rank < max(len(self.shape), 1):
            raise ValueError(
                f"RaggedTensorSpec: ragged_rank {self.ragged_rank} must be less than the rank "
                f"{len(self.shape)} of shape {self.shape}."
            )
        self.row_splits_dtype = np.dtype(row_splits_dtype)
        if self.row_splits_dtype not in _SPLITS_DTYPES:
            raise ValueError(
                f"row_splits_dtype must be int32 or int64, got {self.row_splits_dtype}."
            )

    @classmethod
    def from_value(cls, value: RaggedTensor) -> RaggedTensorSpec:
        """The spec of a `RaggedTensor`."""
        return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits_dtype)

    def is_compatible_with(self, other: Any) -> bool:
        """Whether ``other`` (a `RaggedTensor` or a spec) can be described by this spec."""
        if isinstance(other, RaggedTensor):
            other = RaggedTensorSpec.from_value(other)
        return (
            isinstance(other, RaggedTensorSpec)
            and other.dtype == self.dtype
            and other.ragged_rank == self.ragged_rank
            and other.row_splits_dtype == self.row_splits_dtype
            and _shapes_compatible(self.shape, other.shape)
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is RaggedTensorSpec and (
            self.shape,
            self.dtype,
            self.ragged_rank,
            self.row_splits_dtype,
        ) == (other.shape, other.dtype, other.ragged_rank, other.row_splits_dtype)

    def __hash__(self) -> int:
        return hash((RaggedTensorSpec, self.shape, self.dtype, self.ragged_rank))

    def __repr__(self) -> str:
        return (
            f"RaggedTensorSpec(shape={self.shape}, dtype={self.dtype.name}, ragged_rank="
            f"{self.ragged_rank}, row_splits_dtype={self.row_splits_dtype.name})"
        )


def _shapes_compatible(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(
        x is None or y is None or x == y for x, y in zip(a, b, strict=True)
    )
