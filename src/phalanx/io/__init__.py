"""Files wherever they live: local paths and ``gs://``, ``s3://``, ``memory://``, ``file://`` URLs.

Every path phalanx reads or writes (``Dataset.list_files``, ``TFRecordDataset``
and the other file sources, ``TFRecordWriter``, ``Dataset.cache(filename)``,
``save_weights``/``load_weights``, ``TensorBoard`` and ``CSVLogger`` logs,
``phalanx records``) goes through one layer built on fsspec, so a URL works
wherever a local path does. ``gs://`` needs ``pip install "phalanx[gcs]"``,
``s3://`` ``pip install "phalanx[s3]"``; without them such a path raises
``FileSystemNotInstalledError`` naming the extra.

``phalanx.io.gfile`` has ``tf.io.gfile``'s names (``exists``, ``glob``,
``makedirs``, ``GFile`` ...) for the seeds' one-line ports.
"""

from . import gfile as gfile

__all__ = ["gfile"]
