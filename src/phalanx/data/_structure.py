"""Nested element structures: flatten, rebuild, convert, and ``TensorSpec``.

An element is a numpy array (or numpy scalar) or a nest of tuples, namedtuples
and dicts of them, as in tf.data. Lists are leaves: like ``tf.convert_to_tensor``
they become one array. Dict leaves are ordered by sorted key, as ``tf.nest``.
``None`` is a component without arrays (tf.data's ``NoneTensorSpec``): a node of
the structure with no leaves, so every transformation passes it through as it is
(``jax.tree`` treats ``None`` the same way).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import (
    ComponentLengthError,
    DatasetFunctionError,
    DatasetTypeError,
    StructureMismatchError,
)
from ..io import (
    RaggedTensor,
    RaggedTensorSpec,
    SparseTensor,
    SparseTensorSpec,
    stack_rows,
    stack_sparse,
)

#: Leaves that are not one numpy array: host-side sparse and ragged values.
COMPOSITES = (SparseTensor, RaggedTensor)

LEAF = None  # the tree definition of a single leaf
NONE = ("None",)  # the tree definition of a None component: no leaves (TF's NoneTensorSpec)


class NoneTensorSpec:
    """The spec of a ``None`` component, like TensorFlow's ``NoneTensorSpec``.

    A ``None`` component holds no arrays: batching, caching, shuffling ... pass
    it through, and iterating yields ``None`` there.

    Examples:
        >>> from phalanx.data import Dataset
        >>> Dataset.from_tensors((1, None)).element_spec[1]
        NoneTensorSpec()
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoneTensorSpec)

    def __hash__(self) -> int:
        return hash(NoneTensorSpec)

    def __repr__(self) -> str:
        return "NoneTensorSpec()"


def _is_none(x: Any) -> bool:
    return x is None or isinstance(x, NoneTensorSpec)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(x: Any) -> list[Any]:
    """The leaves of ``x`` in ``tf.nest`` order (dicts by sorted key)."""
    if isinstance(x, tuple):
        out: list[Any] = []
        for c in x:
            out.extend(flatten(c))
        return out
    if isinstance(x, dict):
        out = []
        for k in sorted(x):
            out.extend(flatten(x[k]))
        return out
    if _is_none(x):
        return []
    return [x]


def treedef(x: Any) -> Any:
    """A hashable description of the nesting of ``x`` (``LEAF`` for a leaf)."""
    if isinstance(x, tuple):
        return (type(x), tuple(treedef(c) for c in x))
    if isinstance(x, dict):
        keys = tuple(sorted(x))
        return (dict, keys, tuple(treedef(x[k]) for k in keys))
    if _is_none(x):
        return NONE
    return LEAF


def unflatten(tdef: Any, leaves: Sequence[Any], none: Any = None) -> Any:
    """Rebuild the structure ``tdef`` from ``leaves`` (inverse of ``flatten``); ``none``
    stands where the structure has a ``None`` component (``NoneTensorSpec()`` for a spec)."""
    it = iter(leaves)
    out = _build(tdef, it, none)
    return out


def _build(tdef: Any, it: Any, none: Any) -> Any:
    if tdef is LEAF:
        return next(it)
    if tdef is NONE:
        return none
    if tdef[0] is dict:
        return {k: _build(t, it, none) for k, t in zip(tdef[1], tdef[2], strict=True)}
    kind, children = tdef
    values = [_build(t, it, none) for t in children]
    return kind(*values) if _is_namedtuple_type(kind) else kind(values)


def public_spec(spec: Any) -> Any:
    """``spec`` with ``NoneTensorSpec()`` at its nested ``None`` components (as
    ``element_spec``); a bare ``None`` stays (a spec not known: a map of an empty input)."""
    tdef = treedef(spec)
    if tdef is LEAF or tdef is NONE:
        return spec
    return unflatten(tdef, flatten(spec), none=NoneTensorSpec())


def _is_namedtuple_type(kind: type) -> bool:
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def flatten_up_to(tdef: Any, x: Any) -> list[Any]:
    """The subtrees of ``x`` at the leaves of ``tdef`` (e.g. one shape tuple per component)."""
    if tdef is LEAF:
        return [x]
    if tdef is NONE:
        return []
    if tdef[0] is dict:
        return [v for k, t in zip(tdef[1], tdef[2], strict=True) for v in flatten_up_to(t, x[k])]
    if len(x) != len(tdef[1]):
        raise ValueError(f"expected {len(tdef[1])} entries nested like {describe(tdef)}, got {x!r}")
    return [v for t, c in zip(tdef[1], x, strict=True) for v in flatten_up_to(t, c)]


