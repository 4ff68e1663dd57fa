"""``MirroredStrategy``: one replica per local device of one process."""

from __future__ import annotations

from collections.abc import Sequence

from ..cluster import DeviceSpec, cpu_device_count_from_env, resolve_devices, set_cpu_device_count
from ._cross_device_ops import CrossDeviceOps, check_cross_device_ops
from ._strategy import Strategy


class MirroredStrategy(Strategy):
    """Synchronous training on many devices of one machine (``tf.distribute.MirroredStrategy``).

    Each device holds a replica of the model and takes a slice of the global
    batch; gradients are summed across replicas inside the compiled step.

    Like ``MultiWorkerMirroredStrategy`` and ``TPUStrategy``, it honours
    ``PHALANX_CPU_DEVICES=N`` (N simulated CPU devices, set before JAX starts its
    backends), so one script runs unchanged on a laptop and on the real machine.

    Args:
      devices: the devices (``jax.Device`` s, local indices, or strings such as
        ``"/gpu:0"``); None for every local device.
      cross_device_ops: TensorFlow's all-reduce choice (``NcclAllReduce()``,
        ``HierarchicalCopyAllReduce()``, ``ReductionToOneDevice()``), accepted and
        kept as ``strategy.cross_device_ops``; XLA chooses the all-reduce, the sums are
        the same.
      shard_parameters: keep parameters and optimizer state split over the
        replicas (ZeRO-3 / FSDP): each device stores ``1/N`` of them, gathered for
        compute; same results as replicated (phalanx only; see
        ``Strategy.distribute_variables``).

    Raises:
      DeviceNotFoundError: a device matches nothing in this process.
      ValueError: the list is empty or repeats a device, or ``PHALANX_CPU_DEVICES``
        is not a positive integer.
      RuntimeError: ``PHALANX_CPU_DEVICES`` is set but JAX already started with
        another number of devices.

    Examples:
      >>> import jax
      >>> MirroredStrategy().num_replicas_in_sync == jax.local_device_count()
      True
    """

    def __init__(
        self,
        devices: Sequence[DeviceSpec] | None = None,
        cross_device_ops: CrossDeviceOps | None = None,
        *,
        shard_parameters: bool = False,
    ):
        self.cross_device_ops = check_cross_device_ops(cross_device_ops)
        simulated = cpu_device_count_from_env()
        if simulated is not None:
            set_cpu_device_count(simulated)
        super().__init__(resolve_devices(devices), shard_parameters=shard_parameters)
