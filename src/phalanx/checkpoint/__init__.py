"""Checkpoints that resume exactly: the whole training state in one atomic step.

``Checkpoint(model=..., iterator=..., ...)`` saves and restores a model's
whole training state (parameters, non-trainable state, optimizer state,
step, RNG key, metric accumulators and ``fit``'s position with its input
iterator state) and the state of any data iterator, with TensorFlow's names
(``save``/``write``/``restore``/``read``). ``CheckpointManager`` keeps
numbered checkpoints in a directory (``max_to_keep``,
``keep_every_n_steps``, ``save_interval_steps``, ``latest_checkpoint``,
``restore_or_initialize``). ``PreemptionCheckpointHandler`` saves at one
step on every process when any receives SIGTERM (or another termination
notice: ``TerminationConfig``, Slurm's SIGUSR1, Google Compute Engine's
metadata server), and exits with ``RESTARTABLE_EXIT_CODE``. A checkpoint is
one header-checked file when its arrays are whole on a host, and
orbax-checkpoint's directory when they are split over processes (``_file``,
docs/checkpoints.md): each checkpoint is committed atomically (a process
killed while writing leaves the previous one intact), asynchronously on
request, and arrays restore onto any replica count (and, with the input
positions of arrays or of a ``Dataset`` sharded by rows, any process count). ``phalanx.callbacks.BackupAndRestore`` resumes ``fit``
with them; see docs/checkpoints.md.
"""

from ._checkpoint import Checkpoint as Checkpoint
from ._manager import CheckpointManager as CheckpointManager
from ._manager import latest_checkpoint as latest_checkpoint
from ._preemption import RESTARTABLE_EXIT_CODE as RESTARTABLE_EXIT_CODE
from ._preemption import PreemptionCheckpointHandler as PreemptionCheckpointHandler
from ._termination import TerminationConfig as TerminationConfig
from ._termination import gce_termination_watcher as gce_termination_watcher

# isort: split
# For phalanx's own packages (not public API, absent from __all__): checkpoint paths,
# manifests and the preemption exit code that callbacks, the trainer and the CLI share.
from ._io import as_path as as_path
from ._io import is_checkpoint as is_checkpoint
from ._io import is_remote as is_remote
from ._manifest import check_manifest as check_manifest
from ._manifest import load_state as load_state
from ._manifest import state_items as state_items
from ._preemption import check_termination_config as check_termination_config

__all__ = [
    "RESTARTABLE_EXIT_CODE",
    "Checkpoint",
    "CheckpointManager",
    "PreemptionCheckpointHandler",
    "TerminationConfig",
    "gce_termination_watcher",
    "latest_checkpoint",
]
