"""Batching: ``batch``, ``padded_batch``, ``unbatch`` and ``rebatch``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DatasetArgumentError, DatasetTypeError, PaddingError, StructureMismatchError
from ..io import RaggedTensor, RaggedTensorSpec, SparseTensor, SparseTensorSpec
from . import _index_batches as fp
from . import _structure as st
from ._dataset import Dataset, check_bool, check_positive
from ._iterator import DatasetIterator, _safe_state, _unwrap_state, state_int
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from ._structure import TensorSpec


def _batched_cardinality(n: int, b: int, drop: bool) -> int:
    if n < 0:
        return n
    return n // b if drop else -(-n // b)


class BatchDataset(Dataset):
    """``Dataset.batch``; gathers by index when its input is in memory (``_index_batches.py``).

    ``_split = (num_pipelines, pipeline_id)`` (set by DATA auto-sharding)
    keeps only this pipeline's slice of rows of every batch.
    """

    _input_attrs = ("_input",)
    _split: tuple[int, int] | None = None

    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool):
        self._input = input_dataset
        self._batch = check_positive("batch_size", batch_size, "batch")
        self._drop = check_bool("drop_remainder", drop_remainder, "batch")

    @property
    def batch_size(self) -> int:
        """The ``batch_size`` given to ``batch`` (what ``split_dataset`` batches again by)."""
        return self._batch

    def _iterator(self, ctx):
        return _BatchIterator(self._input._iterator(ctx), self._batch, self._drop, self._split)

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)

    def _compute_spec(self):
        lead = self._batch if self._drop else None
        if lead is not None and self._split is not None:
            lead //= self._split[0]
        return st.map_structure(lambda s: _prepend(lead, s), self._input.element_spec)


def _prepend(lead: int | None, s: Any) -> Any:
    return st.batched_spec(lead, s)


class _BatchIterator(DatasetIterator):
    def __init__(self, child, batch_size, drop, split):
        self.child, self.b, self.drop, self.split = child, batch_size, drop, split
        self.n = 0  # batches emitted, for error messages

    def next_pieces(self) -> tuple[list[tuple[Any, Any]], int]:
        """The next batch as pieces (``_index_batches.pull``), and the position of its first
        element, before they are gathered (``_index_batches.assemble``).

        Raises:
          StopIteration: the input ended (or left fewer than ``b`` elements, with
            ``drop_remainder``).
        """
        pieces = fp.pull(self.child, self.b)
        got = fp.count(pieces)
        if got == 0 or (self.drop and got < self.b):
            raise StopIteration
        first = self.n * self.b
        self.n += 1
        return pieces, first

    def index_batches(self):
        return self if self.split is None else None  # a split batch keeps only its rows

    def __next__(self):
        pieces, first = self.next_pieces()
        if self.split is not None:
            w, i = self.split
            local = self.b // w
            mine = fp.trim(pieces, i * local, (i + 1) * local)
            if (
                not mine
            ):  # a short last batch with no rows for this pipeline: 0 rows, same step count
                return st.map_structure(lambda a: a[:0], fp.assemble(fp.trim(pieces, 0, 1)))
            pieces, first = mine, first + i * local
        return fp.assemble(pieces, first_index=first)

    def children(self):
        return [self.child]

    def get_state(self):
        return {"n": self.n, "child": self.child.get_state()}

    def set_state(self, state):
        self.n = state_int(state, "n", what="batches already made")
        self.child.set_state(state["child"])


class PaddedBatchDataset(Dataset):
    """``Dataset.padded_batch``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        self._input = input_dataset
        self._batch = check_positive("batch_size", batch_size, "padded_batch")
        self._drop = check_bool("drop_remainder", drop_remainder, "padded_batch")
        st.refuse_composites(
            input_dataset.element_spec,
            "padded_batch",
            "Batch them with batch or ragged_batch, or pad them with .to_tensor() / .to_dense().",
        )
        spec = input_dataset.element_spec
        tdef = st.treedef(spec)
        flat_spec = st.flatten(spec)
        if st.has_none(tdef):
            raise DatasetTypeError(
                f"padded_batch: the elements {spec!r} have a None component (NoneTensorSpec), "
                "which has no shape to pad; tf.data refuses it too (TypeError). Drop it first, "
                "e.g. ds.map(lambda x, _: x).padded_batch(...), or use batch."
            )
        if padded_shapes is None:
            for j, s in enumerate(flat_spec):
                if s.shape is None:
                    raise DatasetArgumentError(
                        f"padded_batch: you must provide padded_shapes because component {j} "
                        "has unknown rank (as tf.data). Give one shape per component, e.g. "
                        "padded_shapes=[None] for vectors."
                    )
        self._shapes = _normalize_shapes(padded_shapes, tdef, flat_spec)
        self._values = _normalize_values(padding_values, tdef, flat_spec)
        self._tdef = tdef

    def _iterator(self, ctx):
        return _PaddedBatchIterator(self, self._input._iterator(ctx))

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)

    def _compute_spec(self):
        lead = self._batch if self._drop else None
        flat = st.flatten(self._input.element_spec)
        out = []
        for shape, s in zip(self._shapes, flat, strict=True):
            if shape is None:
                shape = None if s.shape is None else (None,) * len(s.shape)
            out.append(TensorSpec(None if shape is None else (lead, *shape), s.dtype))
        return st.unflatten(self._tdef, out)

    def _pad(self, elements: list[Any], first: int) -> Any:
        flats = [st.flatten(e) for e in elements]
        out = []
        for j, (shape, value) in enumerate(zip(self._shapes, self._values, strict=True)):
            column = [np.asarray(f[j]) for f in flats]
            out.append(_pad_column(column, shape, value, j, first))
        return st.unflatten(self._tdef, out)


