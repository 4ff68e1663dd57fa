"""``phalanx.utils.timeseries_dataset_from_array``: Keras 3's windows, targets, batches, errors.

TensorFlow is not installed, so Keras's own function runs its grain path with a stand-in of
grain's three calls it makes (``MapDataset.source``, ``ZipMapDataset``, ``batch``); without
shuffling that path gives the same elements as Keras's tf.data path. Keras's test file's
expected values are checked too, and a ``fit`` on the windows runs.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras.src.utils import timeseries_dataset_utils as keras_ts

import phalanx as px


class _Grain:
    """The part of grain that Keras's ``_timeseries_dataset_grain`` uses, on lists."""

    class _Ds(list):
        def to_iter_dataset(self):
            return self

        def batch(self, batch_size, batch_fn):
            return [batch_fn(self[i : i + batch_size]) for i in range(0, len(self), batch_size)]

    class MapDataset:
        @staticmethod
        def source(values):
            return _Grain._Ds(values)

    class experimental:
        @staticmethod
        def ZipMapDataset(datasets):
            return _Grain._Ds(zip(*datasets, strict=True))


def _keras(monkeypatch, *args, **kwargs):
    monkeypatch.setattr(keras_ts, "grain", _Grain)
    return keras_ts.timeseries_dataset_from_array(*args, format="grain", **kwargs)


def _batches(dataset):
    return list(dataset.as_numpy_iterator())


_RNG = np.random.RandomState(0)
CASES = [
    (np.arange(100), np.arange(100), {"sequence_length": 9, "batch_size": 16}),
    (np.arange(100), None, {"sequence_length": 5, "sequence_stride": 3, "batch_size": 7}),
    (np.arange(100), np.arange(100) * 2, {"sequence_length": 5, "sampling_rate": 2}),
    (np.arange(20), np.arange(20), {"sequence_length": 3, "start_index": 4, "end_index": 15}),
    (np.arange(20), np.arange(10), {"sequence_length": 2, "batch_size": 4}),  # fewer targets
    (_RNG.rand(50, 3).astype("float32"), _RNG.rand(50).astype("float32"), {"sequence_length": 6}),
    (
        np.arange(30).reshape(15, 2),
        np.arange(15),
        {"sequence_length": 4, "batch_size": 5, "sequence_stride": 2, "sampling_rate": 3},
    ),
    (np.arange(10), None, {"sequence_length": 20}),  # no window fits
]


@pytest.mark.parametrize("data, targets, kwargs", CASES)
def test_windows_and_targets_match_keras(monkeypatch, data, targets, kwargs):
    ours = _batches(px.utils.timeseries_dataset_from_array(data, targets, **kwargs))
    theirs = _keras(monkeypatch, data, targets, **kwargs)
    assert len(ours) == len(theirs)
    for mine, keras_batch in zip(ours, theirs, strict=True):
        mine = mine if targets is not None else (mine,)
        keras_batch = keras_batch if targets is not None else (keras_batch,)
        for a, b in zip(mine, keras_batch, strict=True):
            np.testing.assert_array_equal(a, np.asarray(b))
            # Keras's grain path stacks ints as int32 (jax); its tf.data path keeps int64
            assert a.dtype == np.asarray(b).dtype or data.dtype.kind == "i"


def test_unbatched_windows_match_keras(monkeypatch):
    data, targets = np.arange(30), np.arange(30) * 10
    ours = _batches(px.utils.timeseries_dataset_from_array(data, targets, 4, batch_size=None))
    theirs = _keras(monkeypatch, data, targets, 4, batch_size=None)
    assert len(ours) == len(theirs) == 27
    for (x, y), (kx, ky) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(x, kx)
        assert int(y) == int(ky)


def test_keras_test_file_values():
    """keras/src/utils/timeseries_dataset_utils_test.py's basics (``test_basics``)."""
    data = np.arange(100)
    targets = data * 2
    batches = _batches(
        px.utils.timeseries_dataset_from_array(data, targets, sequence_length=9, batch_size=5)
    )
    assert len(batches) == 19
    for i, (inputs, target) in enumerate(batches):
        assert inputs.shape == ((5, 9) if i < 18 else (2, 9))
        np.testing.assert_array_equal(inputs[0], np.arange(i * 5, i * 5 + 9))
        np.testing.assert_array_equal(target[0], 2 * i * 5)


