"""``tf.data.experimental.copy_to_device`` and ``prefetch_to_device``.

A phalanx dataset produces its elements on the host as numpy arrays.
``dataset.apply(copy_to_device("/gpu:0"))`` yields each element's numeric and
bool components as JAX arrays on that device instead (``jax.device_put``), so a
custom loop that steps on one device receives its batch already there.
``prefetch_to_device(device, buffer_size)`` is TensorFlow 2's definition:
``copy_to_device(device)`` followed by ``prefetch(buffer_size)``, so the copy of
the next elements runs on the prefetch thread while the current step computes.

As in TensorFlow, string components stay in host memory (numpy ``object``
arrays of ``bytes``); `RaggedTensor` and `SparseTensor` components stay on the
host too (TensorFlow copies them). A component's dtype is the one JAX places:
``int64`` and ``float64`` become ``int32`` and ``float32`` unless
``jax_enable_x64`` is on, and ``element_spec`` says so.

Under a strategy, `Strategy.experimental_distribute_dataset` and `fit` already
read ahead onto every replica's device; these two functions are for the
one-device programs that TensorFlow writes with them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ..cluster import DeviceSpec, resolve_device
from ..errors import DatasetArgumentError, DatasetTypeError
from . import _structure as st
from ._dataset import Dataset
from ._map import _MapIterator


def _device(spec: Any, function: str, argument: str) -> jax.Device:
    if not isinstance(spec, jax.Device | str | int) or isinstance(spec, bool):
        raise DatasetArgumentError(
            f"{function}: {argument} must be a device name such as '/gpu:0' or '/cpu:0', an "
            f"index or a jax.Device, got {type(spec).__name__} {spec!r:.60}."
        )
    return resolve_device(spec)


def _on_device(leaf: Any, device: jax.Device) -> Any:
    if isinstance(leaf, np.ndarray | np.generic) and leaf.dtype.kind in "biuf":
        return jax.device_put(leaf, device)
    return leaf  # strings and composite tensors stay on the host, as module docstring says


def _placed_spec(spec: Any) -> Any:
    if isinstance(spec, st.TensorSpec) and spec.dtype.kind in "biuf":
        return st.TensorSpec(spec.shape, jax.dtypes.canonicalize_dtype(spec.dtype), spec.name)
    return spec


class CopyToDeviceDataset(Dataset):
    """``copy_to_device``: the input's elements with their arrays on one JAX device."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, device: jax.Device):
        self._input, self._device = input_dataset, device

    def _iterator(self, ctx):
        device = self._device
        place = functools.partial(st.map_structure, lambda leaf: _on_device(leaf, device))
        return _MapIterator(self._input._iterator(ctx), place)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return st.map_structure(_placed_spec, self._input.element_spec)


def copy_to_device(
    target_device: DeviceSpec, source_device: DeviceSpec = "/cpu:0"
) -> Callable[[Dataset], Dataset]:
    """A transformation for `Dataset.apply` that places each element on ``target_device``.

    ``tf.data.experimental.copy_to_device``: numeric and bool components become
    JAX arrays on the device; strings and composite tensors stay on the host.
    Transformations after it see JAX arrays (a ``map`` function may use
    ``jax.numpy`` on them); ``batch`` and the other transformations that
    assemble elements on the host bring them back to numpy.

    Args:
      target_device: The device: a TensorFlow-style name (``"/gpu:0"``,
        ``"/cpu:0"``, ``"/TPU:1"``), a device index or a ``jax.Device``.
      source_device: Where the dataset runs. phalanx datasets run on the host,
        so this must name a CPU device (TensorFlow's default ``"/cpu:0"``).

    Returns:
      A function from a `Dataset` to the copying `Dataset`, for `Dataset.apply`.

    Raises:
      DatasetArgumentError: A device is not a device name, index or
        ``jax.Device``, or ``source_device`` is not a CPU.
      DeviceNotFoundError: No device of that name exists here.

    Examples:
      >>> import phalanx
      >>> ds = phalanx.data.Dataset.range(3).apply(copy_to_device("/cpu:0"))
      >>> [int(x) for x in ds]
      [0, 1, 2]
    """
    device = _device(target_device, "copy_to_device", "target_device")
    source = _device(source_device, "copy_to_device", "source_device")
    if source.platform != "cpu":
        raise DatasetArgumentError(
            f"copy_to_device: source_device must be a CPU device, got {source_device!r} "
            f"({source.platform}): phalanx datasets produce their elements on the host. Leave "
            "source_device at its default '/cpu:0'."
        )

    def apply(dataset: Dataset) -> Dataset:
        if not isinstance(dataset, Dataset):
            raise DatasetTypeError(
                f"copy_to_device applies to a phalanx.data.Dataset, got {type(dataset).__name__}."
            )
        return CopyToDeviceDataset(dataset, device)

    return apply


def prefetch_to_device(
    device: DeviceSpec, buffer_size: int | None = None
) -> Callable[[Dataset], Dataset]:
    """A transformation for `Dataset.apply`: `copy_to_device` then `Dataset.prefetch`.

    ``tf.data.experimental.prefetch_to_device``: the elements are placed on
    ``device`` ahead of the consumer, on a background thread, so the copy of
    the next batch overlaps the current step. As in TensorFlow it should be the
    last transformation of the pipeline.

    Args:
      device: The device: a TensorFlow-style name (``"/gpu:0"``), a device
        index or a ``jax.Device``.
      buffer_size: How many elements to place ahead: an int >= 0, or ``None`` /
        ``AUTOTUNE`` to let phalanx choose (as TensorFlow's default).

    Returns:
      A function from a `Dataset` to the prefetching `Dataset`, for `Dataset.apply`.

    Raises:
      DatasetArgumentError: ``device`` is not a device name, index or
        ``jax.Device``, or ``buffer_size`` is not an int >= 0, ``AUTOTUNE`` or ``None``.
      DeviceNotFoundError: No device of that name exists here.

    Examples:
      >>> import phalanx
      >>> ds = phalanx.data.Dataset.range(4).batch(2).apply(prefetch_to_device("/cpu:0", 1))
      >>> [x.tolist() for x in ds]
      [[0, 1], [2, 3]]
    """
    copy = copy_to_device(device)
    if buffer_size is not None and (
        isinstance(buffer_size, bool) or not isinstance(buffer_size, int | np.integer)
    ):
        raise DatasetArgumentError(
            f"prefetch_to_device: buffer_size must be an int >= 0, AUTOTUNE (-1) or None, got "
            f"{type(buffer_size).__name__} {buffer_size!r:.60}."
        )

    def apply(dataset: Dataset) -> Dataset:
        return copy(dataset).prefetch(None if buffer_size is None else int(buffer_size))

    return apply
