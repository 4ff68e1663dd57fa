"""Dataset.save / Dataset.load (issue 28 item 7): the elements come back as they went in.

TF 2.21's docstring example: range(2).save(path); load(path) -> [0, 1]. The folder format
is phalanx's own (docs/input_pipelines.md says so), so no TF bytes are compared.
"""

import json

import numpy as np
import pytest
from data_support import elements, same_elements

from phalanx.data import Dataset, TensorSpec
from phalanx.errors import DatasetArgumentError, DatasetTypeError


def test_the_tf_docstring_example(tmp_path):
    Dataset.range(2).save(str(tmp_path / "saved_data"))
    loaded = Dataset.load(str(tmp_path / "saved_data"))
    assert elements(loaded) == [0, 1]
    assert loaded.element_spec == TensorSpec((), np.int64) and loaded.cardinality() == 2


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_nested_elements_round_trip_with_shards(tmp_path, compression):
    ds = Dataset.from_tensor_slices(
        {
            "image": np.arange(12, dtype=np.float32).reshape(6, 2),
            "label": np.arange(6, dtype=np.int64),
            "name": np.array([b"a\x00", b"b", b"", b"d", b"e\x00\x00", b"f"], dtype=object),
        }
    )
    ds.save(tmp_path / "d", compression=compression, shard_func=lambda e: e["label"] % 2)
    loaded = Dataset.load(tmp_path / "d", compression=compression)
    want = [e for k in (0, 1) for e in list(ds)[k::2]]  # shard 0, then shard 1
    got = list(loaded)
    assert len(got) == 6 and all(same_elements(a, b) for a, b in zip(got, want, strict=True))
    assert loaded.element_spec == ds.element_spec
    meta = json.loads((tmp_path / "d" / "dataset_spec.json").read_text())
    assert meta["shards"] == ["shard_00000.npz", "shard_00001.npz"] and meta["counts"] == [3, 3]


def test_loaded_dataset_batches_and_resumes(tmp_path):
    Dataset.range(10).save(tmp_path / "r")
    ds = Dataset.load(tmp_path / "r").shuffle(10, seed=2).batch(3)
    it = iter(ds)
    first = next(it).tolist()
    rest = iter(ds)
    rest.set_state(json.loads(json.dumps(it.get_state())))
    after = elements(rest)
    assert after == elements(it) and sorted(first + [v for b in after for v in b]) == list(
        range(10)
    )


def test_unsupported_arguments_and_bad_folders_raise(tmp_path):
    with pytest.raises(DatasetArgumentError, match="checkpoint_args is not supported"):
        Dataset.range(2).save(tmp_path / "a", checkpoint_args={"x": 1})
    with pytest.raises(DatasetArgumentError, match="'SNAPPY' is not supported"):
        Dataset.range(2).save(tmp_path / "a", compression="SNAPPY")
    with pytest.raises(DatasetArgumentError, match="infinite"):
        Dataset.range(2).repeat().save(tmp_path / "a")
    with pytest.raises(DatasetTypeError, match="shard_func must return an int >= 0"):
        Dataset.range(2).save(tmp_path / "a", shard_func=lambda x: -1)
    with pytest.raises(DatasetArgumentError, match="holds no saved dataset"):
        Dataset.load(tmp_path / "nothing")
    Dataset.range(2).save(tmp_path / "b")
    with pytest.raises(DatasetTypeError, match="reader_func must return a Dataset"):
        Dataset.load(tmp_path / "b", reader_func=lambda datasets: [])
    with pytest.raises(DatasetTypeError, match="reader_func must be a function"):
        Dataset.load(tmp_path / "b", reader_func=3)
    with pytest.raises(DatasetArgumentError, match="does not match"):
        Dataset.load(tmp_path / "b", element_spec=(TensorSpec((), np.int64),) * 2)
