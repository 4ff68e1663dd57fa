"""Model-parallel layouts: ``DeviceMesh`` and ``LayoutMap`` (Keras 3's ``keras.distribution``).

A ``DeviceMesh`` arranges the devices in a grid with named axes, for example
``DeviceMesh((4, 2), ("data", "model"))``: 4 groups of 2 devices. A
``LayoutMap`` maps variable paths to partition specs, one entry per axis of
the variable: ``layout_map["dense.*kernel"] = (None, "model")`` splits the
second axis of every matching kernel over the ``"model"`` axis (2 devices
each hold half of it) and keeps the first whole. ``ModelParallelStrategy``
(``phalanx.distribute._model_parallel``) splits the batch over one axis and
places the variables by the map.

Matching, as Keras 3: a path equal to a key takes that key's spec; otherwise
every key is tried as a regular expression with ``re.fullmatch`` and exactly
one may match (two raise). phalanx adds one rule: a path that matches nothing
is tried again without its leading components (``0/mu/w`` as ``mu/w``, then
``w``), so an optimizer's moments and the outputs of ``strategy.run`` follow
the layout of the variable they are named after. A model's variables are
matched by their Keras path (``dense/kernel``, ``multi_head_attention/query/
kernel``: ``model.weights[i].path``), other pytrees by their keys joined with
``/``. Unmatched variables stay whole on every device.
"""

from __future__ import annotations

import collections.abc
import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import flax.nnx as nnx
import jax
import numpy as np
from jax.sharding import AxisType, Mesh
from jax.sharding import PartitionSpec as P

from ..cluster import initialize
from ..errors import LayoutError
from ..layers import keras_path, lookup_path

#: The ``nnx.Variable`` metadata that holds a model variable's Keras path.
PATH_METADATA = "phalanx_path"

Entry = str | tuple[str, ...] | None


class DeviceMesh:
    """Devices in a grid with named axes (Keras 3's ``keras.distribution.DeviceMesh``).

    Args:
      shape: the grid's shape, e.g. ``(4, 2)``; its product is the number of devices.
      axis_names: one name per axis, e.g. ``("data", "model")``.
      devices: the devices in row-major order (a list, or a numpy array of any
        shape, read flat); None for every device of every process
        (``jax.devices()``, after ``phalanx.cluster.initialize()`` connects the
        cluster the environment describes, as ``MultiWorkerMirroredStrategy``
        does; ``PHALANX_CPU_DEVICES=N`` simulates N CPU devices).

    Raises:
      LayoutError: an empty or non-positive shape, names that are not one unique
        string per axis, devices that are not jax devices or repeat one, or a
        number of devices other than the shape's product.

    Examples:
      >>> import jax
      >>> mesh = DeviceMesh((1, 1), ("data", "model"), devices=jax.devices()[:1])
      >>> mesh.shape, mesh.axis_names
      ((1, 1), ('data', 'model'))
    """

    def __init__(
        self,
        shape: Sequence[int],
        axis_names: Sequence[str],
        devices: Sequence[jax.Device] | None = None,
    ):
        shape, names = _check_shape(shape), _check_names(axis_names)
        if len(shape) != len(names):
            raise LayoutError(
                f"DeviceMesh needs one axis name per axis: shape {shape} has {len(shape)} axes, "
                f"axis_names {names} has {len(names)}."
            )
        source = "devices="
        if devices is None:  # as MultiWorkerMirroredStrategy: every process's devices
            initialize()  # connects the cluster the environment describes; else only applies
            # PHALANX_CPU_DEVICES (N simulated CPU devices); at once when already done
            devices, source = jax.devices(), "jax.devices()"
        devices = _check_devices(devices)
        if math.prod(shape) != len(devices):
            raise LayoutError(
                f"DeviceMesh shape {shape} holds {math.prod(shape)} devices, but {source} has "
                f"{len(devices)}. Use a shape whose product is {len(devices)}, or pass "
                f"devices= with {math.prod(shape)} devices (PHALANX_CPU_DEVICES=N simulates N)."
            )
        self._shape = shape
        self._axis_names = names
        self._devices = np.empty(len(devices), dtype=object)
        self._devices[:] = devices
        self._devices = self._devices.reshape(shape)

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid's shape."""
        return self._shape

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The axes' names."""
        return self._axis_names

    @property
    def devices(self) -> np.ndarray:
        """The devices, a numpy array of ``shape``."""
        return self._devices

    def axis_size(self, name: str) -> int:
        """The number of devices along the axis ``name``.

        Raises:
          LayoutError: the mesh has no axis ``name``.
        """
        if name not in self._axis_names:
            raise LayoutError(f"{self!r} has no axis {name!r}; use one of {self._axis_names}.")
        return self._shape[self._axis_names.index(name)]

    def jax_mesh(self, axis_names: Sequence[str] | None = None) -> Mesh:
        """This grid as a ``jax.sharding.Mesh`` (optionally with other axis names)."""
        names = tuple(axis_names or self._axis_names)
        return Mesh(self._devices, names, axis_types=(AxisType.Auto,) * len(names))

    def __repr__(self) -> str:
        return f"DeviceMesh(shape={self._shape}, axis_names={self._axis_names})"


