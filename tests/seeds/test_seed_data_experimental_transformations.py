"""The TPU-era ``tf.data.experimental`` transformations of seed 003's time (TensorFlow 1.11+
Colab TPU pipelines), still in TensorFlow 2.21, ported with ``tf.data`` -> ``phalanx.data``:
``ds.apply(map_and_batch(...))``, ``shuffle_and_repeat``, ``parallel_interleave`` over
TFRecord files, ``enumerate_dataset``, ``scan``, ``take_while``, ``unbatch``,
``get_single_element``, and the ``Options`` groups those pipelines set
(``experimental_optimization``, ``autotune``, ``experimental_threading``). AttributeError
before. Expected values from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset

E = phalanx.data.experimental


def test_map_and_batch_and_shuffle_and_repeat_as_tf():
    batched = Dataset.range(6).apply(E.map_and_batch(lambda x: x * 2, 4))
    assert [b.tolist() for b in batched] == [[0, 2, 4, 6], [8, 10]]
    dropped = Dataset.range(6).apply(E.map_and_batch(lambda x: x * 2, 4, drop_remainder=True))
    assert [b.tolist() for b in dropped] == [[0, 2, 4, 6]]
    repeated = Dataset.range(6).apply(E.shuffle_and_repeat(6, count=2, seed=1))
    assert repeated.cardinality() == 12
    values = [int(x) for x in repeated]
    assert sorted(values[:6]) == sorted(values[6:]) == list(range(6))
    assert values[:6] != values[6:]  # reshuffled each repetition, as TF
    with pytest.raises(TypeError, match=r"ds.apply\(phalanx.data.experimental.map_and_batch"):
        E.map_and_batch(lambda x: x, 2)([1, 2])


def test_parallel_interleave_of_tfrecord_files(tmp_path):
    files = []
    for shard in range(3):
        path = str(tmp_path / f"train-{shard}.tfrecord")
        with phalanx.data.TFRecordWriter(path) as writer:
            for i in range(4):
                writer.write(phalanx.data.serialize_example({"x": np.int64(10 * shard + i)}))
        files.append(path)
    spec = {"x": phalanx.data.FixedLenFeature([], np.int64)}

    def read(ds):
        return [int(r["x"]) for r in ds.map(lambda r: phalanx.data.parse_single_example(r, spec))]

    names = Dataset.from_tensor_slices(files)
    ordered = names.apply(E.parallel_interleave(phalanx.data.TFRecordDataset, cycle_length=2))
    want = names.interleave(phalanx.data.TFRecordDataset, cycle_length=2)
    assert read(ordered) == read(want)
    assert read(ordered)[:4] == [0, 10, 1, 11]  # TF 2.21's order
    sloppy = names.apply(
        E.parallel_interleave(phalanx.data.TFRecordDataset, cycle_length=3, sloppy=True)
    )
    assert sorted(read(sloppy)) == sorted(read(want))


def test_the_other_experimental_transformations():
    assert list(Dataset.range(3).apply(E.enumerate_dataset(5)).as_numpy_iterator()) == [
        (5, 0),
        (6, 1),
        (7, 2),
    ]
    running = Dataset.range(4).apply(E.scan(np.int64(0), lambda s, x: (s + x, s)))
    assert list(running.as_numpy_iterator()) == [0, 0, 1, 3]
    assert [int(x) for x in Dataset.range(9).apply(E.take_while(lambda x: x < 2))] == [0, 1]
    assert [int(x) for x in Dataset.range(5).batch(2).apply(E.unbatch())] == list(range(5))
    assert int(E.get_single_element(Dataset.range(1))) == 0


def test_tpu_pipeline_options_are_accepted():
    options = phalanx.data.Options()
    options.experimental_deterministic = False
    options.experimental_optimization.map_parallelization = True
    options.experimental_optimization.parallel_batch = True
    options.autotune.enabled = True
    options.autotune.ram_budget = 1 << 30
    options.experimental_threading.private_threadpool_size = 4
    assert options.threading.private_threadpool_size == 4
    assert isinstance(options.experimental_optimization, E.OptimizationOptions)
    assert isinstance(options.autotune, E.AutotuneOptions)
    ds = Dataset.range(5).map(lambda x: x + 1).with_options(options)
    assert ds.options().experimental_optimization.map_parallelization is True
    assert ds.options().autotune.ram_budget == 1 << 30
    assert sorted(int(x) for x in ds) == [1, 2, 3, 4, 5]
    assert phalanx.data.Options().experimental_optimization.map_parallelization is None


def test_assert_cardinality_gives_a_generator_its_length():
    rng = np.random.default_rng(0)
    x, y = rng.random((12, 3), dtype=np.float32), rng.integers(0, 2, 12)

    def gen():
        yield from zip(x, y, strict=True)

    signature = (
        phalanx.data.TensorSpec((3,), np.float32),
        phalanx.data.TensorSpec((), np.int64),
    )
    ds = Dataset.from_generator(gen, output_signature=signature).batch(4)
    assert ds.cardinality() == phalanx.data.UNKNOWN_CARDINALITY
    known = ds.apply(E.assert_cardinality(3))
    assert known.cardinality() == 3 and len(known) == 3
    model = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    model.compile(
        optimizer="sgd", loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    history = model.fit(known, epochs=2, verbose=0)
    assert history.params["steps"] == 3  # TF 2.21: 3
    with pytest.raises(ValueError, match="expected to contain 2 elements but contained at least 3"):
        list(Dataset.range(3).assert_cardinality(2))
    with pytest.raises(ValueError, match="expected to contain 5 elements but contained only 3"):
        list(Dataset.range(3).assert_cardinality(5))
    it = iter(Dataset.range(3).assert_cardinality(3))
    next(it)
    again = iter(Dataset.range(3).assert_cardinality(3))
    again.set_state(it.get_state())
    assert [int(v) for v in again] == [1, 2]
