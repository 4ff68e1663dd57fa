"""Source datasets: tensor slices, tensors, range, generators, zip, concatenate, files."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..errors import (
    ComponentLengthError,
    DatasetArgumentError,
    DatasetTypeError,
    GeneratorSignatureError,
    StructureMismatchError,
)
from ..io import _fs
from . import _structure as st
from ._dataset import Dataset
from ._iterator import (
    AccessIterator,
    ArraysAccess,
    DatasetIterator,
    IndexIterator,
    RandomAccess,
    replay,
    state_int,
)
from ._options import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from ._structure import TensorSpec


class TensorSlicesDataset(Dataset):
    """``Dataset.from_tensor_slices``: slices along the first dimension of every component."""

    def __init__(self, tensors: Any):
        element = st.normalize(tensors)
        self._tdef = st.treedef(element)
        leaves = st.flatten(element)
        if not leaves:  # tf.data refuses an element without components too
            method = "from_tensor_slices" if type(self) is TensorSlicesDataset else "from_tensors"
            raise DatasetArgumentError(
                f"{method}: the element {tensors!r:.60} has no components (tf.data refuses it "
                "too). Give at least one array."
            )
        if type(self) is TensorSlicesDataset and any(isinstance(x, st.COMPOSITES) for x in leaves):
            raise DatasetTypeError(
                "from_tensor_slices takes dense arrays in phalanx (tf.data slices a RaggedTensor "
                "or SparseTensor too); got a sparse or ragged component. Make it dense first, "
                "or index it: Dataset.range(len(rt)).map(lambda i: rt[int(i)])."
            )
        for leaf in leaves:
            if leaf.ndim == 0:
                raise ComponentLengthError(
                    f"from_tensor_slices: every component needs a first dimension to slice, got a "
                    f"scalar {leaf!r}. Use from_tensors for a single element."
                )
        lengths = {leaf.shape[0] for leaf in leaves}
        if len(lengths) > 1:
            shapes = ", ".join(
                f"{p}: {leaf.shape}" for p, leaf in zip(_paths(self._tdef), leaves, strict=True)
            )
            raise ComponentLengthError(
                "from_tensor_slices: all components must have the same first dimension (the number "
                f"of elements); got {shapes}. Slice or pad the arrays to one length."
            )
        self._access = ArraysAccess(self._tdef, [np.asarray(a) for a in leaves])

    def _iterator(self, ctx):
        return AccessIterator(self._access)

    def _random_access(self) -> RandomAccess:
        return self._access

    def _cardinality(self) -> int:
        return len(self._access)

    def _compute_spec(self):
        return st.unflatten(
            self._tdef, [TensorSpec(a.shape[1:], a.dtype) for a in self._access.leaves]
        )


class TensorsDataset(TensorSlicesDataset):
    """``Dataset.from_tensors``: one element."""

    def __init__(self, tensors: Any):
        element = st.normalize(tensors)
        super().__init__(st.map_structure(lambda a: np.asarray(a)[None], element))


class RangeAccess(RandomAccess):
    """Random access into ``range(start, stop, step)``."""

    materialized = True

    def __init__(self, start: int, stop: int, step: int, dtype: np.dtype):
        self.start, self.step, self.dtype = start, step, dtype
        self.n = (
            max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
        )

    def __len__(self) -> int:
        return self.n

    def get(self, i: int) -> Any:
        return self.dtype.type(self.start + i * self.step)

    def gather(self, idx: np.ndarray) -> Any:
        return (self.start + idx * self.step).astype(self.dtype)


class RangeDataset(Dataset):
    """``Dataset.range``: int64 scalars (or ``output_type``)."""

    def __init__(self, *args: int, output_type: Any = "int64"):
        if not 1 <= len(args) <= 3:
            raise DatasetArgumentError(
                f"range takes 1 to 3 ints (start, stop, step); got {args!r}."
            )
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        if step == 0:
            raise DatasetArgumentError("range: step must not be 0.")
        self._access = RangeAccess(int(start), int(stop), int(step), np.dtype(output_type))

    def _iterator(self, ctx):
        return AccessIterator(self._access)

    def _random_access(self) -> RandomAccess:
        return self._access

    def _cardinality(self) -> int:
        return len(self._access)

    def _compute_spec(self):
        return TensorSpec((), self._access.dtype)


class GeneratorDataset(Dataset):
    """``Dataset.from_generator``; each element is checked against ``output_signature``.

    Checkpointing replays: ``set_state`` calls the generator again and skips
    the elements already produced, so the generator must yield the same
    sequence each time it is called.
    """

    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError(
                f"from_generator: generator must be a callable that returns an iterator, got "
                f"{type(generator).__name__}. Pass the generator function, not its result."
            )
        if output_signature is not None and (output_types is not None or output_shapes is not None):
            given = "output_types" if output_types is not None else "output_shapes"
            raise DatasetTypeError(
                f"from_generator: {given} cannot be used together with output_signature (as "
                "tf.data). Pass only output_signature, a nest of TensorSpec."
            )
        if output_signature is None:
            if output_types is None:
                raise TypeError("from_generator needs output_signature (a nest of TensorSpec).")
            shapes = output_shapes
            if shapes is None:
                shapes = st.map_structure(lambda _: None, output_types)
            output_signature = _zip_specs(output_types, shapes)
        self._gen = generator
        self._args = tuple(args or ())
        # A str signature yields UTF-8 bytes, as TF's tf.string (a bytes one keeps its width).
        output_signature = st.map_structure(
            lambda s: (
                TensorSpec(s.shape, object)
                if isinstance(s, TensorSpec) and s.dtype.kind == "U"
                else s
            ),
            output_signature,
        )
        self._sig = output_signature
        self._sig_tdef = st.treedef(output_signature)
        self._sig_flat = st.flatten(output_signature)
        for s in self._sig_flat:
            if not isinstance(s, TensorSpec):
                raise TypeError(
                    f"from_generator: output_signature must be a nest of TensorSpec, found {s!r}."
                )

    def _iterator(self, ctx):
        return _GeneratorIterator(self)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _compute_spec(self):
        return self._sig

    def _check(self, value: Any, n: int) -> Any:
        if self._sig_tdef is not st.LEAF and isinstance(value, list) and self._sig_tdef[0] is tuple:
            value = tuple(value)
        if st.treedef(value) != self._sig_tdef:
            raise GeneratorSignatureError(
                f"from_generator: element {n} has structure {st.describe(st.treedef(value))}, but "
                f"output_signature is {st.describe(self._sig_tdef)}. Yield elements nested like the "
                "signature (tuples for tuples, dicts with the same keys)."
            )
        out = []
        for leaf, spec in zip(st.flatten(value), self._sig_flat, strict=True):
            if spec.dtype.kind in "OS" and st.is_string(leaf):
                leaf = st._exact_bytes(np.asarray(leaf, dtype=object))  # str as UTF-8, as TF
            try:
                a = np.asarray(leaf, dtype=spec.dtype)
            except (TypeError, ValueError) as e:
                raise GeneratorSignatureError(
                    f"from_generator: element {n} could not be converted to {spec.dtype.name} as "
                    f"output_signature asks: {leaf!r:.80} ({e})."
                ) from None
            if not st.shapes_compatible(spec.shape, a.shape):
                raise GeneratorSignatureError(
                    f"from_generator: element {n} has shape {a.shape} where output_signature expects "
                    f"{spec.shape} (None matches any size). Fix the generator or the signature."
                )
            out.append(a)
        return st.unflatten(self._sig_tdef, out)


def _zip_specs(types: Any, shapes: Any) -> Any:
    tdef = st.treedef(types)
    flat_shapes = st.flatten_up_to(tdef, shapes)
    return st.unflatten(
        tdef, [TensorSpec(s, t) for t, s in zip(st.flatten(types), flat_shapes, strict=True)]
    )


class _GeneratorIterator(DatasetIterator):
    def __init__(self, ds: GeneratorDataset):
        self.ds = ds
        self.it: Iterator | None = None
        self.n = 0

    def __next__(self):
        if self.it is None:
            self.it = iter(self.ds._gen(*self.ds._args))
        value = next(self.it)
        self.n += 1
        return self.ds._check(value, self.n - 1)

    def get_state(self):
        return {"n": self.n}

    def set_state(self, state):
        n = state_int(state, "n", what="elements already generated")
        self.it = iter(self.ds._gen(*self.ds._args))
        replay(self.it, n, "the generator")
        self.n = n


class ZipAccess(RandomAccess):
    """Random access into a zip of random-access datasets."""

    def __init__(self, tdef: Any, parts: list[RandomAccess]):
        self.tdef, self.parts = tdef, parts
        self.materialized = all(p.materialized for p in parts)

    def __len__(self) -> int:
        return min(len(p) for p in self.parts)

    def get(self, i: int) -> Any:
        return st.unflatten(self.tdef, [p.get(i) for p in self.parts])

    def gather(self, idx: np.ndarray) -> Any:
        return st.unflatten(self.tdef, [p.gather(idx) for p in self.parts])


class ZipDataset(Dataset):
    """``Dataset.zip``: elements of several datasets side by side, until the shortest ends."""

    def __init__(self, datasets: Any):
        self._tdef = st.treedef(datasets)
        self._children = st.flatten(datasets)
        for d in self._children:
            if not isinstance(d, Dataset):
                raise TypeError(
                    f"zip expects datasets (in a tuple or dict), got {type(d).__name__}."
                )

    def _inputs(self):
        return list(self._children)

    def _with_inputs(self, inputs):
        out = super()._with_inputs([])
        out._children = list(inputs)
        return out

    def _iterator(self, ctx):
        its = [d._iterator(ctx) for d in self._children]
        access = self._random_access()
        if access is not None and all(isinstance(i, AccessIterator) for i in its):
            return _ZipIndexIterator(self._tdef, its, access)
        return _ZipIterator(self._tdef, its)

    def _random_access(self):
        parts = [d._random_access() for d in self._children]
        return None if any(p is None for p in parts) else ZipAccess(self._tdef, parts)

    def _cardinality(self) -> int:
        out = INFINITE_CARDINALITY
        for d in self._children:
            n = d._cardinality()
            if n == UNKNOWN_CARDINALITY:
                return n
            if n != INFINITE_CARDINALITY:
                out = n if out == INFINITE_CARDINALITY else min(out, n)
        return out

    def _compute_spec(self):
        return st.unflatten(self._tdef, [d.element_spec for d in self._children])


class _ZipIterator(DatasetIterator):
    def __init__(self, tdef, its):
        self.tdef, self.its = tdef, its

    def __next__(self):
        return st.unflatten(self.tdef, [next(i) for i in self.its])

    def children(self):
        return self.its

    def get_state(self):
        return {"children": [i.get_state() for i in self.its]}

    def set_state(self, state):
        for i, s in zip(self.its, state["children"], strict=True):
            i.set_state(s)


class _ZipIndexIterator(_ZipIterator, IndexIterator):
    def __init__(self, tdef, its, access):
        super().__init__(tdef, its)
        self.base = access

    def next_indices(self, k):
        n = len(self.base)
        pos = self.its[0].pos
        end = min(pos + k, n)
        for i in self.its:
            i.pos = end
        return np.arange(pos, end, dtype=np.int64)

    __next__ = IndexIterator.__next__


class ConcatenateDataset(Dataset):
    """``Dataset.concatenate``: this dataset's elements, then the other's."""

    _input_attrs = ("_first", "_second")

    def __init__(self, first: Dataset, second: Dataset):
        a, b = st.treedef(first.element_spec), st.treedef(second.element_spec)
        if a != b:
            raise StructureMismatchError(
                f"concatenate: the datasets' elements differ in structure: {st.describe(a)} vs "
                f"{st.describe(b)}. Map them to the same nesting first."
            )
        fa, fb = st.flatten(first.element_spec), st.flatten(second.element_spec)
        for k, (x, y) in enumerate(zip(fa, fb, strict=True)):
            if getattr(x, "dtype", None) is None or getattr(y, "dtype", None) is None:
                continue
            if _dtype_family(x.dtype) != _dtype_family(y.dtype):
                where = "" if len(fa) == 1 else f" in component {k}"
                raise DatasetTypeError(
                    f"concatenate: incompatible dataset elements: {x.dtype} vs {y.dtype}{where} "
                    f"(tf.data raises TypeError too). Cast one of them first, e.g. "
                    f".map(lambda x: x.astype(np.{y.dtype}))."
                )
        self._first, self._second = first, second

    def _iterator(self, ctx):
        return _ConcatIterator(self, ctx)

    def _cardinality(self) -> int:
        a, b = self._first._cardinality(), self._second._cardinality()
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        if UNKNOWN_CARDINALITY in (a, b):
            return UNKNOWN_CARDINALITY
        return a + b

    def _compute_spec(self):
        def merge(x: TensorSpec, y: TensorSpec) -> TensorSpec:
            if x.shape is None or y.shape is None or len(x.shape) != len(y.shape):
                return TensorSpec(None, x.dtype)
            return TensorSpec(
                tuple(p if p == q else None for p, q in zip(x.shape, y.shape, strict=True)), x.dtype
            )

        return st.map_structure(merge, self._first.element_spec, self._second.element_spec)


def _dtype_family(dtype: np.dtype) -> Any:
    """A dtype, with every string dtype (object, bytes of any width, str) one: TF's string."""
    return "string" if dtype.kind in "OSU" else np.dtype(dtype)