def _normalize_shapes(padded_shapes, tdef, flat_spec) -> list[tuple | None]:
    """One padded shape per component: a tuple with ``None`` = "longest in the batch", or None = all."""
    if padded_shapes is None:
        return [None] * len(flat_spec)
    if tdef is st.LEAF:
        shapes = [padded_shapes]
    else:
        try:
            shapes = st.flatten_up_to(tdef, padded_shapes)
        except (ValueError, TypeError, KeyError, IndexError):
            raise StructureMismatchError(
                f"padded_batch: padded_shapes {padded_shapes!r} does not match the element structure "
                f"{st.describe(tdef)}. Give one shape per component, nested like the elements."
            ) from None
    out = []
    for shape, s in zip(shapes, flat_spec, strict=True):
        if isinstance(shape, int | np.integer):
            shape = (int(shape),)
        shape = tuple(
            None if d is None or d == -1 else int(d)
            for d in np.atleast_1d(np.asarray(shape, dtype=object))
        )
        if s.shape is not None and len(shape) != len(s.shape):
            raise PaddingError(
                f"padded_batch: padded shape {shape} has rank {len(shape)} but the component has "
                f"shape {s.shape} (rank {len(s.shape)}). Give one entry per dimension."
            )
        out.append(shape)
    return out


def _normalize_values(padding_values, tdef, flat_spec) -> list[Any]:
    if padding_values is None:
        return [b"" if s.dtype.kind in "OS" else 0 for s in flat_spec]
    if tdef is not st.LEAF and st.treedef(padding_values) == tdef:
        values = st.flatten(padding_values)
    elif st.treedef(padding_values) is st.LEAF:
        values = [padding_values] * len(flat_spec)
    else:
        values = None
    if values is not None:
        return [
            _padding_value(v, s, j) for j, (v, s) in enumerate(zip(values, flat_spec, strict=True))
        ]
    raise StructureMismatchError(
        f"padding_values {padding_values!r} must be one value or match the element structure "
        f"{st.describe(tdef)}."
    )


def _padding_value(value: Any, spec: TensorSpec, j: int) -> Any:
    """``value`` for a component of ``spec``: a ``str`` becomes UTF-8 bytes, as TF's strings;
    a string for a number or a number for a string is refused, as TF refuses it."""
    text = np.asarray(value).dtype.kind in "SUO"
    if spec.dtype.kind in "SUO":
        if not text:
            raise DatasetTypeError(
                f"padded_batch: component {j} holds strings but its padding value is "
                f"{type(value).__name__} {value!r:.40}. Pass a str or bytes, e.g. padding_values=b''."
            )
        return value.encode("utf-8") if isinstance(value, str) else value
    if text:
        raise DatasetTypeError(
            f"padded_batch: component {j} has dtype {spec.dtype} but its padding value is the "
            f"string {value!r:.40}. Pass a number, e.g. padding_values=0."
        )
    return value


