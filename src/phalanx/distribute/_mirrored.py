"""``MirroredStrategy``: one replica per local device of one process."""

from __future__ import annotations

from collections.abc import Sequence

from ._devices import DeviceSpec, resolve_devices
from ._strategy import Strategy


class MirroredStrategy(Strategy):
    """Synchronous training on many devices of one machine (``tf.distribute.MirroredStrategy``).

    Each device holds a replica of the model and takes a slice of the global
    batch; gradients are summed across replicas inside the compiled step.

    Args:
      devices: the devices (``jax.Device`` s, local indices, or strings such as
        ``"/gpu:0"``); None for every local device.

    Raises:
      DeviceNotFoundError: a device matches nothing in this process.
      ValueError: the list is empty or repeats a device.

    Example:
      >>> import jax
      >>> MirroredStrategy().num_replicas_in_sync == jax.local_device_count()
      True
    """

    def __init__(self, devices: Sequence[DeviceSpec] | None = None):
        super().__init__(resolve_devices(devices))
