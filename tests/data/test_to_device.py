"""``tf.data.experimental.copy_to_device`` / ``prefetch_to_device`` and the other
``experimental`` names that are spelled as functions there (``at``, ``Counter``,
``RandomDataset``, ``save``/``load``, ``snapshot``), as a TF program writes them."""

import pathlib

import jax
import numpy as np
import pytest
from data_support import assert_equal_output_after_checkpoint, elements

import phalanx
from phalanx.data import Dataset, experimental
from phalanx.errors import DatasetArgumentError, DatasetTypeError, DeviceNotFoundError

X = np.arange(24, dtype=np.float32).reshape(12, 2)
Y = np.arange(12)


def _pipeline():
    return Dataset.from_tensor_slices((X, Y)).shuffle(12, seed=3).batch(5)


def test_prefetch_to_device_yields_the_input_elements_as_arrays_on_the_device():
    # TF 2: dataset.apply(tf.data.experimental.prefetch_to_device("/gpu:0")) as the last step.
    target = jax.devices()[3]
    ds = _pipeline().apply(experimental.prefetch_to_device("/cpu:3", buffer_size=2))
    got = list(ds)
    assert elements(got) == elements(_pipeline())
    for x, y in got:
        assert isinstance(x, jax.Array) and x.devices() == {target}
        assert y.devices() == {target}
    assert [len(y) for _, y in got] == [5, 5, 2]
    assert ds.cardinality() == 3


def test_element_spec_says_the_dtypes_jax_places():
    ds = Dataset.from_tensor_slices(
        {"f": np.zeros((3, 2), np.float64), "i": np.arange(3), "s": np.array([b"a", b"b", b"c"])}
    ).apply(experimental.copy_to_device("/cpu:0"))
    spec = ds.element_spec
    first = next(iter(ds))
    assert spec["f"].dtype == first["f"].dtype == np.float32  # jax_enable_x64 is off
    assert spec["i"].dtype == first["i"].dtype == np.int32
    assert first["s"] == b"a"  # strings stay in host memory, as TensorFlow keeps them


def test_a_map_after_copy_to_device_gets_jax_arrays():
    # TF: transformations after copy_to_device run on the target device.
    ds = Dataset.range(4).apply(experimental.copy_to_device(1)).map(lambda x: jax.numpy.square(x))
    assert [int(v) for v in ds] == [0, 1, 4, 9]


def test_the_iterator_restores_at_every_step():
    assert_equal_output_after_checkpoint(
        lambda: _pipeline().repeat(2).apply(experimental.prefetch_to_device("/cpu:0", 1))
    )


def test_auto_sharding_stops_at_the_copy_and_shards_the_elements_as_tf(tmp_path):
    # TF's auto-shard rewrite does not look through copy_to_device (auto_shard.cc's
    # pass-through ops do not list it): AUTO falls back to DATA, worker 1 of 2 keeps every
    # second element, as it does without the copy only when no reader is found.
    names = []
    for i in range(4):
        names.append(str(tmp_path / f"f{i}.txt"))
        pathlib.Path(names[-1]).write_text(f"{i}a\n{i}b\n")
    ds = Dataset.from_tensor_slices(names).flat_map(phalanx.data.TextLineDataset)
    ds = ds.apply(experimental.copy_to_device("/cpu:0"))
    sharded, policy, _ = phalanx.data.auto_shard(ds, 2, 1)
    assert policy == phalanx.data.AutoShardPolicy.DATA
    assert [np.asarray(x).item() for x in sharded] == [b"0b", b"1b", b"2b", b"3b"]
    unsharded_files, file_policy, _ = phalanx.data.auto_shard(ds._input, 2, 1)
    assert file_policy == phalanx.data.AutoShardPolicy.FILE  # without the copy: FILE
    assert [np.asarray(x).item() for x in unsharded_files] == [b"1a", b"1b", b"3a", b"3b"]


def test_a_distributed_dataset_splits_the_copied_batches_over_the_replicas():
    ds = Dataset.range(8).apply(experimental.copy_to_device("/cpu:0"))
    strategy = phalanx.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    dist = strategy.experimental_distribute_dataset(ds.batch(4))
    per_replica = [
        [np.asarray(v).tolist() for v in strategy.experimental_local_results(b)] for b in dist
    ]
    assert per_replica == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: experimental.copy_to_device(None), DatasetArgumentError, "target_device must be"),
        (lambda: experimental.copy_to_device("/gpu:0"), DeviceNotFoundError, "/gpu:0"),
        (
            lambda: experimental.prefetch_to_device("/cpu:0", 1.5),
            DatasetArgumentError,
            "buffer_size must be",
        ),
        (
            lambda: experimental.prefetch_to_device("/cpu:0", -3)(Dataset.range(2)),
            DatasetArgumentError,
            "buffer_size must be",
        ),
        (
            lambda: experimental.copy_to_device("/cpu:0")([1, 2]),
            DatasetTypeError,
            "applies to a phalanx.data.Dataset",
        ),
    ],
)
def test_bad_arguments_say_what_was_expected(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_at_counter_and_random_dataset_as_tf():
    # TF 2.21: tf.data.experimental.at(tf.data.Dataset.range(10, 20), 3) == 13;
    # Counter(2, 3) starts 2, 5, 8; RandomDataset(seed) == Dataset.random(seed).
    assert int(experimental.at(Dataset.range(10, 20), 3)) == 13
    assert [int(x) for x in experimental.Counter(2, 3).take(3)] == [2, 5, 8]
    assert elements(experimental.RandomDataset(7).take(4)) == elements(Dataset.random(7).take(4))
    with pytest.raises(DatasetArgumentError, match="out of range"):
        experimental.at(Dataset.range(3), 3)
    with pytest.raises(DatasetArgumentError, match="index must be an int >= 0"):
        experimental.at(Dataset.range(3), -1)


def test_save_load_and_snapshot_spelled_as_experimental_functions(tmp_path):
    ds = Dataset.range(6).map(lambda x: x * 2)
    experimental.save(ds, str(tmp_path / "saved"))
    assert elements(experimental.load(str(tmp_path / "saved"))) == elements(ds)
    snap = ds.apply(experimental.snapshot(str(tmp_path / "snap")))
    assert elements(snap) == elements(ds) == elements(snap)
    with pytest.raises(DatasetTypeError, match="save expects a phalanx.data.Dataset"):
        experimental.save([1, 2], str(tmp_path / "x"))