def _pad_column(
    column: list[np.ndarray], shape: tuple, value: Any, j: int, first: int
) -> np.ndarray:
    rank = column[0].ndim
    if shape is None:
        shape = (None,) * rank
    for n, a in enumerate(column):
        if a.ndim != rank or len(shape) != a.ndim:
            raise PaddingError(
                f"padded_batch: element {first + n} (component {j}) has shape {a.shape}, expected "
                f"rank {len(shape) if shape else rank}. Elements can differ in size, not in rank."
            )
    target = []
    for d in range(rank):
        biggest = max(a.shape[d] for a in column)
        want = biggest if shape[d] is None else shape[d]
        if biggest > want:
            n = next(i for i, a in enumerate(column) if a.shape[d] > want)
            raise PaddingError(
                f"padded_batch: element {first + n} (component {j}) has shape {column[n].shape}, "
                f"larger than the padded shape {shape} in dimension {d}. Increase padded_shapes "
                "or use None to pad to the longest element of each batch."
            )
        target.append(want)
    dtype = column[0].dtype
    if dtype.kind == "S":  # fixed-width bytes: wide enough for the longest and the padding
        width = max(max(a.dtype.itemsize for a in column), len(np.bytes_(value)))
        dtype = np.dtype(f"S{max(width, 1)}")
    out = np.full((len(column), *target), value, dtype=dtype)
    for n, a in enumerate(column):
        out[(n, *(slice(0, k) for k in a.shape))] = a
    return out


class _PaddedBatchIterator(_BatchIterator):
    def __init__(self, ds: PaddedBatchDataset, child):
        super().__init__(child, ds._batch, ds._drop, None)
        self.ds = ds

    def index_batches(self):
        return None  # padded rows are made per batch, not gathered

    def __next__(self):
        elements = next_group(self.child, self.b, self.drop)
        self.n += 1
        return self.ds._pad(elements, (self.n - 1) * self.b)


def _rows(element: Any, unbatch: bool = False) -> int:
    leaves = st.flatten(element)
    if any(isinstance(a, st.COMPOSITES) for a in leaves):
        if not unbatch:
            st.refuse_composites(st.spec_of(element), "rebatch", st._TO_DENSE)
        leads = {_lead(a) for a in leaves}
    else:
        leads = {np.shape(a)[0] if np.ndim(a) else None for a in leaves}
    if None in leads or len(leads) != 1:
        shapes = [np.shape(a) for a in st.flatten(element)]
        raise StructureMismatchError(
            f"unbatch/rebatch: every component needs the same first dimension, got shapes {shapes}. "
            "Batch them together, or slice them to one length."
        )
    return leads.pop()


def _lead(a: Any) -> int | None:
    if isinstance(a, SparseTensor):
        return int(a.dense_shape[0]) if len(a.dense_shape) else None
    if isinstance(a, RaggedTensor):
        return a.nrows()
    return np.shape(a)[0] if np.ndim(a) else None


def _row(a: Any, i: int) -> Any:
    """Row ``i`` of a batch component: an array's, a RaggedTensor's (a dense array when it
    has one ragged dimension) or a SparseTensor's (a SparseTensor one rank lower)."""
    if isinstance(a, SparseTensor):
        keep = a.indices[:, 0] == i
        return SparseTensor(a.indices[keep, 1:], a.values[keep], a.dense_shape[1:])
    return a[i]


def _unbatched_spec(s: Any) -> Any:
    shape = None if s.shape is None else s.shape[1:]
    if isinstance(s, RaggedTensorSpec):
        if s.ragged_rank == 1:  # a row of one ragged dimension is a plain array
            return TensorSpec(shape, s.dtype)
        return RaggedTensorSpec(shape, s.dtype, s.ragged_rank - 1, s.row_splits_dtype)
    if isinstance(s, SparseTensorSpec):
        return SparseTensorSpec(shape, s.dtype)
    return TensorSpec(shape, s.dtype)