def has_none(tdef: Any) -> bool:
    """Whether the structure ``tdef`` has a ``None`` component."""
    if tdef is NONE:
        return True
    if tdef is LEAF:
        return False
    return any(has_none(t) for t in (tdef[2] if tdef[0] is dict else tdef[1]))


def num_leaves(tdef: Any) -> int:
    """How many leaves the structure ``tdef`` holds."""
    if tdef is LEAF:
        return 1
    if tdef is NONE:
        return 0
    children = tdef[2] if tdef[0] is dict else tdef[1]
    return sum(num_leaves(t) for t in children)


def map_structure(fn: Callable[..., Any], *xs: Any) -> Any:
    """Apply ``fn`` leaf-wise to structures of the same shape."""
    tdef = treedef(xs[0])
    flats = [flatten(x) for x in xs]
    return unflatten(tdef, [fn(*leaves) for leaves in zip(*flats, strict=True)])


def describe(tdef: Any) -> str:
    """A short human description of a structure, for error messages."""
    if tdef is LEAF:
        return "array"
    if tdef is NONE:
        return "None"
    if tdef[0] is dict:
        inner = ", ".join(f"{k!r}: {describe(t)}" for k, t in zip(tdef[1], tdef[2], strict=True))
        return "{" + inner + "}"
    kind, children = tdef
    name = "" if kind is tuple else kind.__name__
    return (
        name
        + "("
        + ", ".join(describe(t) for t in children)
        + ("," if len(children) == 1 else "")
        + ")"
    )


def to_array(x: Any) -> Any:
    """Convert a leaf as ``tf.convert_to_tensor`` would, but to numpy.

    numpy arrays and scalars keep their dtype; Python floats become float32,
    Python ints int32 (int64 when a value does not fit in int32), Python bools
    bool and Python strings UTF-8 bytes, as TensorFlow does.
    Strings become ``object`` arrays of exact ``bytes``: numpy's fixed-width
    ``'S'`` dtype drops trailing zero bytes, which corrupts serialized records
    (a ``tf.string`` keeps every byte).
    """
    if isinstance(x, np.ndarray | np.generic | SparseTensor | RaggedTensor):
        return x
    try:
        a = np.asarray(x)
    except ValueError as e:
        raise ComponentLengthError(
            f"phalanx.data cannot make one array of the {type(x).__name__} {x!r:.80}: its rows "
            f"have different lengths or shapes (numpy: {str(e).split('. ')[0]}). Pad them to one "
            "length (padded_batch pads variable-length elements), or give one array per element "
            "through from_generator."
        ) from None
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype.kind == "i":  # Python ints: int32 when every value fits, as tf.constant
        return a.astype(np.int32) if _fits_int32(a) else a.astype(np.int64)
    if a.dtype.kind in "SU":
        return _exact_bytes(np.array(x, dtype=object))
    if a.dtype == object:
        raise TypeError(
            f"phalanx.data elements must be numeric, bool or string arrays; got an object array "
            f"from {type(x).__name__} {x!r:.80}. Convert it with numpy first."
        )
    return a


def _fits_int32(a: np.ndarray) -> bool:
    return a.size == 0 or (int(a.min()) >= -(2**31) and int(a.max()) < 2**31)


_to_bytes = np.frompyfunc(lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v), 1, 1)


def _exact_bytes(a: np.ndarray) -> np.ndarray:
    """An ``object`` array of ``bytes`` (``str`` encoded as UTF-8) of ``a``'s shape."""
    return np.asarray(_to_bytes(a), dtype=object).reshape(a.shape)


def is_string(x: Any) -> bool:
    """Whether a leaf holds strings: ``bytes``/``str`` or a string or object array."""
    return isinstance(x, bytes | str) or (
        isinstance(x, np.ndarray | np.generic) and x.dtype.kind in "OSU"
    )


def stack(column: Sequence[Any]) -> np.ndarray:
    """``np.stack`` of one component's values; strings stack into an ``object`` array.

    ``np.stack`` of ``bytes`` makes a fixed-width ``'S'`` array, which drops
    trailing zero bytes: string columns keep their exact bytes instead.
    Raises ``ValueError`` when the values' shapes differ (as ``np.stack``).
    ``RaggedTensor`` and ``SparseTensor`` values batch as in tf.data: a RaggedTensor
    with one more ragged dimension, a SparseTensor ``[n, *largest dense_shape]``.
    """
    if isinstance(column[0], COMPOSITES):
        return _stack_composite(column)
    if not is_string(column[0]):
        return np.stack(column)
    shape = np.shape(column[0])
    out = np.empty((len(column), *shape), object)
    for i, v in enumerate(column):
        if np.shape(v) != shape:
            raise ValueError(
                f"all input arrays must have the same shape, got {shape} and {np.shape(v)}"
            )
        out[i, ...] = v.encode("utf-8") if isinstance(v, str) else v
    if any(isinstance(v, np.ndarray) and v.dtype.kind == "U" for v in column):
        out = _exact_bytes(out)
    return out


