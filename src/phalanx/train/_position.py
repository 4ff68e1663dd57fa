"""A model's whole training state as named arrays plus JSON, for ``phalanx.checkpoint``.

``Model._state`` (a ``_step.TrainState``) is the one authoritative training
state: parameters, non-trainable state, optimizer state, step, RNG key and
the metric accumulators. ``fit``, the callbacks (through ``get_weights``,
``set_weights`` and ``model.optimizer.learning_rate``, which read and write
it), and checkpoints all go through it; the nnx module is a view refreshed
from it (``Model.module``). Next to it the model keeps its *training
position* (``TrainPosition``): the epoch, the steps done in it and the input
iterator's state after them, updated with the state at every execution, so
a checkpoint saved at any point holds a consistent pair.

A checkpoint stores every leaf of the state under a readable name, with its
shape and dtype in the manifest (``phalanx.checkpoint``'s ``state_items`` and
``load_state``), so a checkpoint of another model is refused before any data
is read, with the arrays that differ named.

The checkpoint layer sees a model only through the protocol it declares
(``phalanx.checkpoint._objects.Trainable``, since ``checkpoint`` sits below
``train`` in DESIGN.md's layers): ``_checkpoint_items()``,
``_checkpoint_expect()`` and ``_checkpoint_load()``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import CheckpointMismatchError


class TrainPosition(NamedTuple):
    """Where ``fit`` stands: what a resumed ``fit`` needs besides the arrays.

    Attributes:
      epoch: the 0-based epoch being trained (the next one after an epoch ends).
      step: the steps done in that epoch (0 at an epoch's start).
      input_state: the input iterator's ``get_state()`` after those steps, or
        None (arrays; inputs that cannot save a position).
      logs: the epoch's logs after those steps (used when a resumed epoch has
        no steps left).
    """

    epoch: int = 0
    step: int = 0
    input_state: Any = None
    logs: dict | None = None

    def to_json(self) -> dict:
        """The position as a JSON-able dict."""
        return {
            "epoch": int(self.epoch),
            "step": int(self.step),
            "input_state": self.input_state,
            "logs": self.logs,
        }

    @classmethod
    def from_json(cls, data: Any) -> TrainPosition:
        """The position saved by ``to_json``."""
        if not isinstance(data, dict):
            raise CheckpointMismatchError(
                f"The checkpoint's training position is {data!r}, not a dict: the checkpoint is "
                "damaged or was not written by phalanx. Restore another one."
            )
        return cls(
            int(data.get("epoch", 0)),
            int(data.get("step", 0)),
            data.get("input_state"),
            data.get("logs"),
        )
