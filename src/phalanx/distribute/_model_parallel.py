"""``ModelParallelStrategy``: data parallel over one mesh axis, variables laid out by a map.

Keras 3's ``keras.distribution.ModelParallel(layout_map=..., batch_dim_name=...)``
on phalanx's strategy runtime. The strategy holds two meshes of the same
devices in the same grid (``phalanx.distribute._layout.DeviceMesh``):

- the *variable mesh*, with the ``DeviceMesh``'s own axis names, on which the
  variables are placed by the ``LayoutMap`` (``("data", "model")``);
- the *batch mesh* (``strategy.mesh``), where the batch axis is called
  ``'replica'``, the axis every phalanx program splits batches over and
  reduces over. Batches are split over it (``P('replica')``), whole along the
  other axes.

The names differ so that a variable split over the batch axis is never taken
for a batch (as ``shard_parameters``' ``'fsdp'`` mesh). Compiled steps run
``jax.shard_map`` over ``'replica'`` only: the other axes stay under XLA's
automatic partitioning (GSPMD), which splits each matmul by the variables'
layouts and inserts the collectives along the model axis.
"""

from __future__ import annotations

from typing import Any

import flax.nnx as nnx
import jax
from jax.sharding import NamedSharding

from ..errors import LayoutError
from ._layout import LayoutMap, tree_paths
from ._run import is_traced
from ._strategy import REPLICA_AXIS, Strategy


class ModelParallelStrategy(Strategy):
    """Splits the batch over one mesh axis and variables by a ``LayoutMap`` (phalanx only).

    Keras 3 calls it ``keras.distribution.ModelParallel``. Each group of
    devices along the batch axis is one replica: ``num_replicas_in_sync`` is the
    batch axis's size, the global batch divides by it, and ``fit``, ``run`` and
    the losses keep TensorFlow's semantics over those replicas. Within a
    replica, the devices of the other axes hold the pieces of the variables the
    layout map splits, and XLA computes with them (GSPMD).

    Args:
      layout_map: the ``LayoutMap`` (its ``DeviceMesh`` is the devices' grid).
      batch_dim_name: the mesh axis the batch is split over; None for the first.
      shard_parameters: refused (``LayoutError``): a spec that names the batch
        axis splits a variable over the replicas too (ZeRO-3 within the map).

    Raises:
      LayoutError: ``layout_map`` is not a ``LayoutMap``, ``batch_dim_name`` is not
        an axis of its mesh, an axis is named ``'replica'`` (phalanx's own name
        for the batch axis), or ``shard_parameters`` is given.

    Examples:
      >>> import jax, phalanx
      >>> from phalanx.distribute import DeviceMesh, LayoutMap
      >>> mesh = DeviceMesh((1, 1), ("data", "model"), devices=jax.devices()[:1])
      >>> layout_map = LayoutMap(mesh)
      >>> layout_map["dense.*kernel"] = (None, "model")
      >>> strategy = ModelParallelStrategy(layout_map, batch_dim_name="data")
      >>> strategy.num_replicas_in_sync
      1
    """

    def __init__(
        self,
        layout_map: LayoutMap,
        *,
        batch_dim_name: str | None = None,
        shard_parameters: bool = False,
    ):
        if shard_parameters is not False:
            raise LayoutError(
                "ModelParallelStrategy does not take shard_parameters: its layout map says how "
                "every variable is split. To split variables over the batch axis as well "
                "(ZeRO-3), name it in their specs, e.g. layout_map['dense.*kernel'] = "
                "('data', 'model'); or use MirroredStrategy(shard_parameters=True) without a "
                "model axis."
            )
        if not isinstance(layout_map, LayoutMap):
            raise LayoutError(
                "ModelParallelStrategy takes a phalanx.distribute.LayoutMap, got "
                f"{type(layout_map).__name__}: build one with LayoutMap(DeviceMesh((4, 2), "
                "('data', 'model'))) and set layout_map['dense.*kernel'] = (None, 'model')."
            )
        mesh = layout_map.device_mesh
        names = mesh.axis_names
        batch = names[0] if batch_dim_name is None else batch_dim_name
        if batch not in names:
            raise LayoutError(
                f"batch_dim_name {batch!r} is not an axis of {mesh!r}; use one of {names}."
            )
        if REPLICA_AXIS in names:
            raise LayoutError(
                f"{mesh!r} names an axis {REPLICA_AXIS!r}, phalanx's own name for the batch "
                "axis of its compiled steps; call it 'data' or 'batch'."
            )
        super().__init__(tuple(mesh.devices.flat))
        self._layout_map = layout_map
        self._batch_dim_name = batch
        self._variable_mesh = mesh.jax_mesh()
        self._use_mesh(mesh.jax_mesh([REPLICA_AXIS if n == batch else n for n in names]))

    @property
    def layout_map(self) -> LayoutMap:
        """The ``LayoutMap`` variables are placed by."""
        return self._layout_map

    @property
    def batch_dim_name(self) -> str:
        """The mesh axis (the ``DeviceMesh``'s name) the batch is split over."""
        return self._batch_dim_name

    @property
    def devices(self) -> tuple[jax.Device, ...]:
        """Every device of the mesh, in row-major order (a replica is a group of them)."""
        return self._devices

    @property
    def _splits_variables(self) -> bool:
        return True

    def variable_sharding(self, x: Any) -> NamedSharding:
        """The sharding of one variable: ``x`` an ``nnx.Variable`` with a model path, else
        whole (an array has no path: use ``distribute_variables`` on a pytree)."""
        if not _is_variable_node(x):
            return self._replicated
        return jax.tree.leaves(self._variable_shardings(x))[0]

    def _variable_shardings(self, tree: Any) -> Any:
        leaves, treedef = jax.tree.flatten(tree)
        paths = tree_paths(tree)
        out = []
        for leaf, path in zip(leaves, paths, strict=True):
            spec, _ = self._layout_map.resolve(path, tuple(jax.numpy.shape(leaf)))
            out.append(NamedSharding(self._variable_mesh, spec) if spec else self._replicated)
        return jax.tree.unflatten(treedef, out)

    def _is_variable(self, x: Any) -> bool:
        if not isinstance(x, jax.Array) or is_traced(x):
            return False
        sharding = x.sharding
        return isinstance(sharding, NamedSharding) and sharding.mesh == self._variable_mesh

    def _keep_variables(self, outs: list, varying: list[bool], paths: list[str]) -> list:
        """Outputs of ``run`` that do not vary over replicas and match the layout map by
        their path (``fn``'s returned ``(params, opt_state)``: ``0/w``, ``1/0/mu/w``) are
        constrained to their layout, so a custom loop's parameters stay split."""
        kept = []
        for out, vary, path in zip(outs, varying, paths, strict=True):
            spec = None
            if not vary:
                try:
                    spec, _ = self._layout_map.resolve(path, tuple(out.shape))
                except LayoutError:  # a value named like a variable but shaped otherwise
                    spec = None
            if spec:
                out = jax.lax.with_sharding_constraint(
                    out, NamedSharding(self._variable_mesh, spec)
                )
            kept.append(out)
        return kept

    def __repr__(self) -> str:
        mesh = self._layout_map.device_mesh
        return (
            f"ModelParallelStrategy(mesh {dict(zip(mesh.axis_names, mesh.shape, strict=True))}, "
            f"batch over {self._batch_dim_name!r})"
        )


def _is_variable_node(x: Any) -> bool:
    return isinstance(x, nnx.Variable)
