"""``tf.config``'s device listing: ``list_physical_devices`` and ``list_logical_devices``.

The devices are this process's JAX devices, named as TensorFlow names them, so
a name goes back into ``phalanx.device(name)`` or ``MirroredStrategy(devices=[...])``:

- **logical** devices are the ones computations run on: every local JAX device
  of the kind (``/device:CPU:0`` ... ``/device:CPU:7`` with 8 simulated CPU
  devices), and, once a ``TPUStrategy(experimental_simulate_on_cpu=True)``
  exists on a machine without TPUs, its simulated cores as ``TPU``;
- **physical** devices are the hardware: one ``CPU`` however many CPU devices
  are simulated (TensorFlow's simulated CPUs are logical devices too), and each
  GPU or TPU chip JAX sees; simulated TPU cores are not physical.

With several processes, names carry the process as TensorFlow's task
(``/job:worker/replica:0/task:1/device:GPU:0``); only this process's devices are
listed.

``experimental_connect_to_cluster`` is `phalanx.cluster.connect_to_cluster`
(TensorFlow's ``tf.config.experimental_connect_to_cluster``, which
TensorFlow's TPU programs call before ``initialize_tpu_system``).
"""

from __future__ import annotations

import jax

from .cluster import PLATFORMS, simulated_tpu_cores
from .cluster import LogicalDevice as LogicalDevice
from .cluster import PhysicalDevice as PhysicalDevice
from .cluster import connect_to_cluster as experimental_connect_to_cluster
from .errors import DeviceNotFoundError

_KINDS = ("CPU", "GPU", "TPU")


def _kinds(device_type: str | None) -> tuple[str, ...]:
    if device_type is None:
        return _KINDS
    if not isinstance(device_type, str) or device_type.upper() not in _KINDS:
        raise DeviceNotFoundError(
            f"Unknown device type {device_type!r}: expected 'CPU', 'GPU' or 'TPU' (or None "
            "for every kind), as tf.config.list_logical_devices."
        )
    return (device_type.upper(),)


def _local(kind: str) -> list[jax.Device]:
    """This process's JAX devices of ``kind`` (any backend, not only the default one)."""
    found: list[jax.Device] = []
    for platform in PLATFORMS[kind.lower()]:
        try:
            devices = jax.local_devices(backend=platform)
        except RuntimeError:  # no such backend here
            continue
        found += [d for d in devices if d not in found]
    return found


def _prefix() -> str:
    if jax.process_count() > 1:
        return f"/job:worker/replica:0/task:{jax.process_index()}"
    return ""


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """Lists the devices computations run on (``tf.config.list_logical_devices``).

    Args:
      device_type: ``"CPU"``, ``"GPU"``, ``"TPU"`` (any case) or None for all.

    Returns:
      ``LogicalDevice(name, device_type)`` for each device of this process, e.g.
      ``LogicalDevice(name='/device:CPU:0', device_type='CPU')``; an empty list
      when there is none of that kind.

    Raises:
      DeviceNotFoundError: ``device_type`` is not a device kind.

    Examples:
      >>> list_logical_devices("CPU")[0]
      LogicalDevice(name='/device:CPU:0', device_type='CPU')
    """
    out = []
    for kind in _kinds(device_type):
        found = _local(kind)
        if not found and kind == "TPU":
            found = simulated_tpu_cores(jax.process_index())
        out += [LogicalDevice(f"{_prefix()}/device:{kind}:{i}", kind) for i in range(len(found))]
    return out


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """Lists the hardware devices (``tf.config.list_physical_devices``).

    One ``CPU`` (simulated CPU devices are logical), each GPU or TPU chip.

    Args:
      device_type: ``"CPU"``, ``"GPU"``, ``"TPU"`` (any case) or None for all.

    Returns:
      ``PhysicalDevice(name, device_type)`` for each, e.g.
      ``PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')``.

    Raises:
      DeviceNotFoundError: ``device_type`` is not a device kind.

    Examples:
      >>> list_physical_devices("CPU")
      [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """
    out = []
    for kind in _kinds(device_type):
        count = min(len(_local(kind)), 1) if kind == "CPU" else len(_local(kind))
        out += [PhysicalDevice(f"/physical_device:{kind}:{i}", kind) for i in range(count)]
    return out


__all__ = [
    "LogicalDevice",
    "PhysicalDevice",
    "experimental_connect_to_cluster",
    "list_logical_devices",
    "list_physical_devices",
]
