"""How examples reach the devices: a tf.data-style ``Dataset`` in pure numpy.

``phalanx.data`` mirrors ``tf.data``: the same names, the same element order
for deterministic transformations, checkpointable iterators, and a
vectorized path for in-memory arrays. It knows nothing of JAX, strategies or
models; ``phalanx.distribute`` puts its batches on devices.
"""

from ._dataset import Dataset as Dataset
from ._iterator import Iterator as Iterator
from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import DistributeOptions as DistributeOptions
from ._options import Options as Options
from ._options import ThreadingOptions as ThreadingOptions
from ._shard import auto_shard as auto_shard
from ._sources import FileSourceDataset as FileSourceDataset
from ._structure import TensorSpec as TensorSpec

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "AutoShardPolicy",
    "Dataset",
    "DistributeOptions",
    "FileSourceDataset",
    "Iterator",
    "Options",
    "TensorSpec",
    "ThreadingOptions",
    "auto_shard",
]