class _ConcatIterator(DatasetIterator):
    def __init__(self, ds: ConcatenateDataset, ctx):
        self.ds, self.ctx = ds, ctx
        self.which = 0
        self.it = ds._first._iterator(ctx)

    def __next__(self):
        while True:
            try:
                return next(self.it)
            except StopIteration:
                if self.which == 1:
                    raise
                self.which = 1
                self.it.close()
                self.it = self.ds._second._iterator(self.ctx)

    def children(self):
        return [self.it]

    def get_state(self):
        return {"which": self.which, "child": self.it.get_state()}

    def set_state(self, state):
        self.which = int(state["which"])
        if self.which == 1:
            self.it = self.ds._second._iterator(self.ctx)
        self.it.set_state(state["child"])


class FileSourceDataset(Dataset):
    """Base class of datasets that read records from a list of files, one file after another.

    Subclasses implement ``_read_file(filename)`` (an iterable of elements,
    each a numpy array or nest) and ``_compute_spec()``; they may override
    ``_open_file(filename, skip)`` to seek to a record without reading the
    ones before it. The base class provides iteration, checkpointing (the file
    index and the record count in that file) and FILE auto-sharding, which
    replaces ``filenames`` with each input pipeline's share
    (``_with_filenames``).

    Args:
        filenames: A file name or a list of them (str, bytes or ``os.PathLike``).
    """

    def __init__(self, filenames: Any):
        if isinstance(filenames, str | bytes | os.PathLike):
            filenames = [filenames]
        self._filenames = [_as_str(f) for f in np.asarray(filenames, dtype=object).ravel().tolist()]

    @property
    def filenames(self) -> list[str]:
        """The files this source reads, in order."""
        return list(self._filenames)

    def _with_filenames(self, filenames: list[str]) -> FileSourceDataset:
        out = self._with_inputs(self._inputs())
        out._filenames = list(filenames)
        return out

    def _read_file(self, filename: str) -> Iterable[Any]:
        raise NotImplementedError

    def _open_file(self, filename: str, skip: int) -> Iterator[Any]:
        it = iter(self._read_file(filename))
        for _ in range(skip):
            next(it)
        return it

    def _iterator(self, ctx):
        return _FileIterator(self)

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY


def _as_str(f: Any) -> str:
    if isinstance(f, bytes | np.bytes_):
        return bytes(f).decode("utf-8")
    return os.fspath(f) if isinstance(f, os.PathLike) else str(f)


class _FileIterator(DatasetIterator):
    def __init__(self, ds: FileSourceDataset):
        self.ds = ds
        self.file = 0
        self.record = 0
        self.it: Iterator | None = None

    def __next__(self):
        names = self.ds._filenames
        while self.file < len(names):
            if self.it is None:
                self.it = self.ds._open_file(names[self.file], self.record)
            try:
                value = next(self.it)
            except StopIteration:
                self._close_file()
                self.file += 1
                self.record = 0
                continue
            self.record += 1
            return value
        raise StopIteration

    def _close_file(self):
        close = getattr(self.it, "close", None)
        if close is not None:
            close()
        self.it = None

    def close(self):
        self._close_file()

    def get_state(self):
        return {"file": self.file, "record": self.record}

    def set_state(self, state):
        self._close_file()
        self.file = state_int(state, "file", high=len(self.ds._filenames), what="file index")
        self.record = state_int(state, "record", what="record in the file")


class ListFilesDataset(FileSourceDataset):
    """The file names themselves, as bytes scalars (the source of ``Dataset.list_files``)."""

    def _read_file(self, filename: str) -> Iterable[Any]:
        return [np.bytes_(filename.encode("utf-8"))]

    def _random_access(self):
        names = np.array([f.encode("utf-8") for f in self._filenames], dtype=np.bytes_)
        return ArraysAccess(st.LEAF, [names])

    def _cardinality(self) -> int:
        return len(self._filenames)

    def _compute_spec(self):
        return TensorSpec((), np.bytes_)


