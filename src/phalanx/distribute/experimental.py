"""``tf.distribute.experimental``'s names, for programs written for older TensorFlow.

TensorFlow moved these out of ``experimental`` (``tf.distribute.TPUStrategy``,
...) and kept the old spellings; seed 004 writes
``tf.distribute.experimental.TPUStrategy(tpu)``. With the rename
``tf.distribute`` -> ``phalanx.distribute`` such lines run as written: each
name is the same object as in `phalanx.distribute` (the preemption names
as in `phalanx.checkpoint`).

Examples:
  >>> import phalanx
  >>> phalanx.distribute.experimental.TPUStrategy is phalanx.distribute.TPUStrategy
  True
"""

from typing import Any

from ._central_storage import CentralStorageStrategy as CentralStorageStrategy
from ._multi_worker import CommunicationImplementation as CommunicationImplementation
from ._multi_worker import CommunicationOptions as CommunicationOptions
from ._multi_worker import MultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy
from ._strategy import ValueContext as ValueContext
from ._tpu import TPUStrategy as TPUStrategy

# phalanx.checkpoint imports phalanx.distribute: its names are read when first asked for.
_FROM_CHECKPOINT = ("PreemptionCheckpointHandler", "TerminationConfig")

__all__ = [
    "CentralStorageStrategy",
    "CommunicationImplementation",
    "CommunicationOptions",
    "MultiWorkerMirroredStrategy",
    "PreemptionCheckpointHandler",  # noqa: F822 (read by __getattr__)
    "TPUStrategy",
    "TerminationConfig",  # noqa: F822 (read by __getattr__)
    "ValueContext",
]


def __getattr__(name: str) -> Any:
    if name in _FROM_CHECKPOINT:
        from .. import checkpoint

        return getattr(checkpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
