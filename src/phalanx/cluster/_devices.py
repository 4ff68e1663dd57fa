"""Device specifications: JAX devices, indices, or TensorFlow-style strings.

Accepted strings follow TensorFlow's device names, case-insensitive:
``"cpu:0"``, ``"GPU:1"``, ``"/gpu:1"``, ``"/device:TPU:0"``,
``"/job:worker/replica:0/task:1/device:GPU:0"``. The index counts the devices of
that kind on one process (``task``, default this process), as TensorFlow does.

Once a ``TPUStrategy(experimental_simulate_on_cpu=True)`` exists in a process
without TPUs, TPU names (``"/TPU:0"``) name its simulated cores (CPU devices),
so the seeds' ``with tf.device("/TPU:0")`` runs unchanged on a laptop.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import jax

from ..errors import DeviceNotFoundError, DistributeArgumentError

DeviceSpec = jax.Device | int | str

# TensorFlow device types -> JAX platform names.
PLATFORMS = {"cpu": ("cpu",), "gpu": ("gpu", "cuda", "rocm"), "tpu": ("tpu",)}
_DEVICE_RE = re.compile(r"(?:^|/)(?:device:)?(?P<kind>cpu|gpu|tpu):(?P<index>\d+)$")
_TASK_RE = re.compile(r"/task:(?P<task>\d+)")


class PhysicalDevice(NamedTuple):
    """A hardware device (``tf.config.PhysicalDevice``): ``name`` and ``device_type``."""

    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device computations run on (``tf.config.LogicalDevice``): ``name`` and ``device_type``."""

    name: str
    device_type: str


def _describe_available() -> str:
    by_kind: dict[str, int] = {}
    for d in jax.local_devices():
        by_kind[d.platform] = by_kind.get(d.platform, 0) + 1
    listed = ", ".join(f"{n} {k} ({k}:0..{k}:{n - 1})" for k, n in by_kind.items())
    return f"this process (index {jax.process_index()}) has {listed}"


# The cores of a TPUStrategy simulated on CPU devices (set by TPUStrategy; last one wins).
_simulated_tpu: tuple[jax.Device, ...] = ()


def simulate_tpu(devices: Sequence[jax.Device]) -> None:
    """Makes TPU device names resolve to ``devices`` (a simulated ``TPUStrategy``'s)."""
    global _simulated_tpu
    _simulated_tpu = tuple(devices)


def simulated_tpu_cores(process: int) -> list[jax.Device]:
    """The cores of a simulated ``TPUStrategy`` on process ``process`` (empty without one)."""
    return [d for d in _simulated_tpu if d.process_index == process]


def _platform_devices(kind: str, process: int) -> list[jax.Device]:
    found = [
        d for d in jax.devices() if d.platform in PLATFORMS[kind] and d.process_index == process
    ]
    if not found and kind == "tpu":
        found = simulated_tpu_cores(process)
    return found


def resolve_device(spec: DeviceSpec) -> jax.Device:
    """Returns the JAX device that ``spec`` names.

    Args:
      spec: a ``jax.Device``; an int, the index into ``jax.local_devices()``;
        a TensorFlow-style string such as ``"/gpu:1"`` or ``"/device:TPU:0"``; or a
        ``phalanx.config.LogicalDevice`` (from ``list_logical_devices``), as TensorFlow's
        strategies and ``tf.device`` take them.

    Returns:
      The ``jax.Device``.

    Raises:
      DeviceNotFoundError: no device of this process matches ``spec``.
      TypeError: ``spec`` is of another type.

    Examples:
      >>> resolve_device("cpu:0").platform
      'cpu'
    """
    if isinstance(spec, jax.Device):
        return spec
    if _is_logical_device(spec):
        spec = spec.name
    if isinstance(spec, bool) or not isinstance(spec, int | str):
        raise DistributeArgumentError(
            "A device is a jax.Device, an index into jax.local_devices(), a string such "
            "as '/gpu:0', or a LogicalDevice of phalanx.config.list_logical_devices(); got "
            f"{type(spec).__name__} {spec!r}."
        )
    if isinstance(spec, int):
        local = jax.local_devices()
        if not 0 <= spec < len(local):
            raise DeviceNotFoundError(
                f"Device index {spec} is out of range: {_describe_available()}. "
                f"Use an index in 0..{len(local) - 1}."
            )
        return local[spec]
    text = spec.strip().lower()
    match = _DEVICE_RE.search(text)
    if match is None:
        raise DeviceNotFoundError(
            f"Cannot read the device string {spec!r}: expected TensorFlow's form, such as "
            f"'/gpu:0', 'GPU:1', 'cpu:0' or '/device:TPU:0'. {_describe_available()}."
        )
    task = _TASK_RE.search(text)
    process = int(task["task"]) if task else jax.process_index()
    candidates = _platform_devices(match["kind"], process)
    index = int(match["index"])
    if index >= len(candidates):
        raise DeviceNotFoundError(
            f"No device matches {spec!r}: process {process} has {len(candidates)} "
            f"{match['kind']} device(s), and {_describe_available()}. "
            "Name one of those, or run where that accelerator is."
        )
    return candidates[index]


def _is_logical_device(spec: object) -> bool:
    return isinstance(spec, LogicalDevice)


def resolve_devices(specs: Sequence[DeviceSpec] | None) -> list[jax.Device]:
    """Resolves a list of device specifications; ``None`` means all local devices.

    Raises:
      DeviceNotFoundError: a spec matches nothing.
      ValueError: the list is empty or names a device twice.
    """
    if specs is None:
        return list(jax.local_devices())
    if isinstance(specs, bool) or not isinstance(specs, str | jax.Device | Iterable):
        n = f"devices=jax.local_devices()[:{specs}]" if isinstance(specs, int) else "devices"
        raise DistributeArgumentError(
            f"devices must be a list of devices (jax.Devices, local indices or names such as "
            f"'/gpu:0'), got {specs!r} ({type(specs).__name__}); TensorFlow refuses it too. "
            f"For a number of devices write {n}; for one device, a list of it: devices=[0]."
        )
    if isinstance(specs, str | jax.Device) or _is_logical_device(specs):
        specs = [specs]
    devices = [resolve_device(s) for s in specs]
    if not devices:
        raise DistributeArgumentError(
            "A strategy needs at least one device; got an empty list. Leave devices out for "
            "every local device."
        )
    if len(set(devices)) != len(devices):
        raise DistributeArgumentError(
            f"Each device may appear once; got {list(specs)!r}, which names "
            f"{[str(d) for d in devices]}."
        )
    return devices


@contextlib.contextmanager
def device(spec: DeviceSpec) -> Iterator[jax.Device]:
    """Places the computations of a ``with`` block on one device.

    TensorFlow's ``with tf.device('/TPU:0'):`` becomes ``with phalanx.device('/TPU:0'):``.
    Arrays created and functions run inside the block go to that device
    (``jax.default_device``); arrays already placed elsewhere stay where they are.

    Args:
      spec: a ``jax.Device``, a local index, or a TensorFlow-style string.

    Yields:
      The ``jax.Device`` chosen.

    Examples:
      >>> import jax.numpy as jnp
      >>> with device("cpu:1") as d:
      ...     x = jnp.ones(3)
      >>> x.devices() == {d}
      True
    """
    dev = resolve_device(spec)
    with jax.default_device(dev):
        yield dev