class UnbatchDataset(Dataset):
    """``Dataset.unbatch``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset):
        self._input = input_dataset

    def _iterator(self, ctx):
        return _RebatchIterator(self._input._iterator(ctx), [1], False, unbatch=True)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        lead = {s.shape[0] if s.shape else None for s in st.flatten(self._input.element_spec)}
        if n == INFINITE_CARDINALITY or n < 0:
            return n
        if len(lead) == 1 and None not in lead:
            return n * lead.pop()
        return UNKNOWN_CARDINALITY

    def _compute_spec(self):
        return st.map_structure(_unbatched_spec, self._input.element_spec)


class RebatchDataset(Dataset):
    """``Dataset.rebatch``: ``unbatch().batch(n)`` in one copy; a list of sizes is cycled."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, batch_size, drop_remainder: bool):
        sizes = (
            list(batch_size) if isinstance(batch_size, list | tuple | np.ndarray) else [batch_size]
        )
        self._sizes = [_check_size(s) for s in sizes]
        if not any(self._sizes):
            raise DatasetArgumentError(
                f"rebatch: batch_size {batch_size!r} has no positive size, so every batch would "
                "be empty, forever. Give at least one size > 0 (0 makes an empty batch, as "
                "tf.data)."
            )
        self._input = input_dataset
        self._drop = check_bool("drop_remainder", drop_remainder, "rebatch")

    def _iterator(self, ctx):
        return _RebatchIterator(
            self._input._iterator(ctx), self._sizes, self._drop, spec=self._input.element_spec
        )

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY

    def _compute_spec(self):
        # tf.data's static batch dimension: one size for every batch, and no partial batch
        # (drop_remainder, or input batches of a known size that the size divides).
        lead = self._sizes[0] if len(set(self._sizes)) == 1 else None
        if lead is not None and not self._drop:
            known = {
                s.shape[0]
                for s in st.flatten(self._input.element_spec)
                if s.shape and s.shape[0] is not None
            }
            if len(known) != 1 or lead == 0 or known.pop() % lead:
                lead = None
        return st.map_structure(
            lambda s: TensorSpec(None if s.shape is None else (lead, *s.shape[1:]), s.dtype),
            self._input.element_spec,
        )


def _check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
        raise DatasetArgumentError(
            f"rebatch: every batch size must be an int >= 0, got {size!r}. Pass the rows of "
            "each batch, e.g. rebatch(32) or rebatch([2, 1, 1])."
        )
    return int(size)


class _RebatchIterator(DatasetIterator):
    """Slices rows out of input batches; the state is the input's state before the current batch."""

    def __init__(self, child, sizes, drop, unbatch=False, spec=None):
        self.child, self.sizes, self.drop, self.unbatch = child, sizes, drop, unbatch
        self.spec = spec
        self.cycle = 0
        self.cur: Any = None
        self.rows = self.off = 0
        self.composite = False
        self.snap = _safe_state(child)

    def _advance(self) -> bool:
        self.snap = _safe_state(self.child)
        try:
            self.cur = next(self.child)
        except StopIteration:
            self.cur = None
            return False
        self.rows, self.off = _rows(self.cur, self.unbatch), 0
        self.composite = self.unbatch and any(
            isinstance(a, st.COMPOSITES) for a in st.flatten(self.cur)
        )
        return True

    def __next__(self):
        if self.unbatch:
            while self.cur is None or self.off >= self.rows:
                if not self._advance():
                    raise StopIteration
            self.off += 1
            if self.composite:
                return st.map_structure(lambda a: _row(a, self.off - 1), self.cur)
            return st.map_structure(lambda a: a[self.off - 1], self.cur)
        target = self.sizes[self.cycle % len(self.sizes)]
        if target == 0:  # tf.data: an empty batch, without reading the input
            self.cycle += 1
            return self._empty()
        parts, got = [], 0
        while got < target:
            if self.cur is None or self.off >= self.rows:
                if not self._advance():
                    break
                continue
            take = min(target - got, self.rows - self.off)
            o = self.off
            parts.append(st.map_structure(lambda a, o=o, t=take: a[o : o + t], self.cur))
            self.off += take
            got += take
        if got == 0 or (self.drop and got < target):
            raise StopIteration
        self.cycle += 1
        if len(parts) == 1:
            return parts[0]
        return st.map_structure(lambda *xs: np.concatenate(xs), *parts)

    def _empty(self) -> Any:
        if self.cur is not None:
            return st.map_structure(lambda a: a[:0], self.cur)
        return st.map_structure(
            lambda s: np.empty(
                (0, *(d or 0 for d in (s.shape or (0,))[1:])),
                np.dtype(object) if s.dtype.kind in "OSU" else s.dtype,
            ),
            self.spec,
        )

    def children(self):
        return [self.child]

    def get_state(self):
        return {
            "child": _unwrap_state(self.snap),
            "has_batch": self.cur is not None,
            "offset": self.off,
            "cycle": self.cycle,
        }

    def set_state(self, state):
        self.child.set_state(state["child"])
        self.cycle = int(state["cycle"])
        self.cur = None
        self.snap = state["child"]
        if state["has_batch"]:
            self._advance()
            self.off = int(state["offset"])


def next_group(child, b: int, drop: bool) -> list:
    """The next ``b`` elements of ``child`` (fewer at its end unless ``drop``).

    Raises StopIteration when none are left, or only a short group with ``drop``.
    """
    elements = []
    for _ in range(b):
        try:
            elements.append(next(child))
        except StopIteration:
            break
    if not elements or (drop and len(elements) < b):
        raise StopIteration
    return elements
