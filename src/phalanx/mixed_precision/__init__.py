"""Mixed precision with Keras's names (``keras.mixed_precision``).

``set_global_policy("mixed_bfloat16")`` before building a model makes ``fit``,
``evaluate`` and ``predict`` compute in bfloat16 with float32 weights,
optimizer state, outputs and loss; ``"mixed_float16"`` computes in float16
with dynamic loss scaling (``LossScaleOptimizer``, added by ``compile``).
See ``phalanx.mixed_precision._policy``.
"""

from ._policy import LossScaleOptimizer as LossScaleOptimizer
from ._policy import Policy as Policy
from ._policy import global_policy as global_policy
from ._policy import set_global_policy as set_global_policy

#: Keras 3's names for the same.
DTypePolicy = Policy
dtype_policy = global_policy
set_dtype_policy = set_global_policy

__all__ = [
    "DTypePolicy",
    "LossScaleOptimizer",
    "Policy",
    "dtype_policy",
    "global_policy",
    "set_dtype_policy",
    "set_global_policy",
]
