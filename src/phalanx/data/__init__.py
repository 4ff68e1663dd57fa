"""How examples reach the devices: a tf.data-style ``Dataset`` in pure numpy.

``phalanx.data`` mirrors ``tf.data``: the same names, the same element order
for deterministic transformations, checkpointable iterators, and a
vectorized path for in-memory arrays. It knows nothing of JAX, strategies or
models; ``phalanx.distribute`` puts its batches on devices.
"""

from ..io import BytesList as BytesList
from ..io import Example as Example
from ..io import Feature as Feature
from ..io import Features as Features
from ..io import FixedLenFeature as FixedLenFeature
from ..io import FixedLenSequenceFeature as FixedLenSequenceFeature
from ..io import FloatList as FloatList
from ..io import Int64List as Int64List
from ..io import RaggedFeature as RaggedFeature
from ..io import RaggedTensor as RaggedTensor
from ..io import RaggedTensorSpec as RaggedTensorSpec
from ..io import SparseFeature as SparseFeature
from ..io import SparseTensor as SparseTensor
from ..io import SparseTensorSpec as SparseTensorSpec
from ..io import TFRecordOptions as TFRecordOptions
from ..io import TFRecordWriter as TFRecordWriter
from ..io import VarLenFeature as VarLenFeature
from ..io import parse_example as parse_example
from ..io import parse_single_example as parse_single_example
from ..io import serialize_example as serialize_example
from ..io import tf_record_iterator as tf_record_iterator
from . import experimental as experimental
from ._dataset import Dataset as Dataset
from ._iterator import Iterator as Iterator
from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import DistributeOptions as DistributeOptions
from ._options import Options as Options
from ._options import ThreadingOptions as ThreadingOptions
from ._record_datasets import FixedLengthRecordDataset as FixedLengthRecordDataset
from ._record_datasets import TextLineDataset as TextLineDataset
from ._record_datasets import TFRecordDataset as TFRecordDataset
from ._shard import auto_shard as auto_shard
from ._shard import with_input_shard as with_input_shard
from ._sources import FileSourceDataset as FileSourceDataset
from ._structure import NoneTensorSpec as NoneTensorSpec
from ._structure import TensorSpec as TensorSpec

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the iterator protocol
# and its saved state, background read-ahead, element specs; the batching step.
from ._batch import BatchDataset as BatchDataset
from ._iterator import STATE_FORMAT as STATE_FORMAT
from ._iterator import DatasetIterator as DatasetIterator
from ._iterator import new_root_seed as new_root_seed
from ._iterator import share_why as share_why
from ._prefetch import background as background

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "AutoShardPolicy",
    "Dataset",
    "DistributeOptions",
    "FileSourceDataset",
    "Iterator",
    "NoneTensorSpec",
    "Options",
    "TensorSpec",
    "ThreadingOptions",
    "auto_shard",
    "with_input_shard",
    "experimental",
    "BytesList",
    "Example",
    "Feature",
    "Features",
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "FixedLengthRecordDataset",
    "FloatList",
    "Int64List",
    "RaggedFeature",
    "RaggedTensor",
    "RaggedTensorSpec",
    "SparseFeature",
    "SparseTensor",
    "SparseTensorSpec",
    "TFRecordDataset",
    "TFRecordOptions",
    "TFRecordWriter",
    "TextLineDataset",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
    "serialize_example",
    "tf_record_iterator",
]
