"""``Strategy``: the one mesh runtime behind every strategy kind (DESIGN.md, decision 4).

A strategy owns a ``jax.sharding.Mesh`` with one axis, ``'replica'``, over its
devices. Kinds differ in how they find devices and processes, not in how they
compute: ``run`` compiles ``fn`` under ``jax.shard_map`` over that axis;
``reduce``/``gather`` are compiled reductions over per-replica values.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..errors import (
    BatchNotDivisibleError,
    DistributeArgumentError,
    DistributedInputError,
    DistributedValueError,
    RunArgumentError,
)
from . import _input
from ._context import enter_scope
from ._input import DistributedDataset, InputContext, InputOptions
from ._placement import host_arrays, put
from ._reduce_op import ReduceOp
from ._replica_context import ReplicaContext
from ._run import RunCache, is_traced
from ._sharding import VariableLayout, variable_mesh
from ._values import Mirrored, PerReplica, check_replica_axis

REPLICA_AXIS = "replica"


@dataclasses.dataclass(frozen=True)
class ValueContext:
    """What ``value_fn`` of ``experimental_distribute_values_from_function`` is told.

    Attributes:
      replica_id_in_sync_group: the replica the value is for.
      num_replicas_in_sync: the number of replicas.
    """

    replica_id_in_sync_group: int = 0
    num_replicas_in_sync: int = 1


class Strategy:
    """Synchronous data parallelism over a mesh of devices (``tf.distribute.Strategy``).

    Use a kind: ``OneDeviceStrategy``, ``MirroredStrategy``. Every replica holds
    the whole model; each processes a slice of the global batch; gradients are
    summed over replicas inside the compiled step.

    Args:
      devices: the devices, one replica each, in replica order.
      shard_parameters: keep variables (parameters, optimizer state) split over
        the replicas (ZeRO-3 / FSDP, ``phalanx.distribute._sharding``) instead of
        whole on each; phalanx only.
    """

    def __init__(self, devices: Sequence[jax.Device], *, shard_parameters: bool = False):
        if not isinstance(shard_parameters, bool):
            raise TypeError(
                f"shard_parameters must be True or False, got {shard_parameters!r} of type "
                f"{type(shard_parameters).__name__}."
            )
        self._devices = tuple(devices)
        self._axis_name = REPLICA_AXIS
        self._runs = RunCache(self)
        self._use_mesh(Mesh(np.array(self._devices), (REPLICA_AXIS,), axis_types=(AxisType.Auto,)))
        self._layout = (
            VariableLayout(variable_mesh(self._devices), self._replicated)
            if shard_parameters
            else None
        )

    def _use_mesh(self, mesh: Mesh) -> None:
        """Makes ``mesh`` (an axis ``'replica'``, and others for ``ModelParallelStrategy``)
        the mesh batches are split over and compiled steps run on."""
        self._mesh = mesh
        self._batch_sharding = NamedSharding(mesh, P(REPLICA_AXIS))
        self._stacked_sharding = NamedSharding(mesh, P(None, REPLICA_AXIS))
        self._replicated = NamedSharding(mesh, P())
        processes = sorted({d.process_index for d in self._devices})
        self._num_processes = len(processes)
        me = jax.process_index()
        self._process_id = processes.index(me) if me in processes else 0
        self._local_replicas = sum(
            any(d.process_index == me for d in group) for group in self._replica_devices()
        )

    def _replica_devices(self) -> list[tuple[jax.Device, ...]]:
        """The devices of each replica, in replica order (one each, but with a model axis)."""
        grid = np.moveaxis(self._mesh.devices, self._mesh.axis_names.index(REPLICA_AXIS), 0)
        return [tuple(row) for row in grid.reshape(grid.shape[0], -1)]

    # -- what the strategy is ------------------------------------------------

    @property
    def devices(self) -> tuple[jax.Device, ...]:
        """The devices, one per replica, in replica order."""
        return self._devices

    @property
    def mesh(self) -> Mesh:
        """The ``jax.sharding.Mesh`` of the replicas, with the one axis ``'replica'``."""
        return self._mesh

    @property
    def num_replicas_in_sync(self) -> int:
        """The number of replicas that compute each step together."""
        return self._mesh.shape[REPLICA_AXIS]

    @property
    def batch_sharding(self) -> NamedSharding:
        """The sharding of a global batch: split on axis 0 over the replicas."""
        return self._batch_sharding

    @property
    def replicated_sharding(self) -> NamedSharding:
        """The sharding of a value every replica holds whole."""
        return self._replicated

    @property
    def shard_parameters(self) -> bool:
        """Whether variables are kept split over the replicas (ZeRO-3 / FSDP); phalanx only."""
        return self._layout is not None

    def variable_sharding(self, x: Any) -> NamedSharding:
        """The sharding this strategy keeps a variable like ``x`` with (phalanx only).

        ``replicated_sharding`` unless ``shard_parameters``; then ``x`` (an array or
        ``jax.ShapeDtypeStruct``) is split on its largest axis that divides by the
        replicas, or kept whole when small or not divisible
        (``phalanx.distribute._sharding.shard_axis``).
        """
        return self._replicated if self._layout is None else self._layout.sharding(x)

    @property
    def layout_map(self) -> Any:
        """The ``LayoutMap`` variables are placed by (``ModelParallelStrategy``), else None."""
        return None

    @property
    def _splits_variables(self) -> bool:
        """Whether variables are kept otherwise than whole on every replica."""
        return self._layout is not None

    def _variable_shardings(self, tree: Any) -> Any:
        """The sharding of each array of ``tree`` (model variables) as this strategy keeps it."""
        return jax.tree.map(self.variable_sharding, tree)

    def _is_variable(self, x: Any) -> bool:
        """Whether ``x`` is an array split as a variable (passed to compiled programs as is)."""
        return self._layout is not None and self._layout.is_sharded(x)

    def __repr__(self) -> str:
        devs = self._devices
        where = str(devs[0]) if len(devs) == 1 else f"{devs[0]}..{devs[-1]}"
        return f"{type(self).__name__}({len(devs)} device(s): {where})"

    # -- contexts --------------------------------------------------------------

    def scope(self) -> contextlib.AbstractContextManager[Strategy]:
        """Makes this strategy current (cross-replica context) inside a ``with`` block.

        Examples:
          >>> import phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> with s.scope():
          ...     phalanx.get_strategy() is s
          True
        """
        return enter_scope(self)

    def _default_replica_context(self) -> ReplicaContext:
        return ReplicaContext(self, None)

    # -- placing values ----------------------------------------------------------

    def _batch_axis(self, x: Any) -> int | None:
        """The axis of ``x`` split over the replicas, or None if ``x`` is not split."""
        if not isinstance(x, jax.Array) or x.ndim == 0 or is_traced(x):
            return None
        sharding = x.sharding
        if isinstance(sharding, NamedSharding):
            # Named: by its spec, so that on one replica (where P() and P('replica')
            # are the same layout) a replicated value still counts as replicated.
            if sharding.mesh != self._mesh:
                return None
            axes = [i for i, name in enumerate(sharding.spec) if name == self._axis_name]
            return axes[0] if len(axes) == 1 else None
        if self.num_replicas_in_sync > 1 and sharding.is_equivalent_to(
            self._batch_sharding, x.ndim
        ):
            return 0
        return None

    def _is_batch_sharded(self, x: Any) -> bool:
        return self._batch_axis(x) == 0

    def _place(self, x: Any, kind: str) -> jax.Array:
        if kind == "batch" or is_traced(x):  # already split, or placed by the compiled program
            return x
        if self._is_variable(x):
            return x  # a split variable: the compiled program gathers it (P())
        target = self._replicated if kind == "replicated" else self._batch_sharding
        # Exactly this sharding: an equivalent one (a single-device array on a one-device
        # mesh) would give the compiled programs a different input type, and a retrace.
        if isinstance(x, jax.Array) and x.sharding == target:
            return x
        return put(x, target)

    def shard_batch(self, batch: Any) -> Any:
        """Splits a global batch over the replicas: each leaf sharded on axis 0.

        The result is what iterating a distributed dataset yields, and what
        ``run`` splits into per-replica slices. With several processes, every
        process passes the same global batch and places the rows its devices hold.

        Inside a compiled function (``jax.jit``, ``lax.scan``), where arrays carry
        no sharding ``run`` can read, each leaf comes back as a ``PerReplica`` of
        its replicas' rows (``[N, batch/N, ...]``) in the batch's structure, so
        ``images, labels = strategy.shard_batch((images, labels))`` unpacks there
        as outside: pass them to ``run`` for the same split as outside.

        Args:
          batch: a pytree of arrays whose leading axis is the global batch.

        Returns:
          The pytree with each leaf a ``jax.Array`` sharded ``P('replica')``.

        Raises:
          BatchNotDivisibleError: a leading axis does not divide by the replicas.
        """
        n = self.num_replicas_in_sync

        def shard(x):
            x = x if isinstance(x, jax.Array) else np.asarray(x)
            if x.ndim == 0:
                raise BatchNotDivisibleError(
                    f"shard_batch splits arrays on their leading (batch) axis; got a scalar. "
                    f"Pass arrays of shape [global_batch, ...] for the {n} replicas of {self!r}."
                )
            if x.shape[0] % n:
                raise BatchNotDivisibleError.of(
                    x.shape[0], n, hint="Or batch the dataset with drop_remainder=True."
                )
            if is_traced(x):
                return x.reshape((n, x.shape[0] // n, *x.shape[1:]))
            if isinstance(x, jax.Array) and self._batch_axis(x) == 0:
                return x
            return put(x, self._batch_sharding)  # the same global batch on every process

        leaves = jax.tree.leaves(batch)
        rows = _input.batch_rows(batch, what="shard_batch's batch")
        if rows is not None:
            self._check_batch(rows)
        if any(is_traced(x) for x in leaves):
            return jax.tree.map(lambda x: PerReplica._of(shard(x)), batch)
        return jax.tree.map(shard, batch)

    def _check_batch(self, global_batch: int) -> None:
        """A hook for kinds with advice about batch sizes (TPUStrategy)."""

    def _global_batch(self, local: Any, *, stacked: bool = False, copy: bool = True) -> Any:
        """Builds global batch arrays from this process's share (its rows of each batch).

        With ``stacked``, the leaves are ``[steps, batch, ...]`` and split on axis 1.
        ``copy=False`` lends numpy buffers that stay unwritten until the executions
        reading them finish (``_placement.put``).
        """
        leaves = jax.tree.leaves(local)
        if leaves:
            self._check_batch(int(np.shape(leaves[0])[int(stacked)]) * self._num_processes)
        sharding = self._stacked_sharding if stacked else self._batch_sharding
        local = host_arrays(local, copy=copy)
        if self._num_processes == 1:
            return jax.device_put(local, sharding)
        return jax.tree.map(lambda a: jax.make_array_from_process_local_data(sharding, a), local)

    # -- distributed input -------------------------------------------------------

    def experimental_distribute_dataset(
        self, dataset: Any, options: InputOptions | None = None
    ) -> DistributedDataset:
        """Distributes a dataset of global batches over the replicas.

        Iterating the result yields each global batch as ``jax.Array`` s sharded
        on the batch axis (each replica holds its slice), ready for ``run``.
        With several processes, each reads only its share (auto-shard policy).

        Args:
          dataset: a ``phalanx.data.Dataset`` (or iterable) of global batches.
          options: ``InputOptions``.

        Raises:
          BatchNotDivisibleError: a batch does not split over the replicas.

        Examples:
          >>> import numpy as np, phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> ds = phalanx.data.Dataset.from_tensor_slices(np.arange(4.0)).batch(2)
          >>> [b.shape for b in s.experimental_distribute_dataset(ds)]
          [(2,), (2,)]
        """
        if isinstance(dataset, str | bytes) or not hasattr(dataset, "__iter__"):
            raise DistributedInputError(
                f"experimental_distribute_dataset expects a phalanx.data.Dataset (or an "
                f"iterable) of global batches, got {dataset!r} ({type(dataset).__name__}). "
                "Build one with phalanx.data.Dataset.from_tensor_slices((x, y)).batch(64)."
            )
        return _input.distribute_dataset(self, dataset, options)

    distribute_dataset = experimental_distribute_dataset

    def distribute_datasets_from_function(
        self, dataset_fn: Callable[[InputContext], Any], options: InputOptions | None = None
    ) -> DistributedDataset:
        """Calls ``dataset_fn(InputContext)`` once per input pipeline (process).

        As in TensorFlow, ``dataset_fn`` returns this process's dataset batched
        with the *per-replica* batch size (``ctx.get_per_replica_batch_size
        (global_batch)``), usually sharded with ``dataset.shard(ctx.num_input_pipelines,
        ctx.input_pipeline_id)``. Each step, each of the process's replicas takes
        the next batch, so the global batch is the per-replica batch times
        ``num_replicas_in_sync``; iterating yields it as one global array split
        over the replicas (replica ``i`` holds its own batch), as
        ``experimental_distribute_dataset`` does.

        Examples:
          >>> import numpy as np, phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> fn = lambda ctx: phalanx.data.Dataset.range(8).batch(ctx.get_per_replica_batch_size(4))
          >>> [b.shape for b in s.distribute_datasets_from_function(fn)]
          [(4,), (4,)]
        """
        return _input.distribute_datasets_from_function(self, dataset_fn, options)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def replicate(self, tree: Any) -> Any:
        """Places every leaf of ``tree`` whole on every replica (``P()``)."""
        return jax.tree.map(lambda x: self._place(x, "replicated"), tree)

    def distribute_variables(self, tree: Any) -> Any:
        """Places model variables (parameters, optimizer state) as this strategy keeps them.

        Without ``shard_parameters`` this is ``replicate``. With it, each leaf is
        split over the replicas by ``variable_sharding`` (small or indivisible
        leaves stay whole). A ``ModelParallelStrategy`` places each leaf by its
        path and the layout map (``phalanx.distribute._layout``). ``run`` gives
        ``fn`` the whole value of any of them, so a custom loop reads the same on
        every strategy; phalanx only.

        Args:
          tree: a pytree of arrays (numpy or ``jax.Array``), the same on every process.

        Returns:
          The pytree of placed ``jax.Array`` s.

        Examples:
          >>> import numpy as np, phalanx
          >>> s = phalanx.MirroredStrategy(shard_parameters=True)
          >>> w = s.distribute_variables(np.zeros((64, 32), np.float32))
          >>> w.shape, w.addressable_shards[0].data.shape[0] == 64 // s.num_replicas_in_sync
          ((64, 32), True)
        """
        if not self._splits_variables:
            return self.replicate(tree)

        def place(x, target):
            if isinstance(x, jax.Array) and not is_traced(x) and x.sharding == target:
                return x
            if is_traced(x):
                return jax.lax.with_sharding_constraint(x, target)
            return put(x, target)

        return jax.tree.map(place, tree, self._variable_shardings(tree))

    def _keep_variables(self, outs: list, varying: list[bool], paths: list[str]) -> list:
        """``run``'s outputs that do not vary over replicas, constrained to the variable
        layout (inside the jitted program) when ``shard_parameters``: a custom loop's
        updated parameters stay split between steps. ``paths``: each output's path."""
        del paths  # the layout of shard_parameters depends on the shape alone
        if self._layout is None:
            return outs
        return [
            o if vary else jax.lax.with_sharding_constraint(o, self._layout.sharding(o))
            for o, vary in zip(outs, varying, strict=True)
        ]

    # -- computing -----------------------------------------------------------------

    def run(self, fn: Callable, args: tuple = (), kwargs: dict | None = None) -> Any:
        """Runs ``fn`` once per replica, as one compiled program.

        See ``phalanx.distribute._run`` for how each argument is given to the
        replicas. ``fn`` must be traceable by ``jax.jit``.

        Args:
          fn: the per-replica computation. Inside it, ``get_replica_context()``
            gives the replica's id and collectives.
          args: positional arguments: pytrees of arrays, ``PerReplica``/``Mirrored``
            values, distributed batches, Python scalars.
          kwargs: keyword arguments, likewise.

        Returns:
          ``fn``'s output pytree: ``PerReplica`` leaves where the value varies over
          replicas, replicated ``jax.Array`` s where it does not.

        Raises:
          RunCompilationError: ``fn`` could not be traced (Python control flow on
            array values, conversion of traced arrays to numpy, ...).

        Examples:
          >>> import jax.numpy as jnp
          >>> import phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> out = s.run(lambda x: x * 2, args=(jnp.arange(3),))
          >>> s.experimental_local_results(out)[0].tolist()
          [0, 2, 4]
        """
        if not callable(fn):
            raise RunArgumentError(f"strategy.run expects a callable fn, got {type(fn).__name__}.")
        if not isinstance(args, tuple | list):
            raise RunArgumentError(
                f"strategy.run takes args as a tuple, got {type(args).__name__}; "
                "write args=(x,) for a single argument."
            )
        if kwargs is not None and not isinstance(kwargs, dict):
            raise RunArgumentError(
                f"strategy.run takes kwargs as a dict, got {type(kwargs).__name__}."
            )
        return self._runs.run(fn, tuple(args), dict(kwargs or {}))

    def _stacked(self, value: Any):
        """Returns (pytree of [N, ...] arrays, or None if not distributed; kind)."""
        n = self.num_replicas_in_sync
        if isinstance(value, PerReplica):
            for leaf in jax.tree.leaves(value.values):
                check_replica_axis(leaf, n)
            return value.values, "per_replica"
        if isinstance(value, Mirrored):
            return value.values, "mirrored"
        leaves = jax.tree.leaves(value)
        if leaves and all(self._is_batch_sharded(x) for x in leaves) and n > 1:
            return (
                jax.tree.map(lambda x: x.reshape((n, x.shape[0] // n, *x.shape[1:])), value),
                "per_replica",
            )
        if leaves and all(self._is_replicated(x) for x in leaves):
            return value, "mirrored"  # what run returns for a value that does not vary
        return value, "plain"

    def _is_replicated(self, x: Any) -> bool:
        """Whether ``x`` is an array held whole by every replica of this strategy's mesh."""
        if not isinstance(x, jax.Array):
            return False
        if is_traced(x):  # inside a compiled function: on the devices, like run's outputs
            return True
        sharding = x.sharding
        if isinstance(sharding, NamedSharding):
            return sharding.mesh == self._mesh and all(a is None for a in sharding.spec)
        return sharding.is_equivalent_to(self._replicated, x.ndim)

    def _check_axis(self, values: Any, axis: int | None, what: str, offset: int) -> None:
        if axis is None:
            return
        if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
            raise DistributeArgumentError(
                f"{what}: axis must be an int (an axis of each per-replica value) or None, got "
                f"{axis!r} ({type(axis).__name__}). Pass e.g. axis=0 for the batch axis."
            )
        for x in jax.tree.leaves(values):
            rank = np.ndim(x) - offset
            if not -rank <= axis < rank:
                shape = tuple(np.shape(x))[offset:]
                raise DistributedValueError(
                    f"{what}: axis={axis} does not exist in a per-replica value of shape "
                    f"{shape} (rank {rank}). Use an axis in {-rank}..{rank - 1}, or axis=None "
                    "to combine the replicas element by element."
                )

    def reduce(self, reduce_op: ReduceOp | str, value: Any, axis: int | None = None) -> Any:
        """Combines a per-replica value across replicas (and along ``axis``).

        With ``axis=None`` the replicas' values are summed or averaged element by
        element. With an ``axis``, each replica's value is also reduced along
        that axis; ``MEAN`` then averages over every element of every replica
        along it (the global-batch mean), as TensorFlow.

        Args:
          reduce_op: ``ReduceOp.SUM``/``MEAN`` or ``"SUM"``/``"MEAN"``.
          value: ``PerReplica`` (from ``run``), a distributed batch, ``Mirrored``
            or a replicated array (``run``'s output that does not vary: every
            replica's copy counts, so ``SUM`` gives ``num_replicas_in_sync`` times
            it, as TensorFlow), or a plain value (numpy, Python).
          axis: an axis of each per-replica value, or None.

        Returns:
          A replicated ``jax.Array`` pytree.

        Raises:
          DistributedValueError: unknown op, missing axis, or SUM of a plain value
            (not on this strategy's devices) over more than one replica.
          ValueError: a ``PerReplica`` without one row per replica.

        Examples:
          >>> import numpy as np
          >>> import phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> float(s.reduce("SUM", phalanx.PerReplica(np.array([[1.0, 2.0]])), axis=0))
          3.0
        """
        op = ReduceOp.from_any(reduce_op)
        if _holds_distributed(value):  # {"loss": PerReplica, ...}: each one, as TensorFlow
            return _map_distributed(lambda v: self.reduce(op, v, axis), value)
        stacked, kind = self._stacked(value)
        n = self.num_replicas_in_sync
        if kind == "plain":
            self._check_axis(stacked, axis, "strategy.reduce", 0)
            if op is ReduceOp.SUM and n > 1:
                raise DistributedValueError(
                    f"strategy.reduce(SUM, ...) got a value that is not per-replica "
                    f"({type(value).__name__}, not on this strategy's devices): which of "
                    f"{n} replicas holds it is unknown, so it has no well-defined sum "
                    "(TensorFlow refuses a non-distributed value too). Reduce what "
                    "strategy.run returned, wrap the value in Mirrored to count each "
                    "replica's copy, or use MEAN."
                )
            return jax.tree.map(lambda x: _reduce_plain(jnp.asarray(x), op, axis), stacked)
        if kind == "mirrored":
            self._check_axis(stacked, axis, "strategy.reduce", 0)
            scale = n if op is ReduceOp.SUM else 1
            return jax.tree.map(lambda x: _reduce_plain(jnp.asarray(x), op, axis) * scale, stacked)
        self._check_axis(stacked, axis, "strategy.reduce", 1)
        return jax.tree.map(functools.partial(self._reduce_stacked, op=op, axis=axis), stacked)

    def _reduce_stacked(self, x, *, op, axis):
        axes = (0,) if axis is None else (0, 1 + axis % (x.ndim - 1))
        return _jit_reduce(self._replicated)(x, op, axes)

    def gather(self, value: Any, axis: int) -> Any:
        """Concatenates the replicas' values along ``axis``, in replica order.

        Args:
          value: ``PerReplica``, a distributed batch, ``Mirrored`` or a plain value.
          axis: the axis of each per-replica value to concatenate along.

        Returns:
          A replicated ``jax.Array`` pytree (for a distributed batch and
          ``axis=0``, the global batch).

        Raises:
          DistributedValueError: ``axis`` does not exist in the value.
        """
        if _holds_distributed(value):
            return _map_distributed(lambda v: self.gather(v, axis), value)
        stacked, kind = self._stacked(value)
        n = self.num_replicas_in_sync
        if kind in ("plain", "mirrored"):
            self._check_axis(stacked, axis, "strategy.gather", 0)
            return jax.tree.map(lambda x: jnp.concatenate([jnp.asarray(x)] * n, axis=axis), stacked)
        self._check_axis(stacked, axis, "strategy.gather", 1)
        return jax.tree.map(
            lambda x: _jit_gather(self._replicated)(x, axis % (x.ndim - 1)), stacked
        )

    def experimental_local_results(self, value: Any) -> tuple:
        """Returns this process's replicas' parts of ``value``, in replica order.

        A ``PerReplica`` gives one pytree per local replica; a distributed batch
        its per-replica slices; a replicated value or ``Mirrored`` one copy per
        local replica; anything else ``(value,)``. A container of such values
        gives one container per local replica, as TensorFlow.
        """
        if _holds_distributed(value):
            parts = _map_distributed(lambda v: _Parts(self.experimental_local_results(v)), value)
            count = max(len(p.values) for p in jax.tree.leaves(parts, is_leaf=_is_parts))
            return tuple(
                jax.tree.map(lambda p, i=i: p.values[i % len(p.values)], parts, is_leaf=_is_parts)
                for i in range(count)
            )
        stacked, kind = self._stacked(value)
        if kind == "plain":
            return (value,)
        me = jax.process_index()
        local = [
            i
            for i, group in enumerate(self._replica_devices())
            if any(d.process_index == me for d in group)
        ]
        if kind == "mirrored":
            return tuple(stacked for _ in local)
        return tuple(jax.tree.map(lambda x, i=i: x[i], stacked) for i in local)

    def experimental_distribute_values_from_function(
        self, value_fn: Callable[[ValueContext], Any]
    ) -> PerReplica:
        """Builds a ``PerReplica`` by calling ``value_fn(ValueContext)`` for each replica.

        Every replica's value must have the same structure and shapes (one
        compiled program serves all replicas).

        Raises:
          DistributedValueError: the replicas' values differ in structure or shape.

        Examples:
          >>> import phalanx
          >>> s = phalanx.OneDeviceStrategy()
          >>> v = s.experimental_distribute_values_from_function(
          ...     lambda ctx: ctx.replica_id_in_sync_group * 10)
          >>> s.experimental_local_results(v)[0].tolist()
          0
        """
        n = self.num_replicas_in_sync
        values = [value_fn(ValueContext(i, n)) for i in range(n)]
        structures = {jax.tree.structure(v) for v in values}
        shapes = {tuple(np.shape(x) for x in jax.tree.leaves(v)) for v in values}
        if len(structures) > 1 or len(shapes) > 1:
            raise DistributedValueError(
                "experimental_distribute_values_from_function needs every replica's value to "
                f"have one structure and one shape (one compiled program runs on all "
                f"replicas); got structures {sorted(map(str, structures))} and shapes "
                f"{sorted(shapes)}. Pad the values to one shape."
            )
        stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *values)
        return PerReplica(jax.tree.map(lambda x: self._place(x, "per_replica"), stacked))

    distribute_values_from_function = experimental_distribute_values_from_function


def _reduce_plain(x: jax.Array, op: ReduceOp, axis: int | None) -> jax.Array:
    if axis is None:
        return x
    return jnp.sum(x, axis=axis) if op is ReduceOp.SUM else jnp.mean(x, axis=axis)


@functools.cache
def _jit_reduce(out_sharding: NamedSharding):
    def reduce(x, op, axes):
        total = jnp.sum(x, axis=axes)
        if op is ReduceOp.MEAN:
            count = int(np.prod([x.shape[a] for a in axes]))
            total = total / count
        return total

    return jax.jit(reduce, static_argnums=(1, 2), out_shardings=out_sharding)


def _is_distributed(x: Any) -> bool:
    return isinstance(x, PerReplica | Mirrored)


def _holds_distributed(value: Any) -> bool:
    """Whether ``value`` is a container (dict, tuple ...) with a ``PerReplica``/``Mirrored``."""
    if _is_distributed(value):
        return False
    return any(_is_distributed(x) for x in jax.tree.leaves(value, is_leaf=_is_distributed))


def _map_distributed(fn: Callable[[Any], Any], value: Any) -> Any:
    """``fn`` on each distributed value of a container, and on each other leaf."""
    return jax.tree.map(fn, value, is_leaf=_is_distributed)


class _Parts:
    """One distributed value's local results, a leaf while a container's are regrouped."""

    def __init__(self, values: tuple):
        self.values = values


def _is_parts(x: Any) -> bool:
    return isinstance(x, _Parts)


@functools.cache
def _jit_gather(out_sharding: NamedSharding):
    def gather(x, axis):
        moved = jnp.moveaxis(x, 0, axis)  # [..., N, d_axis, ...]
        shape = (*moved.shape[:axis], moved.shape[axis] * moved.shape[axis + 1])
        return moved.reshape(shape + moved.shape[axis + 2 :])

    return jax.jit(gather, static_argnums=(1,), out_shardings=out_sharding)
