"""``SparseFeature`` and ``RaggedFeature``: features built from several Example features.

As TensorFlow does (``parsing_config._construct_tensors_for_composite_features``),
each is parsed in two steps: the features it reads (values, indices, partitions)
are parsed as ``VarLenFeature``s by the ordinary parser, then combined into one
`SparseTensor` or `RaggedTensor`. The keys follow TF's rules: one
Example key may serve several sparse (or several ragged) features of one dtype,
but never both a dense and a sparse/ragged one, nor a sparse and a ragged one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Integral
from typing import Any

import numpy as np

from ..errors import ExampleParseError
from ._composite import RaggedTensor, SparseTensor, stack_rows
from ._parse_example import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    UniformRowLength,
    VarLenFeature,
)

__all__ = ["parse_composite"]

_DENSE, _SPARSE, _RAGGED = "dense", "sparse", "ragged"
_PAIR = {
    frozenset((_DENSE, _SPARSE)): "Dense and sparse",
    frozenset((_DENSE, _RAGGED)): "Dense and ragged",
    frozenset((_RAGGED, _SPARSE)): "Ragged and sparse",
}
_EXPANDED: dict[int, tuple[tuple, dict]] = {}


def parse_composite(
    serialized: Any, features: Mapping[str, Any], parse_base: Callable, batched: bool
) -> dict[str, Any]:
    """Parses ``features`` (some of them Sparse/RaggedFeature) with ``parse_base`` and combines."""
    base = _expand(features)
    parsed = parse_base(serialized, base)
    out: dict[str, Any] = {}
    for key, feature in features.items():
        if isinstance(feature, SparseFeature):
            out[key] = _sparse(key, feature, parsed, batched)
        elif isinstance(feature, RaggedFeature):
            out[key] = _ragged(key, feature, parsed, batched)
        else:
            out[key] = parsed[key]
    return out


# ---------------------------------------------------------------------------
# The features read
# ---------------------------------------------------------------------------


def _expand(features: Mapping[str, Any]) -> dict[str, Any]:
    """The plain features to parse: ``{example key: spec}`` (cached per features dict)."""
    snapshot = tuple(features.items())
    cached = _EXPANDED.get(id(features))
    if cached is not None and cached[0] == snapshot:
        return cached[1]
    kinds: dict[str, tuple[str, str, str | None]] = {}
    base: dict[str, Any] = {}

    def add(key: str, kind: str, spec: Any, splits: str | None = None) -> None:
        if key in kinds:
            kind0, dtype0, splits0 = kinds[key]
            if kind0 != kind:
                raise ValueError(
                    f"{_PAIR[frozenset((kind0, kind))]} keys must not intersect; intersection: "
                    f"{ {key} } (as TensorFlow: one Example key is read one way)."
                )
            if dtype0 != spec.dtype:
                raise ValueError(f"Conflicting type {dtype0} vs {spec.dtype} for feature {key}.")
            if splits0 != splits:
                raise ValueError(
                    f"Conflicting partition type {splits0} vs {splits} for feature {key}."
                )
            return
        kinds[key] = (kind, spec.dtype, splits)
        base[key] = spec

    for key in sorted(features):
        feature = features[key]
        if isinstance(feature, (FixedLenFeature, FixedLenSequenceFeature)):
            add(key, _DENSE, feature)
        elif isinstance(feature, VarLenFeature):
            add(key, _SPARSE, feature)
        elif isinstance(feature, SparseFeature):
            for index_key in sorted(_index_keys(feature)):
                add(index_key, _SPARSE, VarLenFeature("int64"))
            add(feature.value_key, _SPARSE, VarLenFeature(feature.dtype))
        elif isinstance(feature, RaggedFeature):
            splits = feature.row_splits_dtype
            add(feature.value_key or key, _RAGGED, VarLenFeature(feature.dtype), splits)
            for p in feature.partitions:
                if not isinstance(p, UniformRowLength):
                    add(p.key, _RAGGED, VarLenFeature("int64"), splits)
        else:
            raise TypeError(
                f"Feature {key!r}: unsupported spec {feature!r} of type {type(feature).__name__}; "
                "use FixedLenFeature, VarLenFeature, FixedLenSequenceFeature, SparseFeature or "
                "RaggedFeature."
            )
    if len(_EXPANDED) > 64:
        _EXPANDED.clear()
    _EXPANDED[id(features)] = (snapshot, base)
    return base


def _index_keys(feature: SparseFeature) -> list[str]:
    keys = feature.index_key
    if not keys:
        raise ValueError(f"Missing index_key for SparseFeature {feature}.")
    if not feature.value_key:
        raise ValueError(f"Missing value_key for SparseFeature {feature}.")
    keys = [keys] if isinstance(keys, str) else list(keys)
    if not all(isinstance(k, str) and k for k in keys):
        raise TypeError(
            f"SparseFeature index_key must be a str or a list of str; got {feature.index_key!r}."
        )
    return keys


def _rows(sp: SparseTensor, batched: bool) -> tuple[np.ndarray, np.ndarray]:
    """A VarLen result as ``(flat values, row splits)`` (one row when not batched)."""
    if not batched:
        return sp.values, np.array([0, len(sp.values)], np.int64)
    rt = sp.to_ragged()
    return rt.values, rt.row_splits


# ---------------------------------------------------------------------------
# SparseFeature
# ---------------------------------------------------------------------------


def _sizes(feature: SparseFeature, n_keys: int) -> list[int]:
    size = feature.size
    if isinstance(feature.index_key, str):
        if not isinstance(size, Integral):
            raise TypeError(
                f"SparseFeature with one index_key {feature.index_key!r}: size must be an int "
                f"(TF: vocab_size has to be a Tensor or Python int); got {type(size).__name__} "
                f"{size!r}."
            )
        return [int(size)]
    if not isinstance(size, (list, tuple)) or not all(isinstance(d, Integral) for d in size):
        raise TypeError(
            "SparseFeature with a list index_key: size must be a list of ints, one per key "
            f"(TF: vocab_size has to be a list of Tensors or Python ints); got {size!r}."
        )
    if len(size) != n_keys:
        raise ValueError(
            f"SparseFeature: {n_keys} index keys but {len(size)} sizes (TF: sp_ids and "
            "vocab_size have to have equal lengths)."
        )
    return [int(d) for d in size]


def _sparse(key: str, feature: SparseFeature, parsed: dict, batched: bool) -> SparseTensor:
    keys = _index_keys(feature)
    sizes = _sizes(feature, len(keys))
    values, splits = _rows(parsed[feature.value_key], batched)
    columns = []
    for index_key in keys:
        ids, id_splits = _rows(parsed[index_key], batched)
        if not np.array_equal(id_splits, splits):
            row = int(np.flatnonzero(np.diff(id_splits) != np.diff(splits))[0])
            where = f" in record {row}" if batched else ""
            raise ExampleParseError(
                f"SparseFeature {key!r}{where}: index feature {index_key!r} has "
                f"{int(id_splits[row + 1] - id_splits[row])} values but value feature "
                f"{feature.value_key!r} has {int(splits[row + 1] - splits[row])}; they must match."
            )
        columns.append(ids.astype(np.int64, copy=False))
    n = len(splits) - 1
    if batched:
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(splits))
        columns.insert(0, rows)
        dense_shape = [n, *sizes]
    else:
        dense_shape = sizes
    indices = np.stack(columns, axis=1) if columns else np.zeros((0, 0), np.int64)
    if not feature.already_sorted and len(values) > 1:
        order = np.lexsort(indices.T[::-1])
        indices, values = indices[order], values[order]
    return SparseTensor(indices, values, dense_shape)


# ---------------------------------------------------------------------------
# RaggedFeature
# ---------------------------------------------------------------------------


def _ragged(key: str, feature: RaggedFeature, parsed: dict, batched: bool) -> Any:
    values, splits = _rows(parsed[feature.value_key or key], batched)
    dtype = np.dtype(feature.row_splits_dtype)
    parts = [
        (p, None if isinstance(p, UniformRowLength) else _rows(parsed[p.key], batched))
        for p in feature.partitions
    ]
    if not batched:
        return _partitioned(
            key, feature, values, [(p, None if r is None else r[0]) for p, r in parts], None
        )
    if not parts:
        return RaggedTensor(values, splits.astype(dtype))
    n = len(splits) - 1
    rows = []
    for i in range(n):
        row_parts = [(p, None if r is None else r[0][r[1][i] : r[1][i + 1]]) for p, r in parts]
        rows.append(_partitioned(key, feature, values[splits[i] : splits[i + 1]], row_parts, i))
    if not rows:  # an empty batch: the shape of a feature with no values
        empty = [(p, None if r is None else np.zeros(0, np.int64)) for p, r in parts]
        rows = [_partitioned(key, feature, values[:0], empty, None, template=True)]
        return _empty_batch(rows[0], dtype)
    return stack_rows(rows, dtype)


def _partitioned(key, feature, values, parts, row, template: bool = False) -> Any:
    """One Example's value: ``values`` wrapped by its partitions, innermost first."""
    dtype = np.dtype(feature.row_splits_dtype)
    result: Any = values
    for p, t in reversed(parts):
        try:
            result = _partition(result, p, t, template)
        except ValueError as e:
            where = "" if row is None else f" in record {row}"
            raise ExampleParseError(
                f"RaggedFeature {key!r}{where}: partition {p!r} does not fit its values ({e})"
            ) from None
    if isinstance(result, RaggedTensor):
        result = result.with_row_splits_dtype(dtype)
    return result