def _check_shape(shape: Any) -> tuple[int, ...]:
    try:
        out = tuple(shape)
    except TypeError:
        out = None
    positive = all(
        isinstance(s, int | np.integer) and not isinstance(s, bool) and s > 0 for s in out or ()
    )
    if not out or not positive:
        raise LayoutError(
            f"DeviceMesh shape must be a non-empty tuple of positive ints, got {shape!r}; "
            "for example (4, 2) for 4 data groups of 2 model devices."
        )
    return tuple(int(s) for s in out)


def _check_devices(devices: Any) -> list[jax.Device]:
    if isinstance(devices, np.ndarray):  # a grid already (mesh_utils.create_device_mesh)
        devices = devices.ravel()
    try:
        out = list(devices)
    except TypeError:
        out = None
    if out is None or not all(isinstance(d, jax.Device) for d in out):
        raise LayoutError(
            f"DeviceMesh devices= must be a sequence of jax devices, got {devices!r}; for "
            "example jax.devices()[:4], or None for every device of every process."
        )
    if len(set(out)) != len(out):
        raise LayoutError(f"DeviceMesh got a device twice: {out}; give each device once.")
    return out


def _check_names(names: Any) -> tuple[str, ...]:
    out = (names,) if isinstance(names, str) else tuple(names or ())
    if not out or not all(isinstance(n, str) and n for n in out) or len(set(out)) != len(out):
        raise LayoutError(
            f"DeviceMesh axis_names must be unique non-empty strings, one per axis, got "
            f"{names!r}; for example ('data', 'model')."
        )
    return out