def _stack_composite(column: Sequence[Any]) -> Any:
    kind = type(column[0])
    if not all(type(v) is kind for v in column):
        other = next(type(v).__name__ for v in column if type(v) is not kind)
        raise ValueError(f"cannot batch a {kind.__name__} with a {other} in one component")
    return stack_sparse(column) if kind is SparseTensor else stack_rows(column)


def composite_components(spec: Any, path: str = "") -> list[tuple[str, Any]]:
    """``(path, spec)`` of every ``SparseTensorSpec``/``RaggedTensorSpec`` in an element spec."""
    if isinstance(spec, (SparseTensorSpec, RaggedTensorSpec)):
        return [(path or "the element", spec)]
    if isinstance(spec, tuple):
        return [p for i, c in enumerate(spec) for p in composite_components(c, f"{path}[{i}]")]
    if isinstance(spec, dict):
        return [p for k in sorted(spec) for p in composite_components(spec[k], f"{path}[{k!r}]")]
    return []


def refuse_composites(spec: Any, method: str, hint: str) -> None:
    """Raises ``DatasetTypeError`` when ``spec`` has sparse or ragged components, which
    ``method`` does not take (phalanx's difference from tf.data, named in the message)."""
    found = composite_components(spec)
    if found:
        listed = ", ".join(f"{p}: {s}" for p, s in found)
        raise DatasetTypeError(
            f"{method} takes dense components only in phalanx (tf.data takes sparse and ragged "
            f"ones too); the elements hold {listed}. {hint}"
        )


_TO_DENSE = "Make them dense first (.to_tensor() / .to_dense() in a map), or keep them in memory."


def dense_only_message(spec: Any, what: str) -> str | None:
    """Why ``what`` (``fit``, a distributed dataset) cannot take elements of ``spec``: the
    sparse and ragged components it has and how to make them dense; None when it can."""
    found = composite_components(spec)
    if not found:
        return None
    listed = ", ".join(f"{p}: {s}" for p, s in found)
    return (
        f"{what} takes dense batches (a compiled step needs one shape per step), but the "
        f"dataset's elements hold sparse or ragged values ({listed}). Make them dense first: "
        "ds.map(...) with .to_tensor() for a RaggedTensor or .to_dense() for a SparseTensor, or "
        "padded_batch instead of ragged_batch/sparse_batch, or parse with "
        "FixedLenSequenceFeature instead of VarLenFeature/RaggedFeature."
    )


def batched_spec(lead: int | None, spec: Any) -> Any:
    """The spec of a batch of ``spec`` values with leading dimension ``lead``."""
    shape = None if spec.shape is None else (lead, *spec.shape)
    if isinstance(spec, RaggedTensorSpec):
        return RaggedTensorSpec(shape, spec.dtype, spec.ragged_rank + 1, spec.row_splits_dtype)
    if isinstance(spec, SparseTensorSpec):
        return SparseTensorSpec(shape, spec.dtype)
    return TensorSpec(shape, spec.dtype)


def normalize(x: Any) -> Any:
    """``to_array`` on every leaf of a nest (lists are leaves)."""
    if isinstance(x, tuple):
        values = [normalize(c) for c in x]
        return type(x)(*values) if _is_namedtuple(x) else tuple(values)
    if isinstance(x, dict):
        return {k: normalize(v) for k, v in x.items()}
    if _is_none(x):
        return None
    return to_array(x)


class TensorSpec:
    """The shape and dtype of one component of a dataset element, like ``tf.TensorSpec``.

    ``None`` in ``shape`` is a dimension that can vary (for example the batch
    dimension of ``batch(n)`` without ``drop_remainder``); ``shape=None`` is
    unknown rank.

    Args:
        shape: A tuple of ints or ``None``s, or ``None`` for unknown rank.
        dtype: Anything ``numpy.dtype`` accepts. Defaults to float32.
        name: An optional name, kept for TensorFlow compatibility.

    Examples:
        >>> TensorSpec((None, 3), "int64")
        TensorSpec(shape=(None, 3), dtype=int64, name=None)
    """

    __slots__ = ("dtype", "name", "shape")

    def __init__(
        self, shape: Sequence[int | None] | None, dtype: Any = np.float32, name: str | None = None
    ):
        self.shape = None if shape is None else tuple(None if d is None else int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.name = name

    @classmethod
    def from_value(cls, value: Any) -> TensorSpec:
        """The spec of an array value."""
        a = np.asarray(value)
        return cls(a.shape, a.dtype)

    def is_compatible_with(self, value: Any) -> bool:
        """Whether ``value`` (an array or a spec) has a compatible shape and the same dtype."""
        other = value if isinstance(value, TensorSpec) else TensorSpec.from_value(value)
        return other.dtype == self.dtype and shapes_compatible(self.shape, other.shape)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TensorSpec)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.name == other.name
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name}, name={self.name!r})"


