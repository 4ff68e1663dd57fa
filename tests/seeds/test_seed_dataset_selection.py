"""tf.data's ways to draw from several pipelines and to stop one early, as seed 002's readers
write them around its ``Dataset.from_tensor_slices((features, labels))`` pipeline:
``Dataset.choose_from_datasets``, ``Dataset.sample_from_datasets`` (class balancing, the
``tf.data.experimental`` spellings too) and ``take_while``. AttributeError in phalanx before.
Expected values from TensorFlow 2.21.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.data import Dataset


def _list(ds):
    return [int(x) for x in ds]


@pytest.mark.parametrize("stop, want", [(True, [0, 1]), (False, [0, 1, 10, 11])])
def test_choose_from_datasets_as_tf(stop, want):
    choice = Dataset.from_tensor_slices(np.array([0, 0, 0, 1, 1], np.int64))
    ds = Dataset.choose_from_datasets(
        [Dataset.range(2), Dataset.range(10, 13)], choice, stop_on_empty_dataset=stop
    )
    assert _list(ds) == want
    assert ds.cardinality() == phalanx.data.UNKNOWN_CARDINALITY
    assert ds.element_spec == phalanx.data.TensorSpec((), np.int64)
    endless = Dataset.choose_from_datasets(
        [Dataset.range(2).repeat(), Dataset.range(10, 13).repeat()], Dataset.range(2).repeat()
    )
    assert endless.cardinality() == phalanx.data.INFINITE_CARDINALITY
    assert _list(endless.take(5)) == [0, 10, 1, 11, 0]


def test_choose_from_datasets_refusals():
    two = [Dataset.range(2), Dataset.range(10, 13)]
    with pytest.raises(TypeError, match="scalar int64"):
        Dataset.choose_from_datasets(two, Dataset.from_tensor_slices(np.array([0, 1], np.int32)))
    with pytest.raises(TypeError, match="compatible element specs"):
        Dataset.choose_from_datasets(
            [Dataset.range(2), Dataset.range(2).map(lambda x: x.astype(np.float32))],
            Dataset.range(2),
        )
    with pytest.raises(ValueError, match=r"index out of range: 2 >= 2"):
        list(Dataset.choose_from_datasets(two, Dataset.from_tensor_slices(np.array([0, 2]))))


def test_sample_from_datasets_as_tf():
    features = np.arange(6.0, dtype=np.float32)
    labels = np.array([0, 0, 0, 1, 1, 1])
    by_class = [
        Dataset.from_tensor_slices((features[labels == c], labels[labels == c])) for c in (0, 1)
    ]
    ds = Dataset.sample_from_datasets(by_class, weights=[0.5, 0.5], seed=0)
    got = [(float(x), int(y)) for x, y in ds]
    # Every element once; each input keeps its order (TF 2.21: the same multiset).
    assert sorted(got) == [(float(x), int(y)) for x, y in zip(features, labels, strict=True)]
    for c in (0, 1):
        assert [x for x, y in got if y == c] == sorted(x for x, y in got if y == c)
    assert got == [(float(x), int(y)) for x, y in ds]  # seeded: the same order again
    assert ds.cardinality() == phalanx.data.UNKNOWN_CARDINALITY
    # A weight of 0 is never drawn; the default weights are uniform.
    only = Dataset.sample_from_datasets([Dataset.range(3), Dataset.range(10, 13)], [1.0, 0.0])
    assert _list(only) == [0, 1, 2]
    endless = Dataset.sample_from_datasets(
        [Dataset.range(3), Dataset.range(10, 13).repeat()], seed=1
    )
    assert endless.cardinality() == phalanx.data.INFINITE_CARDINALITY
    drawn = _list(endless.take(2000))
    assert [x for x in drawn if x < 10] == [0, 1, 2]  # then only the endless one
    assert set(drawn[-6:]) == {10, 11, 12}
    stopping = Dataset.sample_from_datasets(
        [Dataset.range(1), Dataset.range(10, 100)], seed=0, stop_on_empty_dataset=True
    )
    out = _list(stopping)  # ends at the first draw of the used-up range(1)
    assert out.count(0) == 1 and len(out) < 20 and out[-1] != 99
    experimental = phalanx.data.experimental
    assert experimental.sample_from_datasets(by_class, seed=3).element_spec == ds.element_spec
    chosen = experimental.choose_from_datasets(by_class, Dataset.range(2))
    assert [int(y) for _, y in chosen] == [0, 1]


def test_sample_from_datasets_refusals():
    two = [Dataset.range(2), Dataset.range(3)]
    with pytest.raises(ValueError, match="2 datasets and 3 weights"):
        Dataset.sample_from_datasets(two, weights=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        Dataset.sample_from_datasets(two, weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="at least one dataset"):
        Dataset.sample_from_datasets([])


@pytest.mark.parametrize("stop", [True, False])
def test_selection_iterators_checkpoint(stop):
    def make():
        return Dataset.sample_from_datasets(
            [Dataset.range(5).shuffle(5, seed=2), Dataset.range(10, 17).map(lambda x: x * 2)],
            seed=4,
            stop_on_empty_dataset=stop,
        )

    whole = _list(make())
    for cut in range(len(whole) + 1):
        it = iter(make())
        head = [int(next(it)) for _ in range(cut)]
        state = it.get_state()
        rest = iter(make())
        rest.set_state(state)
        assert head + _list(rest) == whole


def test_take_while_as_tf():
    ds = Dataset.range(5).take_while(lambda x: x < 3)
    assert _list(ds) == [0, 1, 2]
    assert ds.cardinality() == phalanx.data.UNKNOWN_CARDINALITY
    assert Dataset.range(5).repeat().take_while(lambda x: x < 3).cardinality() == -2
    pairs = Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 10))
    assert [int(b) for _, b in pairs.take_while(lambda a, b: b < 25)] == [0, 10, 20]
    it = iter(ds)
    next(it)
    state = it.get_state()
    again = iter(ds)
    again.set_state(state)
    assert [int(x) for x in again] == [1, 2]
    with pytest.raises(TypeError, match="scalar bool"):
        list(Dataset.range(3).take_while(lambda x: np.array([True, False])))


def test_sampled_classes_in_proportion_feed_fit_on_replicas():
    """Seed 002's pipeline, balanced by sampling per class, on 4 replicas."""
    rng = np.random.default_rng(0)
    features = rng.random((400, 4), dtype=np.float32)
    labels = (rng.random(400) < 0.1).astype(np.int64)  # 10% positives
    by_class = [
        Dataset.from_tensor_slices((features[labels == c], labels[labels == c])).repeat()
        for c in (0, 1)
    ]
    balanced = Dataset.sample_from_datasets(by_class, weights=[0.8, 0.2], seed=7)
    drawn = np.array([int(y) for _, y in balanced.take(5000)])
    assert 0.17 < drawn.mean() < 0.23
    strategy = phalanx.MirroredStrategy(devices=phalanx.config.list_logical_devices("CPU")[:4])
    with strategy.scope():
        model = phalanx.models.Sequential([phalanx.layers.Dense(2, input_shape=(4,))])
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    history = model.fit(balanced.batch(32), epochs=2, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 2
