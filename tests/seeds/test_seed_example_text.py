"""The TFRecord tutorial's reading loop, ported with ``tf.train``/``tf.data`` ->
``phalanx.data`` (docs/tfrecord.md's table) and ``raw_record.numpy()`` -> ``raw_record``
(elements are numpy already)::

    for raw_record in raw_dataset.take(1):
        example = tf.train.Example()
        example.ParseFromString(raw_record.numpy())
        print(example)

phalanx had no ``ParseFromString`` (AttributeError), ``Example.FromString`` of a dataset's
record (a 0-d bytes array) read the array's memory instead of its bytes, and ``print``
showed a repr instead of protobuf's text format. Expected text from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.data import BytesList, Example, Feature, Features, FloatList, Int64List

WANT = """features {
  feature {
    key: "b"
    value {
      bytes_list {
        value: "abc"
        value: "\\n\\000\\377\\"q\\'\\\\"
        value: "\\303\\251"
      }
    }
  }
  feature {
    key: "a"
    value {
      float_list {
        value: 1
        value: 0.636961699
        value: 1e-07
        value: 3e+10
        value: inf
        value: -2.5
        value: nan
        value: 123456792
      }
    }
  }
  feature {
    key: "c"
    value {
      int64_list {
        value: 0
        value: -3
        value: 1099511627776
      }
    }
  }
  feature {
    key: "d"
    value {
    }
  }
  feature {
    key: "e"
    value {
      float_list {
      }
    }
  }
}
"""


def _example():
    floats = [1.0, 0.6369617, 1e-7, 3e10, float("inf"), -2.5, float("nan"), 123456789.0]
    return Example(
        features=Features(
            feature={
                "b": Feature(bytes_list=BytesList(value=[b"abc", b"\n\x00\xff\"q'\\", "é"])),
                "a": Feature(float_list=FloatList(value=floats)),
                "c": Feature(int64_list=Int64List(value=[0, -3, 2**40])),
                "d": Feature(),
                "e": Feature(float_list=FloatList(value=[])),
            }
        )
    )


def test_print_is_protobuf_text_format():
    # TensorFlow prints the same lines; its map order is protobuf's (hash) order, phalanx's
    # the order of the record (here the order the features were given in).
    assert str(_example()) == WANT
    assert str(Example()) == ""


def test_tutorial_reading_loop(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    with phalanx.data.TFRecordWriter(path) as writer:
        writer.write(_example().SerializeToString())
    raw_dataset = phalanx.data.TFRecordDataset([path])
    for raw_record in raw_dataset.take(1):
        example = Example()
        assert example.ParseFromString(raw_record) == len(_example().SerializeToString())
        assert str(example) == WANT
        assert Example.FromString(raw_record) == example
    assert example.features.feature["c"].int64_list.value.tolist() == [0, -3, 2**40]
    assert Example.FromString(np.bytes_(_example().SerializeToString())) == example
    with pytest.raises(TypeError, match="one serialized record"):
        Example.FromString(np.array([b"a", b"b"], dtype=object))


def test_tutorial_writes_a_dataset_of_records(tmp_path):
    """``writer = tf.data.experimental.TFRecordWriter(filename); writer.write(dataset)``."""
    feature0 = np.array([False, True, True])
    feature1 = np.array([4, 0, 2])
    features_dataset = phalanx.data.Dataset.from_tensor_slices((feature0, feature1))

    def serialize_example(f0, f1):
        return phalanx.data.serialize_example({"feature0": f0, "feature1": f1})

    serialized_features_dataset = features_dataset.map(serialize_example)
    filename = str(tmp_path / "test.tfrecord")
    writer = phalanx.data.experimental.TFRecordWriter(filename)
    writer.write(serialized_features_dataset)
    with open(filename, "rb") as f:
        written = f.read()
    same = str(tmp_path / "same.tfrecord")
    with phalanx.data.TFRecordWriter(same) as one_by_one:
        for f0, f1 in zip(feature0, feature1, strict=True):
            one_by_one.write(serialize_example(f0, f1))
    with open(same, "rb") as f:
        assert written == f.read()
    spec = {"feature1": phalanx.data.FixedLenFeature([], np.int64, default_value=0)}
    parsed = phalanx.data.TFRecordDataset([filename]).map(
        lambda r: phalanx.data.parse_single_example(r, spec)
    )
    assert [int(p["feature1"]) for p in parsed] == [4, 0, 2]
    with pytest.raises(TypeError, match="scalar string elements"):
        writer.write(phalanx.data.Dataset.range(3))
