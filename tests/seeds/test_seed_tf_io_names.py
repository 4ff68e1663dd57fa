"""TFRecord code ported by renaming ``tf.io.X`` to ``phalanx.io.X`` runs.

TensorFlow 2.21 keeps the parsing specs, the parsers and the record writer in
``tf.io`` (``tf.io.parse_single_example``, ``tf.io.FixedLenFeature``,
``tf.io.TFRecordWriter`` ...); phalanx implements them in ``phalanx.data``.
``phalanx.io`` gives the same objects under ``tf.io``'s names.
"""

import numpy as np
import pytest

import phalanx
from phalanx import data

TF_IO_NAMES = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "VarLenFeature",
    "TFRecordOptions",
    "TFRecordWriter",
    "parse_example",
    "parse_single_example",
]


@pytest.mark.parametrize("name", TF_IO_NAMES)
def test_tf_io_name_is_phalanx_data_object(name):
    assert getattr(phalanx.io, name) is getattr(data, name)
    assert name in phalanx.io.__all__
    assert name in dir(phalanx.io)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="serialize_tensor"):
        phalanx.io.serialize_tensor  # noqa: B018 (not implemented: tf.io's tensor protos)


def test_tfrecord_program_ported_by_renaming_tf_io(tmp_path):
    # The TFRecord guide's program with tf.io.* renamed to phalanx.io.*.
    path = str(tmp_path / "images.tfrecord")
    with phalanx.io.TFRecordWriter(path) as writer:
        for label in (3, 7):
            image = np.full(4, label, np.float32)
            writer.write(data.serialize_example({"image": image, "label": np.array([label])}))
    spec = {
        "image": phalanx.io.FixedLenFeature([4], np.float32),
        "label": phalanx.io.FixedLenFeature([], np.int64),
        "extra": phalanx.io.VarLenFeature(np.int64),
    }
    ds = data.TFRecordDataset(path).map(lambda r: phalanx.io.parse_single_example(r, spec))
    parsed = list(ds)
    assert [int(p["label"]) for p in parsed] == [3, 7]
    np.testing.assert_array_equal(parsed[1]["image"], np.full(4, 7, np.float32))
    batch = phalanx.io.parse_example(list(data.TFRecordDataset(path)), spec)
    np.testing.assert_array_equal(batch["label"], [3, 7])
