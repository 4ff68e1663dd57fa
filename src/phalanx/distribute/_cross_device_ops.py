"""``tf.distribute``'s all-reduce choices (``MirroredStrategy(cross_device_ops=...)``).

TensorFlow lets a ``MirroredStrategy`` pick how replicas' values are summed:
``NcclAllReduce`` (its default on GPUs), ``HierarchicalCopyAllReduce`` (the
guides' choice where NCCL is missing), ``ReductionToOneDevice``. In phalanx
the sums happen inside the compiled step, and XLA chooses the collective for
the devices at hand, so these objects are accepted and recorded (for code that
passes them) and change nothing: the sums are the same, as in TensorFlow,
where the choice changes speed, not results.

Examples:
  >>> import phalanx
  >>> strategy = phalanx.MirroredStrategy(
  ...     cross_device_ops=phalanx.distribute.HierarchicalCopyAllReduce())
  >>> type(strategy.cross_device_ops).__name__
  'HierarchicalCopyAllReduce'
"""

from __future__ import annotations

from typing import Any

from ..errors import DistributeArgumentError


class CrossDeviceOps:
    """Base of the all-reduce choices (``tf.distribute.CrossDeviceOps``); XLA does the work."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _packs(num_packs: Any, name: str) -> int:
    if isinstance(num_packs, bool) or not isinstance(num_packs, int) or num_packs < 0:
        raise DistributeArgumentError(
            f"{name} requires num_packs >= 0, but {num_packs!r} is specified (an int; 1 by default)."
        )
    return num_packs


class NcclAllReduce(CrossDeviceOps):
    """``tf.distribute.NcclAllReduce(num_packs=1)``: accepted; XLA chooses the all-reduce."""

    def __init__(self, num_packs: int = 1):
        self.num_packs = _packs(num_packs, "NcclAllReduce")


class HierarchicalCopyAllReduce(CrossDeviceOps):
    """``tf.distribute.HierarchicalCopyAllReduce(num_packs=1)``: accepted; XLA chooses."""

    def __init__(self, num_packs: int = 1):
        self.num_packs = _packs(num_packs, "HierarchicalCopy")


class ReductionToOneDevice(CrossDeviceOps):
    """``tf.distribute.ReductionToOneDevice(reduce_to_device=None, accumulation_fn=None)``:
    accepted; XLA chooses the all-reduce."""

    def __init__(self, reduce_to_device: Any = None, accumulation_fn: Any = None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


def check_cross_device_ops(value: Any) -> CrossDeviceOps | None:
    """``value`` if it is None or a ``CrossDeviceOps``; else a ``DistributeArgumentError``."""
    if value is None or isinstance(value, CrossDeviceOps):
        return value
    raise DistributeArgumentError(
        "cross_device_ops must be None or one of phalanx.distribute.NcclAllReduce(), "
        f"HierarchicalCopyAllReduce(), ReductionToOneDevice(); got {type(value).__name__} "
        f"{value!r}. It changes nothing in phalanx (XLA chooses the all-reduce): leave it out."
    )