def test_shuffle_keeps_every_window_with_its_target_and_seed_repeats():
    data = np.arange(100)
    kwargs = {"sequence_length": 5, "batch_size": 8, "shuffle": True, "seed": 123}
    first = _batches(px.utils.timeseries_dataset_from_array(data, data * 3, **kwargs))
    again = _batches(px.utils.timeseries_dataset_from_array(data, data * 3, **kwargs))
    x = np.concatenate([b[0] for b in first])
    y = np.concatenate([b[1] for b in first])
    np.testing.assert_array_equal(x[:, 0] * 3, y)
    np.testing.assert_array_equal(np.sort(x[:, 0]), np.arange(96))
    assert not np.array_equal(x[:, 0], np.arange(96))
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a[0], b[0])


def test_keras_shuffle_test():
    """Keras's ``test_shuffle_tf``: shuffled, each epoch anew, the same for the same seed."""
    data = np.arange(10)
    kwargs = {"sequence_length": 5, "batch_size": 1, "shuffle": True, "seed": 123}
    dataset = px.utils.timeseries_dataset_from_array(data, data * 2, **kwargs)
    epochs = [[x for x, _ in dataset.as_numpy_iterator()] for _ in range(4)]
    x, y = next(iter(dataset.take(1).as_numpy_iterator()))
    assert not np.array_equal(x[0], np.arange(5))
    np.testing.assert_array_equal(x[:, 0] * 2, y)
    assert any(not np.array_equal(e[0], epochs[0][0]) for e in epochs[1:])
    again = px.utils.timeseries_dataset_from_array(data, data * 2, **kwargs)
    np.testing.assert_array_equal(next(iter(again.as_numpy_iterator()))[0], epochs[0][0])


def test_an_unseeded_shuffle_follows_numpy_s_global_seed_as_keras():
    """Keras draws the seed with ``np.random.randint``: ``set_random_seed`` makes it repeat."""
    runs = []
    for _ in range(2):
        px.utils.set_random_seed(5)
        dataset = px.utils.timeseries_dataset_from_array(
            np.arange(50), None, 3, batch_size=10, shuffle=True
        )
        runs.append(np.concatenate(list(dataset.as_numpy_iterator())))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"start_index": -1}, "`start_index` must be 0 or greater"),
        ({"start_index": 10}, "`start_index` must be lower than the length"),
        ({"start_index": 5, "end_index": 5}, "`end_index` must be higher than `start_index`"),
        ({"end_index": 10}, "`end_index` must be lower than the length"),
        ({"end_index": -2}, "`end_index` must be higher than 0"),
        ({"sampling_rate": 0}, "`sampling_rate` must be higher than 0"),
        ({"sampling_rate": 10}, "`sampling_rate` must be lower than the length"),
        ({"sequence_stride": 0}, "`sequence_stride` must be higher than 0"),
        ({"sequence_stride": 10}, "`sequence_stride` must be lower than the length"),
    ],
)
def test_argument_errors_match_keras(kwargs, match):
    data = np.arange(10)
    with pytest.raises(ValueError, match=match):
        keras.utils.timeseries_dataset_from_array(data, None, 3, **kwargs)
    with pytest.raises(px.errors.UtilsArgumentError, match=match):
        px.utils.timeseries_dataset_from_array(data, None, 3, **kwargs)


def test_fit_on_the_windows_runs():
    """The TF time series tutorial's shape of input: windows of features, a target each."""
    series = np.sin(np.arange(300, dtype=np.float32) / 10)[:, None]
    dataset = px.utils.timeseries_dataset_from_array(
        series[:-8], series[8:, 0], sequence_length=8, batch_size=32
    )
    model = px.Sequential([px.layers.Input((8, 1)), px.layers.Flatten(), px.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(dataset, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert np.isfinite(history.history["loss"]).all()
