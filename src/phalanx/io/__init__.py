"""Files wherever they live: local paths and ``gs://``, ``s3://``, ``memory://``, ``file://`` URLs.

Every path phalanx reads or writes (``Dataset.list_files``, ``TFRecordDataset``
and the other file sources, ``TFRecordWriter``, ``Dataset.cache(filename)``,
``save_weights``/``load_weights``, ``TensorBoard`` and ``CSVLogger`` logs,
``phalanx records``) goes through one layer built on fsspec, so a URL works
wherever a local path does. ``gs://`` needs ``pip install "phalanx[gcs]"``,
``s3://`` ``pip install "phalanx[s3]"``; without them such a path raises
``FileSystemNotInstalledError`` naming the extra.

``phalanx.io.gfile`` has ``tf.io.gfile``'s names (``exists``, ``glob``,
``makedirs``, ``GFile`` ...) so a TensorFlow program ports line for line. ``tf.io``'s
TFRecord and Example names (``parse_single_example``, ``parse_example``,
``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``,
``SparseFeature``, ``RaggedFeature``, ``TFRecordWriter``, ``TFRecordOptions``)
and the host-side values they parse to (``SparseTensor``, ``RaggedTensor`` and
their ``SparseTensorSpec``/``RaggedTensorSpec``) live here; ``phalanx.data`` re-exports
them as the same objects: ``phalanx.io.parse_single_example is
phalanx.data.parse_single_example``.
"""

from . import gfile as gfile
from ._composite import RaggedTensor as RaggedTensor
from ._composite import RaggedTensorSpec as RaggedTensorSpec
from ._composite import SparseTensor as SparseTensor
from ._composite import SparseTensorSpec as SparseTensorSpec
from ._csv import decode_csv as decode_csv
from ._parse_example import FixedLenFeature as FixedLenFeature
from ._parse_example import FixedLenSequenceFeature as FixedLenSequenceFeature
from ._parse_example import RaggedFeature as RaggedFeature
from ._parse_example import SparseFeature as SparseFeature
from ._parse_example import VarLenFeature as VarLenFeature
from ._parse_example import parse_example as parse_example
from ._parse_example import parse_single_example as parse_single_example
from ._tfrecord import TFRecordOptions as TFRecordOptions
from ._tfrecord import TFRecordWriter as TFRecordWriter

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the codecs' readers and
# helpers that `phalanx.data` builds its file datasets on (and re-exports tf.io's Example
# names from), the CSV columns, the callbacks' staged log writes, `phalanx records`'s reader.
from ._composite import stack_rows as stack_rows
from ._composite import stack_sparse as stack_sparse
from ._csv import Column as Column
from ._csv import columns as columns
from ._csv import csv_format as csv_format
from ._csv_reader import CsvReader as CsvReader
from ._csv_reader import text_rows as text_rows
from ._example import BytesList as BytesList
from ._example import Example as Example
from ._example import Feature as Feature
from ._example import Features as Features
from ._example import FloatList as FloatList
from ._example import Int64List as Int64List
from ._example import serialize_example as serialize_example
from ._lines_and_records import FixedLengthRecordReader as FixedLengthRecordReader
from ._lines_and_records import TextLineReader as TextLineReader
from ._parse_example import UniformRowLength as UniformRowLength
from ._staging import StagedDir as StagedDir
from ._staging import StagedFile as StagedFile
from ._tfrecord import RecordBlock as RecordBlock
from ._tfrecord import TFRecordReader as TFRecordReader
from ._tfrecord import guess_compression as guess_compression
from ._tfrecord import normalize_compression_type as normalize_compression_type
from ._tfrecord import tf_record_iterator as tf_record_iterator

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "RaggedFeature",
    "RaggedTensor",
    "RaggedTensorSpec",
    "SparseFeature",
    "SparseTensor",
    "SparseTensorSpec",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "decode_csv",
    "gfile",
    "parse_example",
    "parse_single_example",
]