def shapes_compatible(a: tuple | None, b: tuple | None) -> bool:
    """Whether two shapes (with ``None`` wildcards) can describe the same array."""
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def spec_of(element: Any) -> Any:
    """The nest of ``TensorSpec`` (``SparseTensorSpec``, ``RaggedTensorSpec``) describing one
    element (``NoneTensorSpec`` for ``None``)."""
    if _is_none(element):
        return NoneTensorSpec()
    return public_spec(map_structure(leaf_spec, element))


def leaf_spec(value: Any) -> Any:
    """The spec of one leaf: ``TensorSpec``, or the spec of a sparse or ragged value."""
    if isinstance(value, SparseTensor):  # its dense shape is data, as TF's parse ops say
        return SparseTensorSpec((None,) * len(value.dense_shape), value.dtype)
    if isinstance(value, RaggedTensor):
        return RaggedTensorSpec.from_value(value)
    return TensorSpec.from_value(value)


def with_leading_none(spec: Any) -> Any:
    """``spec`` with its first dimension unknown (a batch dimension that varies)."""
    if spec.shape is None or not spec.shape:
        return spec
    shape = (None, *spec.shape[1:])
    if isinstance(spec, RaggedTensorSpec):
        return RaggedTensorSpec(shape, spec.dtype, spec.ragged_rank, spec.row_splits_dtype)
    return type(spec)(shape, spec.dtype)


def call_unpacked(fn: Callable[..., Any], element: Any) -> Any:
    """Call ``fn`` as tf.data does: a tuple element is unpacked into positional arguments.

    Raises:
      DatasetFunctionError: ``fn`` raised ``StopIteration``, which would end the
        dataset silently (tf.data raises ``InvalidArgumentError``).
    """
    return call_function(_call_unpacked, fn, element, name_of=fn)


def call_function(fn: Callable[..., Any], *args: Any, name_of: Any = None) -> Any:
    """``fn(*args)`` for a user function of a transformation (``scan_func``, ``reduce_func``
    ...), with ``StopIteration`` made a ``DatasetFunctionError`` (see ``call_unpacked``)."""
    try:
        return fn(*args)
    except StopIteration as e:
        named = fn if name_of is None else name_of
        name = getattr(named, "__name__", type(named).__name__)
        raise DatasetFunctionError(
            f"The dataset function {name} raised StopIteration ({e!r}); tf.data raises an "
            "error there too rather than end the dataset. Return a value for every element, "
            "or end the input with take/take_while/filter."
        ) from e


def _call_unpacked(fn: Callable[..., Any], element: Any) -> Any:
    if isinstance(element, tuple) and not _is_namedtuple(element):
        try:
            return fn(*element)
        except TypeError:
            if _accepts(fn, len(element)):
                raise
            name = getattr(fn, "__name__", type(fn).__name__)
            raise StructureMismatchError(
                f"The elements are tuples of {len(element)} components, which are passed to "
                f"the function as {len(element)} separate arguments (as tf.data does), but "
                f"{name}{_signature(fn)} does not take {len(element)} positional arguments. "
                f"Write it as `lambda {', '.join(f'x{i}' for i in range(len(element)))}: ...` "
                "(or `lambda *xs: ...`)."
            ) from None
    return fn(element)


def _accepts(fn: Callable[..., Any], n: int) -> bool:
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): cannot tell
        return True
    return True


def _signature(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


def encode_treedef(tdef: Any) -> Any:
    """A JSON-able form of a tree definition (namedtuples become tuples)."""
    if tdef is LEAF:
        return None
    if tdef is NONE:
        return {"none": True}
    if tdef[0] is dict:
        return {"dict": list(tdef[1]), "children": [encode_treedef(t) for t in tdef[2]]}
    return {"tuple": [encode_treedef(t) for t in tdef[1]]}


def decode_treedef(obj: Any) -> Any:
    """Inverse of ``encode_treedef``."""
    if obj is None:
        return LEAF
    if "none" in obj:
        return NONE
    if "dict" in obj:
        return (dict, tuple(obj["dict"]), tuple(decode_treedef(t) for t in obj["children"]))
    return (tuple, tuple(decode_treedef(t) for t in obj["tuple"]))
