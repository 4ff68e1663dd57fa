"""``strategy.run``: one compiled program that runs ``fn`` once per replica.

``fn`` is traced under ``jax.shard_map`` over the strategy's replica axis and
compiled with ``jax.jit``. Arguments are classified leaf by leaf:

======================================  =========================  ==================
argument leaf                           each replica receives      in_spec
======================================  =========================  ==================
inside ``PerReplica`` (``[N, ...]``)    its row ``[...]``          ``P('replica')``
``jax.Array`` split over the replicas   its slice of that axis     ``P('replica')``,
on one axis of this mesh (a                                        or ``P(None,
distributed batch, ``shard_batch``;                                'replica')`` ...
stacked batches split on axis 1)
any other array, or inside ``Mirrored`` the whole value            ``P()``
Python scalar, string, None             the value, as a constant   static
======================================  =========================  ==================

Outputs are classified by JAX's varying-manual-axes type: a value that varies
over the replicas comes back as ``PerReplica`` (leaves ``[N, ...]``); a value
that does not (an ``all_reduce`` result, or parameters updated with gradients of
replicated parameters) comes back as a replicated ``jax.Array``. Deciding that
takes one abstract trace (``jax.eval_shape``) before the first compile of each
signature; programs are cached by ``fn``, argument structure, shapes, dtypes,
kinds and static values, so the second call with the same signature neither
traces nor compiles.

**Gradients of replicated arguments are summed over the replicas**, inside ``fn``
and on both paths below: ``check_vma=True`` types a replicated input as the same
on every replica, and the transpose of its use by a per-replica loss is a
``psum``. That sum is what TensorFlow's optimizer applies after its own
all-reduce (Keras 3's ``apply_gradients`` sums under a strategy), so a step gives
TF's weights with or without an explicit ``all_reduce`` of its gradients
(``tests/distribute/test_run_gradient_semantics.py``). Typing replicated inputs
as varying instead (``lax.pcast(..., to="varying")``, TF's per-replica
gradients) makes every value computed from them varying, so updated parameters
would come back as ``PerReplica`` (and break a ``fori_loop`` carry) even after an
``all_reduce``: JAX has no cast from varying back to replicated short of a
collective.

**At most ``MAX_IN_FLIGHT`` executions in flight.** ``run`` returns as soon as
step ``k`` is dispatched, after waiting for step ``k - MAX_IN_FLIGHT`` to finish
(as ``fit`` does): XLA:CPU's collectives over simulated devices deadlock, then
abort the process, when hundreds of executions are queued without a wait
(DESIGN.md), and a custom loop that never reads a result would queue them all.
Waiting on a step two behind costs nothing on a busy device.

**Inside a compiled function** (``jax.jit``, ``lax.scan``, ``lax.fori_loop``: the
seeds' ``tf.function`` with a ``tf.range`` loop of steps), arguments are
tracers, which carry no sharding ``run`` could read. There, as for plain
tensors in ``tf.function``, an array is given whole to every replica, unless
it is a ``PerReplica``; ``strategy.shard_batch(batch)`` inside the compiled
function returns the batch with each array a ``PerReplica`` of its replicas' rows (each
replica gets ``[batch/N, ...]``, as outside). Outputs are classified as
outside: ``PerReplica`` (of tracers) where they vary, plain tracers where not.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from .. import _compilation_cache
from ..errors import RunArgumentError, RunCompilationError
from ._context import enter_replica_context
from ._layout import key_path
from ._replica_context import ReplicaContext
from ._values import PerReplica, check_replica_axis, is_distributed_value

if TYPE_CHECKING:
    from ._strategy import Strategy

_STATIC_TYPES = (bool, int, float, complex, str, bytes, type(None))
_TRACE_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.UnexpectedTracerError,
)
_CACHE_SIZE = 128
MAX_IN_FLIGHT = 2

PER_REPLICA, BATCH, REPLICATED, STATIC = "per_replica", "batch", "replicated", "static"


@dataclasses.dataclass(frozen=True)
class _Leaf:
    kind: str
    signature: Any  # (shape, dtype) for arrays, the value for statics.
    axis: int = 0  # for BATCH: the axis split over the replicas


def is_varying(x: jax.Array, axis: str) -> bool:
    """Whether ``x`` (traced inside shard_map) differs over the mesh axis ``axis``."""
    aval = jax.typeof(x)
    mat = getattr(aval, "manual_axis_type", None)
    varying = getattr(mat, "varying", None)
    if varying is None:
        varying = getattr(aval, "vma", frozenset())
    return axis in varying


def check_vma(mesh) -> bool:
    """``jax.shard_map``'s ``check_vma`` for a program manual over ``'replica'`` of ``mesh``.

    True (JAX tracks which values vary over the replicas, and sums the gradients
    of replicated values) except on a mesh with other axes whose ``'replica'``
    axis has one device: there XLA rejects the all-reduce of a gradient split
    over a model axis ("Cross-partition allreduce must be in (partial) manual
    partitioning mode", jax 0.10), and with one replica there is nothing to sum.
    """
    return len(mesh.axis_names) == 1 or mesh.shape["replica"] > 1


def is_traced(x: Any) -> bool:
    """Whether ``x`` is an abstract value of a function being compiled (no data, no sharding)."""
    return isinstance(x, jax.core.Tracer)


def _classify(strategy: Strategy, leaf: Any, wrapper: type | None) -> _Leaf:
    if wrapper is None and isinstance(leaf, _STATIC_TYPES):
        return _Leaf(STATIC, (type(leaf), leaf))
    if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
        raise RunArgumentError(
            "strategy.run arguments must be arrays (jax or numpy), pytrees of them, "
            f"PerReplica/Mirrored values, or Python scalars; got {type(leaf).__name__}: "
            f"{leaf!r:.80}."
        )
    signature = (tuple(leaf.shape), np.dtype(leaf.dtype))
    if wrapper is PerReplica:
        check_replica_axis(leaf, strategy.num_replicas_in_sync)
        return _Leaf(PER_REPLICA, signature)
    axis = strategy._batch_axis(leaf) if wrapper is None and not is_traced(leaf) else None
    if axis is not None:
        return _Leaf(BATCH, signature, axis)
    return _Leaf(REPLICATED, signature)


def _output_array(fn: Callable, path: tuple, value: Any) -> jax.Array:
    """``fn``'s output leaf as an array, or ``RunCompilationError`` naming what it is instead."""
    dtype = getattr(value, "dtype", None)
    if isinstance(value, jax.Array | bool | int | float | complex) or (
        dtype is not None and np.dtype(dtype).kind in "biufc"
    ):
        return jnp.asarray(value)
    where = f"its output{jax.tree_util.keystr(path)}" if path else "its output"
    what = f"an array of dtype {dtype}" if dtype is not None else type(value).__name__
    raise RunCompilationError(
        f"strategy.run({_name(fn)}): fn must return arrays, Python numbers or None (or "
        f"tuples, lists and dicts of them); {where} is {what}: {value!r:.80}. Return the "
        "numbers it is made from, and build strings and other objects from run's result "
        "outside fn."
    )


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _flatten_args(strategy: Strategy, args: tuple, kwargs: dict):
    """Returns (top treedef, per top leaf: (wrapper, sub treedef, leaves), classified leaves)."""
    tops, top_tree = jax.tree.flatten((args, kwargs), is_leaf=is_distributed_value)
    groups, leaves, kinds = [], [], []
    for top in tops:
        wrapper = type(top) if is_distributed_value(top) else None
        inner = top.values if wrapper is not None else top
        sub_leaves, sub_tree = jax.tree.flatten(inner)
        groups.append((wrapper, sub_tree, len(sub_leaves)))
        for leaf in sub_leaves:
            kinds.append(_classify(strategy, leaf, wrapper))
            leaves.append(leaf)
    return top_tree, tuple(groups), leaves, tuple(kinds)


def _unflatten_args(top_tree, groups, leaves):
    it = iter(leaves)
    tops = []
    for _wrapper, sub_tree, count in groups:
        tops.append(jax.tree.unflatten(sub_tree, [next(it) for _ in range(count)]))
    return jax.tree.unflatten(top_tree, tops)


def _in_spec(leaf: _Leaf, axis: str) -> P:
    if leaf.kind == PER_REPLICA:
        return P(axis)
    if leaf.kind == BATCH:
        return P(*([None] * leaf.axis), axis)
    return P()


class _Program:
    """One compiled ``run`` signature: the jitted shard_map and how to wrap its outputs."""

    def __init__(self, strategy: Strategy, fn: Callable, top_tree, groups, kinds):
        self.strategy = strategy
        self.fn = fn
        self.top_tree, self.groups, self.kinds = top_tree, groups, kinds
        self.dynamic = [i for i, k in enumerate(kinds) if k.kind != STATIC]
        axis = strategy._axis_name
        in_specs = tuple(_in_spec(kinds[i], axis) for i in self.dynamic)
        self.varying = self._trace_varying(in_specs)
        out_specs = [P(axis) if v else P() for v in self.varying]
        mapped = jax.shard_map(
            self._body,
            mesh=strategy.mesh,
            in_specs=in_specs,
            out_specs=out_specs,
            axis_names=frozenset({axis}),  # other mesh axes (a model axis) stay XLA's
            check_vma=check_vma(strategy.mesh),
        )
        varying, paths = self.varying, self.out_paths
        _compilation_cache.enable_from_env()  # PHALANX_COMPILATION_CACHE, opt-in
        self.jitted = jax.jit(lambda *a: strategy._keep_variables(mapped(*a), varying, paths))

    def _body(self, *dynamic):
        outs = self._call_fn(*dynamic)
        return [v[None] if vary else v for v, vary in zip(outs, self.varying, strict=True)]

    def _call_fn(self, *dynamic) -> list[jax.Array]:
        leaves, it = [], iter(dynamic)
        for k in self.kinds:
            if k.kind == STATIC:
                leaves.append(k.signature[1])
            else:
                value = next(it)
                leaves.append(value[0] if k.kind == PER_REPLICA else value)
        args, kwargs = _unflatten_args(self.top_tree, self.groups, leaves)
        ctx = ReplicaContext(self.strategy, self.strategy._axis_name)
        with enter_replica_context(ctx):
            out = self.fn(*args, **kwargs)
        paths, self.out_tree = jax.tree_util.tree_flatten_with_path(out)
        self.out_paths = [key_path(path) for path, _ in paths]
        return [_output_array(self.fn, path, v) for path, v in paths]

    def _trace_varying(self, in_specs) -> list[bool]:
        recorded: list[bool] = []
        axis = self.strategy._axis_name

        def record(*dynamic):
            out = self._call_fn(*dynamic)
            recorded.extend(is_varying(v, axis) for v in out)
            return [v[None] for v in out]

        mapped = jax.shard_map(
            record,
            mesh=self.strategy.mesh,
            in_specs=in_specs,
            out_specs=P(axis),
            axis_names=frozenset({axis}),
            check_vma=check_vma(self.strategy.mesh),
        )
        avals = [self._abstract(i) for i in self.dynamic]
        jax.eval_shape(mapped, *avals)
        return recorded

    def _abstract(self, i: int) -> jax.ShapeDtypeStruct:
        shape, dtype = self.kinds[i].signature
        return jax.ShapeDtypeStruct(shape, dtype)

    def __call__(self, leaves: list) -> Any:
        placed = [
            leaves[i]
            if is_traced(leaves[i])
            else self.strategy._place(leaves[i], self.kinds[i].kind)
            for i in self.dynamic
        ]
        outs = self.jitted(*placed)
        wrapped = [PerReplica(o) if v else o for o, v in zip(outs, self.varying, strict=True)]
        return jax.tree.unflatten(self.out_tree, wrapped)


class RunCache:
    """Compiled ``run`` programs of one strategy, least recently used dropped first."""

    def __init__(self, strategy: Strategy):
        self._strategy = strategy
        self._programs: collections.OrderedDict[Any, _Program] = collections.OrderedDict()
        self._in_flight: collections.deque[jax.Array] = collections.deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._programs)

    def run(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        top_tree, groups, leaves, kinds = _flatten_args(self._strategy, args, kwargs)
        key = (fn, top_tree, groups, kinds)
        program = self._programs.get(key)
        if program is None:
            program = self._compile(fn, top_tree, groups, kinds)
            self._programs[key] = program
            if len(self._programs) > _CACHE_SIZE:
                self._programs.popitem(last=False)
        else:
            self._programs.move_to_end(key)
        out = program(leaves)
        self._bound_in_flight(out)
        return out

    def _bound_in_flight(self, out: Any) -> None:
        """Waits for the execution ``MAX_IN_FLIGHT`` before this one (module docstring)."""
        leaves = [x for x in jax.tree.leaves(out) if isinstance(x, jax.Array)]
        if not leaves or is_traced(leaves[0]):
            return
        with self._lock:
            self._in_flight.append(leaves[0])
            done = []
            while len(self._in_flight) > MAX_IN_FLIGHT:
                done.append(self._in_flight.popleft())
        for x in done:
            # A result the caller deleted already (x.delete()) has nothing to wait for.
            with contextlib.suppress(RuntimeError):
                x.block_until_ready()

    def _compile(self, fn, top_tree, groups, kinds) -> _Program:
        try:
            return _Program(self._strategy, fn, top_tree, groups, kinds)
        except _TRACE_ERRORS as e:
            name = _name(fn)
            raise RunCompilationError(
                f"strategy.run compiles `{name}` with jax.jit and runs it once per replica "
                f"under jax.shard_map, and tracing it failed: {type(e).__name__}: "
                f"{str(e).splitlines()[0]}\nInside `fn`, arrays are abstract tracers: use "
                "jax.lax.cond/jnp.where instead of Python `if` on array values, keep "
                "float()/int()/.item()/np.asarray() on arrays out of `fn`, and pass Python "
                "values that steer control flow as plain Python scalars (they are constants "
                "of the compiled program)."
            ) from e
