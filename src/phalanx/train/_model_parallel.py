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
``phalanx.distribute``'s ``annotate_paths`` records on each ``nnx.Param`` as metadata
before the state is split; optimizer moments made from the parameters (``tx.init``) carry it
too, so they follow their parameter's layout.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _programs as _sharded
from . import _step


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
