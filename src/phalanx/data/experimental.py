"""``tf.data.experimental``'s names that the seeds' programs spell that way.

TensorFlow moved these to ``tf.data`` itself; programs written for older
releases (``dataset.prefetch(tf.data.experimental.AUTOTUNE)``) still say
``experimental``, so they port with the one rename ``tf`` -> ``phalanx``. Each
name here is the same object as in :mod:`phalanx.data`.

Example:
  >>> import phalanx
  >>> phalanx.data.experimental.AUTOTUNE == phalanx.data.AUTOTUNE
  True
"""

from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import DistributeOptions as DistributeOptions

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "AutoShardPolicy",
    "DistributeOptions",
]