class LayoutMap(collections.abc.MutableMapping):
    """Variable paths (regular expressions) to partition specs (Keras 3's ``LayoutMap``).

    A spec has one entry per axis of the variable: a mesh axis name (split that
    axis over those devices), a tuple of names (over several), or None (whole).
    Keys and specs are checked when set; the spec of a variable is checked
    against its shape when a strategy places it (see the module docstring for
    how paths are matched).

    Args:
      device_mesh: the ``DeviceMesh`` the spec's axis names refer to.

    Raises:
      LayoutError: a key that is not a valid regular expression, a duplicated
        key, or a spec that names an axis the mesh lacks or names one twice.

    Examples:
      >>> import jax
      >>> mesh = DeviceMesh((1, 1), ("data", "model"), devices=jax.devices()[:1])
      >>> layout_map = LayoutMap(mesh)
      >>> layout_map["dense.*kernel"] = (None, "model")
      >>> layout_map["dense_1/kernel"], layout_map["dense/bias"]
      ((None, 'model'), None)
    """

    def __init__(self, device_mesh: DeviceMesh):
        if not isinstance(device_mesh, DeviceMesh):
            raise LayoutError(
                f"LayoutMap takes a phalanx.distribute.DeviceMesh, got {type(device_mesh).__name__}"
                ": build one with DeviceMesh((4, 2), ('data', 'model'))."
            )
        self._device_mesh = device_mesh
        self._specs: dict[str, tuple[Entry, ...]] = {}
        self._patterns: dict[str, re.Pattern] = {}

    @property
    def device_mesh(self) -> DeviceMesh:
        """The mesh whose axes the specs name."""
        return self._device_mesh

    def __setitem__(self, key: str, layout: Any) -> None:
        if not isinstance(key, str):
            raise LayoutError(f"LayoutMap keys are path patterns (str), got {key!r}.")
        if key in self._specs:
            raise LayoutError(
                f"LayoutMap already has the key {key!r} (spec {self._specs[key]}); delete it "
                "first to change it."
            )
        try:
            pattern = re.compile(key)
        except re.error as e:
            raise LayoutError(f"LayoutMap key {key!r} is not a regular expression: {e}.") from e
        self._specs[key] = self._check_spec(key, layout)
        self._patterns[key] = pattern

    def __getitem__(self, path: str) -> tuple[Entry, ...] | None:
        """The spec for ``path``: an equal key's, else the one key that fullmatches; or None.

        Raises:
          LayoutError: several keys match ``path``.
        """
        key = self.match(path)
        return None if key is None else self._specs[key]

    def get(self, path: str, default: Any = None) -> Any:
        """``self[path]``, or ``default`` when no key matches."""
        spec = self[path]
        return default if spec is None else spec

    def __delitem__(self, key: str) -> None:
        del self._specs[key]
        del self._patterns[key]

    def __iter__(self):
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, key: object) -> bool:
        return key in self._specs

    def __repr__(self) -> str:
        return f"LayoutMap({self._device_mesh!r}, {self._specs!r})"

    def match(self, path: str) -> str | None:
        """The key that ``path`` takes its spec from (Keras's rule), or None.

        Raises:
          LayoutError: several keys match ``path``.
        """
        if not isinstance(path, str):
            raise LayoutError(
                f"LayoutMap looks up variable paths (str, e.g. 'dense/kernel'), got {path!r} "
                f"({type(path).__name__})."
            )
        if path in self._specs:
            return path
        keys = [k for k, pattern in self._patterns.items() if pattern.fullmatch(path)]
        if len(keys) > 1:
            raise LayoutError(
                f"Variable path {path!r} matches several LayoutMap keys: {keys}. Make the "
                "patterns exclusive so that each path matches at most one."
            )
        return keys[0] if keys else None

    def resolve(self, path: str, shape: tuple[int, ...]) -> tuple[P, str | None]:
        """``(spec, key)`` for a variable of ``path`` and ``shape``: ``P()`` and None when
        nothing matches, also without the path's leading components.

        Raises:
          LayoutError: the spec does not fit ``shape`` (one entry per axis, sizes
            that divide by the mesh axes), or several keys match.
        """
        parts = path.split("/")
        for start in range(len(parts)):
            key = self.match("/".join(parts[start:]))
            if key is not None:
                spec = self._specs[key]
                check_fits(path, shape, spec, key, self._device_mesh)
                return P(*spec), key
        return P(), None

    def _check_spec(self, key: str, layout: Any) -> tuple[Entry, ...]:
        entries = tuple(layout) if isinstance(layout, tuple | list | P) else None
        names = self._device_mesh.axis_names
        if entries is None:
            raise LayoutError(
                f"LayoutMap[{key!r}] must be a tuple with one entry per axis of the variable "
                f"(a mesh axis name, a tuple of them, or None), got {layout!r}; for example "
                f"(None, {names[-1]!r})."
            )
        used: list[str] = []
        out: list[Entry] = []
        for entry in entries:
            group = (entry,) if isinstance(entry, str) else entry
            if group is None or group == ():  # () splits over no axis: whole, as None
                out.append(None)
                continue
            group = tuple(group) if isinstance(group, tuple | list) else (group,)
            for name in group:
                if name not in names:
                    raise LayoutError(
                        f"LayoutMap[{key!r}] = {layout!r} names the axis {name!r}, which the "
                        f"mesh {self._device_mesh!r} does not have. Use one of {names} or None."
                    )
            used.extend(group)
            out.append(group[0] if len(group) == 1 else group)
        if len(set(used)) != len(used):
            raise LayoutError(
                f"LayoutMap[{key!r}] = {layout!r} splits over a mesh axis twice; each axis of "
                "the mesh may split at most one axis of a variable."
            )
        return tuple(out)


