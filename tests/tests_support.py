"""Helpers shared by tests: where the repository's test data lives."""

from pathlib import Path

# TFRecord files TensorFlow wrote, and what it read back (see its README.md).
TFRECORD_VECTORS = Path(__file__).resolve().parent / "data" / "tf_vectors"
