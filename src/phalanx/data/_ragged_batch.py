"""``ragged_batch`` and ``sparse_batch``: batches of elements of different shapes, unpadded.

``ragged_batch`` follows tf.data's ``_DenseToRaggedDataset`` then ``batch``: a
dense component whose shape is fully known stays dense; one with unknown
dimensions becomes a ``RaggedTensor`` ragged up to its last unknown dimension
(so elements of shape ``(None,)`` batch to ``(batch, None)``, ``(2, None)`` to
``(batch, 2, None)`` with two ragged dimensions); ``RaggedTensor`` and
``SparseTensor`` components batch as ``batch`` batches them. phalanx infers a
``map``'s shapes from its first element where TensorFlow traces the function,
so a dimension also counts as unknown when the elements of the first batch
differ in it (docs/input_pipelines.md).

``sparse_batch(batch_size, row_shape)`` (``dense_to_sparse_batch``) turns a
single dense component into one ``SparseTensor`` per batch holding every value
of every element (zeros too) at its position, with ``dense_shape
[n, *row_shape]`` (a ``None`` in ``row_shape``: the batch's largest).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BatchShapeError, DatasetArgumentError, DatasetTypeError
from ..io import RaggedTensor, RaggedTensorSpec, SparseTensor, SparseTensorSpec
from . import _structure as st
from ._batch import _batched_cardinality, next_group
from ._dataset import Dataset, check_bool, check_positive
from ._iterator import DatasetIterator, state_int
from ._structure import TensorSpec

__all__ = ["RaggedBatchDataset", "SparseBatchDataset"]

_DENSE = -1  # a plan entry: stack as a dense array
_BATCH = -2  # a plan entry: a RaggedTensor/SparseTensor component, batched as batch does


class _GroupIterator(DatasetIterator):
    """Groups ``b`` input elements and hands them to ``assemble``; the state is batch-exact."""

    def __init__(self, child, b: int, drop: bool, assemble):
        self.child, self.b, self.drop, self.assemble = child, b, drop, assemble
        self.n = 0

    def __next__(self):
        elements = next_group(self.child, self.b, self.drop)
        first = self.n * self.b
        self.n += 1
        return self.assemble(elements, first)

    def children(self):
        return [self.child]

    def get_state(self):
        return {"n": self.n, "child": self.child.get_state()}

    def set_state(self, state):
        self.n = state_int(state, "n", what="batches already made")
        self.child.set_state(state["child"])


def _take(dataset: Dataset, n: int) -> list[Any]:
    """The first ``n`` elements of a fresh pass (fewer when the dataset is shorter)."""
    from ._take_skip import TakeDataset

    out = []
    it = TakeDataset(dataset, n)._iterator(_fresh_ctx())
    try:
        for x in it:
            out.append(x)
    finally:
        it.close()
    return out


def _fresh_ctx():
    from ._iterator import IterCtx

    return IterCtx(0, (0,))


class RaggedBatchDataset(Dataset):
    """``Dataset.ragged_batch`` (and ``experimental.dense_to_ragged_batch``)."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, batch_size, drop_remainder, row_splits_dtype):
        self._input = input_dataset
        self._batch = check_positive("batch_size", batch_size, "ragged_batch")
        self._drop = check_bool("drop_remainder", drop_remainder, "ragged_batch")
        dtype = getattr(row_splits_dtype, "name", row_splits_dtype)
        if str(dtype) not in ("int32", "int64"):
            raise DatasetArgumentError(
                f"ragged_batch: row_splits_dtype must be int32 or int64, got {row_splits_dtype!r}."
            )
        self._splits = np.dtype(str(dtype))

    def _plan(self) -> tuple[list[Any], list[int]]:
        """Per component of the input spec: ``(element spec with unknown dims, plan)``; the plan
        is ``_DENSE``, ``_BATCH`` or the element's ragged rank (0: dense rows, ragged batch)."""
        if "_plan_cache" in self.__dict__:
            return self._plan_cache
        specs = st.flatten(self._input.element_spec)
        first = [st.flatten(e) for e in _take(self._input, self._batch)]
        out_specs, plan = [], []
        for j, spec in enumerate(specs):
            if not isinstance(spec, TensorSpec):
                out_specs.append(spec)
                plan.append(_BATCH)
                continue
            shape = spec.shape
            if shape is not None and first:
                seen = {np.shape(e[j]) for e in first}
                if len({len(s) for s in seen}) == 1:
                    shape = tuple(
                        None if d is None or len({s[i] for s in seen}) > 1 else d
                        for i, d in enumerate(shape)
                    )
            unknown = [] if shape is None else [i for i, d in enumerate(shape) if d is None]
            out_specs.append(TensorSpec(shape, spec.dtype))
            plan.append(max(unknown) if unknown else _DENSE)
        self._plan_cache = (out_specs, plan)
        return self._plan_cache

    def _iterator(self, ctx):
        specs, plan = self._plan()
        tdef = st.treedef(self._input.element_spec)

        def assemble(elements: list[Any], first: int) -> Any:
            columns = zip(*(st.flatten(e) for e in elements), strict=True)
            out = [
                self._column(list(c), specs[j], plan[j], j, first) for j, c in enumerate(columns)
            ]
            return st.unflatten(tdef, out)

        return _GroupIterator(self._input._iterator(ctx), self._batch, self._drop, assemble)

    def _column(self, column: list[Any], spec: Any, plan: int, j: int, first: int) -> Any:
        if plan == _BATCH:
            return st.stack(column)
        shapes = {np.shape(v) for v in column}
        if plan == _DENSE:
            known = spec.shape
            if len(shapes) > 1 or (known is not None and not st.shapes_compatible(known, *shapes)):
                raise BatchShapeError(
                    f"ragged_batch (dataset element {first} onwards): component {j} has shapes "
                    f"{sorted(shapes)}, but ragged_batch took it as dense from its element_spec "
                    f"{spec} and the first batch (phalanx infers a map's shapes from its first "
                    "element; TF traces it). Make it ragged yourself: map it to "
                    "phalanx.data.RaggedTensor, or give from_generator an output_signature with "
                    "None where the length varies."
                )
            return st.stack(column)
        ranks = {len(s) for s in shapes}
        known = spec.shape
        if len(ranks) > 1 or (known is not None and ranks != {len(known)}):
            raise BatchShapeError(
                f"ragged_batch (dataset element {first} onwards): component {j} has elements of "
                f"ranks {sorted(ranks)}; a ragged batch needs one rank."
            )
        rows = [_ragged_element(np.asarray(v), plan, known) for v in column]
        return st.stack_rows(rows, self._splits).with_row_splits_dtype(self._splits)

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch, self._drop)

    def _compute_spec(self):
        specs, plan = self._plan()
        lead = self._batch if self._drop else None
        out = []
        for spec, p in zip(specs, plan, strict=True):
            if p in (_DENSE, _BATCH):
                out.append(st.batched_spec(lead, spec))
            else:
                out.append(RaggedTensorSpec((lead, *spec.shape), spec.dtype, p + 1, self._splits))
        return st.unflatten(st.treedef(self._input.element_spec), out)


