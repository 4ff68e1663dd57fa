"""How examples reach the devices: a tf.data-style ``Dataset`` in pure numpy.

``phalanx.data`` mirrors ``tf.data``: the same names, the same element order
for deterministic transformations, checkpointable iterators, and a
vectorized path for in-memory arrays. It knows nothing of JAX, strategies or
models; ``phalanx.distribute`` puts its batches on devices.
"""

from ..io._composite import RaggedTensor as RaggedTensor
from ..io._composite import RaggedTensorSpec as RaggedTensorSpec
from ..io._composite import SparseTensor as SparseTensor
from ..io._composite import SparseTensorSpec as SparseTensorSpec
from ..io._example import BytesList as BytesList
from ..io._example import Example as Example
from ..io._example import Feature as Feature
from ..io._example import Features as Features
from ..io._example import FloatList as FloatList
from ..io._example import Int64List as Int64List
from ..io._example import serialize_example as serialize_example
from ..io._parse_example import FixedLenFeature as FixedLenFeature
from ..io._parse_example import FixedLenSequenceFeature as FixedLenSequenceFeature
from ..io._parse_example import RaggedFeature as RaggedFeature
from ..io._parse_example import SparseFeature as SparseFeature
from ..io._parse_example import VarLenFeature as VarLenFeature
from ..io._parse_example import parse_example as parse_example
from ..io._parse_example import parse_single_example as parse_single_example
from ..io._tfrecord import TFRecordOptions as TFRecordOptions
from ..io._tfrecord import TFRecordWriter as TFRecordWriter
from ..io._tfrecord import tf_record_iterator as tf_record_iterator
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
