"""``ReduceOp``: how values from the replicas combine (tf.distribute.ReduceOp)."""

from __future__ import annotations

import enum

from ..errors import DistributedValueError


class ReduceOp(enum.Enum):
    """How per-replica values combine: ``SUM`` or ``MEAN``.

    Strings ``"SUM"``/``"sum"`` and ``"MEAN"``/``"mean"`` are accepted wherever a
    ``ReduceOp`` is.

    Examples:
      >>> ReduceOp.from_any("mean")
      <ReduceOp.MEAN: 'MEAN'>
    """

    SUM = "SUM"
    MEAN = "MEAN"

    @classmethod
    def from_any(cls, op: ReduceOp | str) -> ReduceOp:
        """Returns the ``ReduceOp`` that ``op`` names.

        Raises:
          DistributedValueError: ``op`` is not ``SUM`` or ``MEAN``.
        """
        if isinstance(op, cls):
            return op
        if isinstance(op, str) and op.upper() in cls.__members__:
            return cls[op.upper()]
        raise DistributedValueError(
            f"Unknown reduce op {op!r} ({type(op).__name__}): expected ReduceOp.SUM, "
            "ReduceOp.MEAN, or the strings 'SUM'/'MEAN'."
        )
