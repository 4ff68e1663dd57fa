"""Files wherever they live: local paths and ``gs://``, ``s3://``, ``memory://``, ``file://`` URLs.

Every path phalanx reads or writes (``Dataset.list_files``, ``TFRecordDataset``
and the other file sources, ``TFRecordWriter``, ``Dataset.cache(filename)``,
``save_weights``/``load_weights``, ``TensorBoard`` and ``CSVLogger`` logs,
``phalanx records``) goes through one layer built on fsspec, so a URL works
wherever a local path does. ``gs://`` needs ``pip install "phalanx[gcs]"``,
``s3://`` ``pip install "phalanx[s3]"``; without them such a path raises
``FileSystemNotInstalledError`` naming the extra.

``phalanx.io.gfile`` has ``tf.io.gfile``'s names (``exists``, ``glob``,
``makedirs``, ``GFile`` ...) for the seeds' one-line ports. ``tf.io``'s
TFRecord names that ``phalanx.data`` implements (``parse_single_example``,
``parse_example``, ``FixedLenFeature``, ``VarLenFeature``,
``FixedLenSequenceFeature``, ``TFRecordWriter``, ``TFRecordOptions``) are here
too, as the same objects: ``phalanx.io.parse_single_example is
phalanx.data.parse_single_example``.
"""

from typing import Any

from . import gfile as gfile

# tf.io's names implemented in phalanx.data, which imports this package's _fs:
# looked up on first use (PEP 562), so neither package imports the other first.
_FROM_DATA = (
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "parse_example",
    "parse_single_example",
)

__all__ = ["gfile", *_FROM_DATA]


def __getattr__(name: str) -> Any:
    if name in _FROM_DATA:
        from .. import data

        value = getattr(data, name)
        globals()[name] = value
        return value
    raise AttributeError(
        f"module 'phalanx.io' has no attribute {name!r}; tf.io's TFRecord names that phalanx "
        f"implements are {', '.join(_FROM_DATA)} (also in phalanx.data)."
    )


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_DATA))
