"""How examples reach the devices: a tf.data-style ``Dataset`` in pure numpy.

``phalanx.data`` mirrors ``tf.data``: the same names, the same element order
for deterministic transformations, checkpointable iterators, and a
vectorized path for in-memory arrays. It knows nothing of JAX, strategies or
models; ``phalanx.distribute`` puts its batches on devices.
"""

from . import experimental as experimental
from ._dataset import Dataset as Dataset
from ._example import BytesList as BytesList
from ._example import Example as Example
from ._example import Feature as Feature
from ._example import Features as Features
from ._example import FloatList as FloatList
from ._example import Int64List as Int64List
from ._example import serialize_example as serialize_example
from ._iterator import Iterator as Iterator
from ._options import AUTOTUNE as AUTOTUNE
from ._options import INFINITE_CARDINALITY as INFINITE_CARDINALITY
from ._options import UNKNOWN_CARDINALITY as UNKNOWN_CARDINALITY
from ._options import AutoShardPolicy as AutoShardPolicy
from ._options import DistributeOptions as DistributeOptions
from ._options import Options as Options
from ._options import ThreadingOptions as ThreadingOptions
from ._parse_example import FixedLenFeature as FixedLenFeature
from ._parse_example import FixedLenSequenceFeature as FixedLenSequenceFeature
from ._parse_example import RaggedTensor as RaggedTensor
from ._parse_example import SparseTensor as SparseTensor
from ._parse_example import VarLenFeature as VarLenFeature
from ._parse_example import parse_example as parse_example
from ._parse_example import parse_single_example as parse_single_example
from ._record_datasets import FixedLengthRecordDataset as FixedLengthRecordDataset
from ._record_datasets import TextLineDataset as TextLineDataset
from ._record_datasets import TFRecordDataset as TFRecordDataset
from ._shard import auto_shard as auto_shard
from ._sources import FileSourceDataset as FileSourceDataset
from ._structure import TensorSpec as TensorSpec
from ._tfrecord_io import TFRecordOptions as TFRecordOptions
from ._tfrecord_io import TFRecordWriter as TFRecordWriter
from ._tfrecord_io import tf_record_iterator as tf_record_iterator

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
    "RaggedTensor",
    "SparseTensor",
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
