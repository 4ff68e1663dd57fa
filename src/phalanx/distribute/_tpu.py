"""``TPUStrategy``: the mesh runtime over TPU cores, with TPU defaults.

What differs from ``MultiWorkerMirroredStrategy`` is advice, not computation:

- ``compute_dtype="bfloat16"`` (the default): ``fit`` runs the forward and
  backward passes in bfloat16, the TPU's native matrix type, keeping float32
  master weights, optimizer state and loss (``Model`` reads
  ``strategy.compute_dtype``).
- a warning, once, when the per-replica batch is not a multiple of 128, the
  TPU matrix unit's size (the seeds' advice);
- a hint, once, to raise ``steps_per_execution`` when a model is compiled with
  1 (each execution costs a host round trip).

Without TPU devices it raises, unless ``experimental_simulate_on_cpu=True``
(tests on CPU devices, with the same warnings and defaults; ``phalanx.device
("/TPU:0")`` then names the first simulated core).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from typing import TYPE_CHECKING

from ..cluster import simulate_tpu
from ..errors import DistributeArgumentError, TPUNotFoundError
from ._multi_worker import MultiWorkerMirroredStrategy

if TYPE_CHECKING:
    from ..cluster import ClusterResolver

log = logging.getLogger("phalanx")

TPU_BATCH_MULTIPLE = 128


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel, for its caller, of the nearest frame outside phalanx.

    The warning then names the user's line (``model.fit(...)``,
    ``strategy.shard_batch(...)``), not phalanx's. In a background thread of
    phalanx's (no user frame), the caller of ``_check_batch``'s caller, as before.
    """
    frame, level = sys._getframe(2), 2  # the caller of warnings.warn's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    if frame is None or frame.f_code.co_filename == threading.__file__:
        return 3
    return level


class TPUStrategy(MultiWorkerMirroredStrategy):
    """Synchronous training on TPU cores (``tf.distribute.TPUStrategy``).

    Args:
      tpu_cluster_resolver: a ``phalanx.cluster.TPUClusterResolver`` (or any
        resolver); None to find the TPU VM's cluster in the environment.
      compute_dtype: ``"bfloat16"`` (default) or ``"float32"``: the dtype of the
        forward and backward passes in ``fit``.
      experimental_simulate_on_cpu: run on CPU devices when there is no TPU
        (for tests); otherwise that raises.
      shard_parameters: keep parameters and optimizer state split over the cores
        (ZeRO-3 / FSDP); phalanx only.

    Raises:
      TPUNotFoundError: no TPU devices and ``experimental_simulate_on_cpu`` is False
        (a ``RuntimeError``).
      DistributeArgumentError: ``compute_dtype`` is not ``"bfloat16"`` or ``"float32"``.

    Examples:
      >>> s = TPUStrategy(experimental_simulate_on_cpu=True)
      >>> s.compute_dtype
      'bfloat16'
    """

    def __init__(
        self,
        tpu_cluster_resolver: ClusterResolver | None = None,
        *,
        compute_dtype: str = "bfloat16",
        experimental_simulate_on_cpu: bool = False,
        shard_parameters: bool = False,
    ):
        if compute_dtype not in ("bfloat16", "float32"):
            raise DistributeArgumentError(
                f"compute_dtype must be 'bfloat16' or 'float32', got {compute_dtype!r}."
            )
        super().__init__(tpu_cluster_resolver, shard_parameters=shard_parameters)
        platform = self.devices[0].platform
        if platform != "tpu" and not experimental_simulate_on_cpu:
            raise TPUNotFoundError(
                f"TPUStrategy found no TPU: JAX sees {len(self.devices)} {platform} device(s). "
                'Run on a Cloud TPU VM with `pip install -U "jax[tpu]"`, use '
                "MirroredStrategy/MultiWorkerMirroredStrategy here, or pass "
                "experimental_simulate_on_cpu=True to test TPU code on CPU devices."
            )
        if platform != "tpu":
            simulate_tpu(self.devices)  # phalanx.device("/TPU:0") names a simulated core
        self.compute_dtype = compute_dtype
        self._batch_warned = False
        self.recommends_fused_steps = True

    def _check_batch(self, global_batch: int) -> None:
        per_replica = global_batch // self.num_replicas_in_sync
        if per_replica % TPU_BATCH_MULTIPLE and not self._batch_warned:
            self._batch_warned = True
            warnings.warn(
                f"TPUStrategy: the per-replica batch is {per_replica}, not a multiple of "
                f"{TPU_BATCH_MULTIPLE} (the TPU matrix unit); the cores will be partly idle. "
                f"Use a global batch of {TPU_BATCH_MULTIPLE * self.num_replicas_in_sync} "
                "(or a multiple).",
                stacklevel=_user_stacklevel(),
            )

    def __repr__(self) -> str:
        return f"TPUStrategy({self.num_replicas_in_sync} core(s) on {self.devices[0].platform})"