def _ragged_element(value: np.ndarray, ragged_rank: int, known: tuple | None) -> Any:
    """``value`` with its first ``ragged_rank + 1`` dimensions as rows (a plain array for 0);
    dimensions the spec knows are kept uniform (TF's shape shows them)."""
    if ragged_rank == 0:
        return value
    lead = value.shape[: ragged_rank + 1]
    result: Any = value.reshape(-1, *value.shape[ragged_rank + 1 :])
    for axis in range(ragged_rank, 0, -1):
        outer = int(np.prod(lead[:axis], dtype=np.int64))
        splits = np.arange(outer + 1, dtype=np.int64) * lead[axis]
        uniform = known[axis] if known is not None else None
        result = RaggedTensor(result, splits, _uniform=uniform)
    return result


# ---------------------------------------------------------------------------
# sparse_batch
# ---------------------------------------------------------------------------


def _row_shape(row_shape: Any) -> tuple[int | None, ...]:
    if isinstance(row_shape, (int, np.integer)):
        row_shape = [row_shape]
    try:
        dims = list(row_shape)
    except TypeError:
        raise DatasetTypeError(
            f"sparse_batch: row_shape must be a list of ints (or None for a size the batch "
            f"decides), got {type(row_shape).__name__} {row_shape!r}."
        ) from None
    out: list[int | None] = []
    for d in dims:
        if d is None:
            out.append(None)
            continue
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise DatasetTypeError(f"sparse_batch: row_shape holds ints or None, got {d!r}.")
        if d < 0:
            raise DatasetArgumentError(
                f"sparse_batch: Dimension {int(d)} must be >= 0 (row_shape {row_shape!r}); use "
                "None for a size each batch decides."
            )
        out.append(int(d))
    return tuple(out)


class SparseBatchDataset(Dataset):
    """``Dataset.sparse_batch`` (and ``experimental.dense_to_sparse_batch``)."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, batch_size, row_shape):
        self._input = input_dataset
        self._batch = check_positive("batch_size", batch_size, "sparse_batch")
        self._row_shape = _row_shape(row_shape)
        spec = input_dataset.element_spec
        if not isinstance(spec, TensorSpec):
            raise DatasetTypeError(
                "`dense_to_sparse_batch` requires an input dataset whose elements have a single "
                f"component, but the given dataset has the element_spec {spec}. Map it to one "
                "array first (or sparse_batch each component in its own dataset and zip them)."
            )

    def _iterator(self, ctx):
        return _GroupIterator(self._input._iterator(ctx), self._batch, False, self._assemble)

    def _assemble(self, elements: list[Any], first: int) -> SparseTensor:
        row = self._row_shape
        arrays = [np.asarray(e) for e in elements]
        for k, a in enumerate(arrays):
            if a.ndim != len(row):
                raise BatchShapeError(
                    f"sparse_batch: Input element {first + k} had shape {a.shape} that is "
                    f"incompatible with the row shape {row} (another rank)."
                )
            if any(d is not None and s > d for s, d in zip(a.shape, row, strict=True)):
                raise BatchShapeError(
                    f"sparse_batch: Input element {first + k} had shape {a.shape} that is larger "
                    f"than the row shape {row}. Raise row_shape (or None: the batch's largest)."
                )
        dense = [
            d if d is not None else max((a.shape[i] for a in arrays), default=0)
            for i, d in enumerate(row)
        ]
        indices, values = [], []
        for k, a in enumerate(arrays):
            idx = np.indices(a.shape).reshape(a.ndim, -1).T if a.ndim else np.zeros((1, 0), int)
            indices.append(np.column_stack([np.full(len(idx), k, np.int64), idx]))
            values.append(a.reshape(-1))
        flat = np.concatenate(values)
        return SparseTensor(np.concatenate(indices), flat, [len(arrays), *dense])

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch, False)

    def _compute_spec(self):
        return SparseTensorSpec((None, *self._row_shape), self._input.element_spec.dtype)