def _partition(values: Any, p: Any, t: Any, template: bool) -> Any:
    if isinstance(p, UniformRowLength):
        if isinstance(values, RaggedTensor):
            return RaggedTensor.from_uniform_row_length(values, p.length)
        length = int(p.length)
        if length <= 0 or len(values) % length:
            raise ValueError(f"{len(values)} values do not split into rows of {length}")
        return values.reshape(-1, length, *values.shape[1:])
    kind = type(p).__name__
    if template:
        t = np.zeros(1, np.int64) if kind == "RowSplits" else t
    if kind == "RowSplits":
        return RaggedTensor.from_row_splits(values, t)
    if kind == "RowLengths":
        return RaggedTensor.from_row_lengths(values, t)
    if kind == "RowStarts":
        return RaggedTensor.from_row_starts(values, t)
    if kind == "RowLimits":
        return RaggedTensor.from_row_limits(values, t)
    return RaggedTensor.from_value_rowids(values, t)


def _empty_batch(template: Any, dtype: np.dtype) -> RaggedTensor:
    def empty(v: Any) -> Any:
        if isinstance(v, RaggedTensor):
            return RaggedTensor(
                empty(v.values), np.zeros(1, v.row_splits.dtype), _uniform=v._uniform
            )
        return v[:0]

    return RaggedTensor(empty(template), np.zeros(1, dtype))
