"""``tf.distribute.experimental.CentralStorageStrategy``, as a ``MirroredStrategy``.

TensorFlow's central storage keeps one copy of the variables on
``parameter_device`` and runs the replicas on ``compute_devices``, reading the
variables there each step: synchronous data parallelism, the same updates as
``MirroredStrategy``. phalanx keeps the parameters replicated on the compute
devices (XLA's all-reduce replaces the central copy), so the training is the
same and ``parameter_device`` is only recorded. For parameters too large to
replicate, ``MirroredStrategy(shard_parameters=True)`` splits them instead.

Without ``compute_devices``, the replicas are TensorFlow's: every local
accelerator, or on a machine with only CPUs the first CPU device (one replica,
as TF 2.21 with two logical CPUs, where ``MirroredStrategy()`` has two, as
phalanx's has every simulated CPU device).

Examples:
  >>> import jax, phalanx
  >>> strategy = phalanx.distribute.experimental.CentralStorageStrategy()
  >>> cpu_only = jax.local_devices()[0].platform == "cpu"
  >>> strategy.num_replicas_in_sync == (1 if cpu_only else jax.local_device_count())
  True
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from ..cluster import DeviceSpec, resolve_device
from ._mirrored import MirroredStrategy


class CentralStorageStrategy(MirroredStrategy):
    """Synchronous training on ``compute_devices`` (``CentralStorageStrategy``'s arguments).

    Args:
      compute_devices: the replicas' devices, as ``MirroredStrategy``'s ``devices``;
        None for every local accelerator, or the first CPU device on a machine
        with only CPUs (as TensorFlow).
      parameter_device: where TensorFlow keeps the variables; resolved (it must exist)
        and kept as ``strategy.parameter_device``. The parameters stay replicated.

    Raises:
      DeviceNotFoundError: a device matches nothing in this process.
    """

    def __init__(
        self,
        compute_devices: Sequence[DeviceSpec] | None = None,
        parameter_device: DeviceSpec | None = None,
    ):
        if compute_devices is None and jax.local_devices()[0].platform == "cpu":
            compute_devices = jax.local_devices()[:1]  # TF: GPUs, else CPU:0 alone
        super().__init__(compute_devices)
        self.parameter_device = (
            self.devices[0] if parameter_device is None else resolve_device(parameter_device)
        )
