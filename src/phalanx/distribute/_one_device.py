"""``OneDeviceStrategy`` and the default strategy."""

from __future__ import annotations

import jax

from ..cluster import DeviceSpec, resolve_device
from ._strategy import Strategy


class OneDeviceStrategy(Strategy):
    """Places every variable and computation on one device (``tf.distribute.OneDeviceStrategy``).

    One replica: ``run`` calls ``fn`` once, compiled. Useful to test code written
    for a strategy before distributing it.

    Args:
      device: a ``jax.Device``, local index, or string such as ``"/gpu:0"``;
        None for the first local device.

    Raises:
      DeviceNotFoundError: ``device`` matches no device of this process.

    Examples:
      >>> OneDeviceStrategy("cpu:0").num_replicas_in_sync
      1
    """

    def __init__(self, device: DeviceSpec | None = None):
        super().__init__([resolve_device(0 if device is None else device)])

    @property
    def device(self) -> jax.Device:
        """The one device."""
        return self.devices[0]


class DefaultStrategy(OneDeviceStrategy):
    """The strategy current outside any ``scope()``: one replica, like TensorFlow's default."""

    def __repr__(self) -> str:
        return f"DefaultStrategy({self.device})"