def check_fits(
    path: str, shape: tuple[int, ...], spec: tuple[Entry, ...], key: str, mesh: DeviceMesh
) -> None:
    """Raises ``LayoutError`` unless ``spec`` has one entry per axis of ``shape`` and
    every split axis divides by the number of devices it is split over."""
    where = f"Variable {path!r} of shape {shape} matched LayoutMap key {key!r} with spec {spec}"
    if len(spec) != len(shape):
        raise LayoutError(
            f"{where}: the spec has {len(spec)} entries, the variable {len(shape)} axes. Give "
            "one entry per axis (None keeps an axis whole), or a key that does not match it."
        )
    for axis, (size, entry) in enumerate(zip(shape, spec, strict=True)):
        if entry is None:
            continue
        group = (entry,) if isinstance(entry, str) else entry
        parts = math.prod(mesh.axis_size(name) for name in group)
        if size % parts:
            raise LayoutError(
                f"{where}: axis {axis} has {size} elements, which do not split over the "
                f"{parts} devices of mesh axis {entry!r}. Choose sizes that divide, another "
                "mesh shape, or None for that axis."
            )


def tree_paths(tree: Any) -> list[str]:
    """One path per array leaf of ``tree``, in ``jax.tree.leaves`` order.

    A leaf inside an ``nnx.Variable`` annotated with ``PATH_METADATA`` (a model's
    variable, or optimizer state made from it) takes that path; any other leaf
    the keys on the way to it joined with ``/`` (``0/mu/w1``).
    """

    def is_variable(x):
        return isinstance(x, nnx.Variable)

    items, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_variable)
    out = []
    for keys, node in items:
        name = None
        if is_variable(node):
            name = node.get_metadata().get(PATH_METADATA)
        name = name or key_path(keys)
        out.extend(name for _ in jax.tree.leaves(node))
    return out


def key_path(keys: Sequence[Any]) -> str:
    """``(SequenceKey(0), GetAttrKey('mu'), DictKey('w'))`` as ``'0/mu/w'`` (no ``value``)."""
    names = []
    for k in keys:
        name = getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))
        if isinstance(k, jax.tree_util.GetAttrKey) and name == "value":
            continue
        names.append(str(name))
    return "/".join(names)


def annotate_paths(layout_map: LayoutMap, module: nnx.Module) -> None:
    """Records each parameter's Keras path on it (``PATH_METADATA``), which ``layout_map``
    matches, and warns of the map's keys that match none of them (a misspelt key leaves
    whole what it was meant to split, and nothing else would say so)."""
    keras_paths = []
    for path, _ in nnx.to_flat_state(nnx.state(module, nnx.Param)):
        path = tuple(path)
        keras_paths.append(keras_path(module, path))
        lookup_path(module, path).set_metadata(**{PATH_METADATA: keras_paths[-1]})
    _warn_unmatched(layout_map, keras_paths)


def _warn_unmatched(layout_map, paths: list[str]) -> None:
    used = set()
    for path in paths:
        parts = path.split("/")
        for start in range(len(parts)):  # the layout map's suffix rule (LayoutMap.resolve)
            try:
                key = layout_map.match("/".join(parts[start:]))
            except LayoutError:  # several keys match: fit says so when it places them
                break
            if key is not None:
                used.add(key)
                break
    unused = [key for key in layout_map if key not in used]
    if unused:
        shown = ", ".join(paths[:8]) + (f", ... ({len(paths)} in all)" if len(paths) > 8 else "")
        warnings.warn(
            f"LayoutMap keys {unused} match none of the model's variables ({shown}), "
            "so nothing is split by them. Correct the pattern (matched with re.fullmatch "
            "against paths like these, as model.weights[i].path) or delete the key.",
            UserWarning,
            stacklevel=3,
        )