def list_files(file_pattern: Any, *, shuffle: bool | None, seed: int | None) -> Dataset:
    """``Dataset.list_files``: glob, sort, and (by default) shuffle the names."""
    patterns = (
        [file_pattern]
        if isinstance(file_pattern, str | bytes | os.PathLike)
        else list(file_pattern)
    )
    patterns = [_as_str(p) for p in patterns]
    names = sorted({m for p in patterns for m in _fs.glob(p)})
    if not names:
        where = (
            "the pattern is a URL: check the bucket and prefix, and that these credentials "
            "may list them"
            if any(_fs.is_url(p) for p in patterns)
            else f"the pattern is relative to the current directory {os.getcwd()!r}"
        )
        raise DatasetArgumentError(
            f"list_files: no files matched pattern {file_pattern!r}. Check the path and the glob "
            f"(* ? [..]); {where}."
        )
    ds: Dataset = ListFilesDataset(names)
    if shuffle is None or shuffle:
        ds = ds.shuffle(len(names), seed=seed)
    return ds


def _paths(tdef: Any, prefix: str = "") -> list[str]:
    if tdef is st.LEAF:
        return [prefix or "tensors"]
    if tdef[0] is dict:
        return [
            p for k, t in zip(tdef[1], tdef[2], strict=True) for p in _paths(t, f"{prefix}[{k!r}]")
        ]
    return [p for i, t in enumerate(tdef[1]) for p in _paths(t, f"{prefix}[{i}]")]
