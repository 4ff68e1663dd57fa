"""``fit``'s compiled steps on a ``ModelParallelStrategy`` (a 2-D mesh and a layout map).

The step functions are the replicated ones (``_step``): ``jax.shard_map`` runs
them once per replica over the mesh's ``'replica'`` (batch) axis, with
TensorFlow's gradient semantics, while the other mesh axes stay under XLA's
automatic partitioning (GSPMD). The parameters and optimizer state arrive
split by the layout map (``Strategy._variable_shardings``), XLA partitions the
forward and backward passes and the optimizer's update by those layouts and
inserts the collectives (for a column-split kernel followed by a row-split
one, one all-reduce over the model axis), and the program returns the state
with the same layout (``out_shardings``), so the next call compiles nothing.

A model's variables are matched by their Keras path (``dense/kernel``), which
``annotate_paths`` records on each ``nnx.Param`` as metadata before the state
is split; optimizer moments made from the parameters (``tx.init``) carry it
too, so they follow their parameter's layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import flax.nnx as nnx

from ..distribute import PATH_METADATA
from ..errors import LayoutError
from ..layers import keras_path, lookup_path
from . import _programs as _sharded
from . import _step


def annotate_paths(strategy, module: nnx.Module) -> None:
    """Records each parameter's Keras path on it, when ``strategy`` has a layout map, and
    warns of the map's keys that match none of them (a misspelt key leaves whole what it
    was meant to split, and nothing else would say so)."""
    if strategy.layout_map is None:
        return
    keras_paths = []
    for path, _ in nnx.to_flat_state(nnx.state(module, nnx.Param)):
        path = tuple(path)
        keras_paths.append(keras_path(module, path))
        lookup_path(module, path).set_metadata(**{PATH_METADATA: keras_paths[-1]})
    _warn_unmatched(strategy.layout_map, keras_paths)


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


def fused_program(kind: str, config: _step.StepConfig, strategy, *, resident: bool) -> Callable:
    """``_step.fused_program`` with the state's layout pinned; compiled on the first call."""
    return _Program(kind, config, strategy, resident)


class _Program(_sharded._Program):
    """``_sharded._Program`` (compiled on the first call, when the state's structure and so
    its layout is known), compiling the replicated step with the state's layout pinned."""

    def _compile(self, state) -> Callable:
        return _step.fused_program(
            self.kind,
            self.config,
            self.strategy.mesh,
            resident=self.resident,
            state_shardings=_sharded.state_shardings(self.strategy, state),
        )
