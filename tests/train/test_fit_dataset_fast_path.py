"""fit on an in-memory ``Dataset``: its arrays placed once, its batches read as indices.

A ``Dataset.from_tensor_slices(...)`` -> ``shuffle``/``cache``/``repeat`` ->
``batch`` [-> ``prefetch``] pipeline feeds ``fit``, ``evaluate`` and
``predict`` the indices of the batches it yields, and the compiled program
gathers the rows on the devices. What must not change: the same batches in
the same order (so the history and weights of the host-stacked path, to
float rounding: XLA may fuse the device gather into the step differently),
each element once, and the iterator's saved position.
The reference is the same pipeline with an identity ``map`` after ``batch``,
which the index path does not take.
"""

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.data import _index_batches as fp
from phalanx.data._iterator import ArraysAccess

FEATURES, CLASSES, N = 6, 3, 100


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, N)  # int64, as numpy makes them
    x = rng.normal(size=(N, FEATURES)) + y[:, None]  # float64
    sw = rng.uniform(0.5, 2.0, N)
    return x, y, sw


@pytest.fixture(scope="module")
def weights0():
    model = phalanx.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
    model.build()
    return model.get_weights()


def _model(devices: int, spe: int, weights0):
    strategy = (
        phalanx.OneDeviceStrategy(jax.devices()[0])
        if devices == 1
        else phalanx.MirroredStrategy(jax.devices()[:devices])
    )
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(FEATURES,)), layers.Dense(CLASSES)])
        model.build()
        model.set_weights(weights0)
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


def _assert_same(fast, slow, h_fast, h_slow):
    assert h_fast.history.keys() == h_slow.history.keys()
    for key, values in h_fast.history.items():
        np.testing.assert_allclose(values, h_slow.history[key], rtol=1e-6, err_msg=key)
    for a, b in zip(fast.get_weights(), slow.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def _streamed(ds):
    """The same batches, stacked on the host (a map after batch is not read as indices)."""
    return ds.map(lambda *parts: parts)


@pytest.fixture
def gathers(monkeypatch):
    """Counts host gathers of in-memory arrays (the host-stacked path makes one per batch)."""
    count = [0]
    gather = ArraysAccess.gather

    def counted(self, idx):
        count[0] += 1
        return gather(self, idx)

    monkeypatch.setattr(ArraysAccess, "gather", counted)
    return count


@pytest.mark.parametrize("devices,spe", [(1, 1), (1, 3), (2, 3), (2, 50)])
def test_fit_reads_indices_and_trains_as_the_host_stacked_path(
    data, weights0, gathers, devices, spe
):
    x, y, sw = data

    def pipeline():  # 100 = 6 x 16 + 4: a short last batch, padded and masked
        return (
            phalanx.data.Dataset.from_tensor_slices((x, y, sw))
            .shuffle(40, seed=3)
            .batch(16)
            .prefetch(2)
        )

    fast = _model(devices, spe, weights0)
    h_fast = fast.fit(pipeline(), epochs=3, verbose=0, class_weight={0: 2.0, 1: 1.0, 2: 0.5})
    assert gathers[0] == 0  # no batch was gathered on the host
    slow = _model(devices, spe, weights0)
    h_slow = slow.fit(
        _streamed(pipeline()), epochs=3, verbose=0, class_weight={0: 2.0, 1: 1.0, 2: 0.5}
    )
    assert gathers[0] == 3 * 7
    _assert_same(fast, slow, h_fast, h_slow)


def test_evaluate_and_predict_read_indices_too(data, weights0, gathers):
    x, y, _ = data
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(32)
    model = _model(2, 2, weights0)
    logs = model.evaluate(ds, verbose=0, return_dict=True)
    fast_predictions = model.predict(phalanx.data.Dataset.from_tensor_slices(x).batch(32))
    assert gathers[0] == 0
    predictions = model.predict(_streamed(phalanx.data.Dataset.from_tensor_slices(x).batch(32)))
    slow_logs = model.evaluate(_streamed(ds), verbose=0, return_dict=True)
    np.testing.assert_allclose(list(logs.values()), list(slow_logs.values()), rtol=1e-6)
    np.testing.assert_allclose(fast_predictions, predictions, rtol=1e-6)
    assert fast_predictions.shape == (N, CLASSES)


def test_a_cache_filling_first_then_read_as_indices(data, weights0):
    """The first epoch fills the cache (batches come as data), later ones index the cache."""
    x, y, _ = data

    def pipeline():
        return (
            phalanx.data.Dataset.from_tensor_slices((x, y))
            .map(lambda a, b: (a * 2.0, b))
            .cache()
            .shuffle(N, seed=1)
            .batch(20, drop_remainder=True)
        )

    fast = _model(1, 2, weights0)
    h_fast = fast.fit(pipeline(), epochs=3, verbose=0)
    slow = _model(1, 2, weights0)
    h_slow = slow.fit(_streamed(pipeline()), epochs=3, verbose=0)
    _assert_same(fast, slow, h_fast, h_slow)


def test_steps_per_epoch_continues_one_iterator_across_epochs(data, weights0):
    x, y, _ = data
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).shuffle(N, seed=2).repeat().batch(25)
    fast = _model(1, 3, weights0)
    h_fast = fast.fit(ds, epochs=3, steps_per_epoch=5, verbose=0)  # epochs cross the data
    slow = _model(1, 3, weights0)
    h_slow = slow.fit(_streamed(ds), epochs=3, steps_per_epoch=5, verbose=0)
    _assert_same(fast, slow, h_fast, h_slow)


def test_read_as_indices_the_iterator_saves_the_same_position():
    """Reading a prefetched pipeline from below its prefetch (as fit does) leaves the
    iterator's state where reading it element by element would: each element once."""
    x = np.arange(50, dtype=np.float32)

    def pipeline():
        return phalanx.data.Dataset.from_tensor_slices(x).shuffle(20, seed=4).batch(8).prefetch(3)

    it = iter(pipeline())
    node = fp.index_batches(it)
    assert node is not None
    seen = [fp.next_batch(node)[0] for _ in range(3)]
    indices = np.concatenate([fp.single_base(p)[1] for p in seen])
    plain = iter(pipeline())
    expected = [next(plain) for _ in range(3)]
    np.testing.assert_array_equal(x[indices], np.concatenate(expected))
    assert it.get_state()["node"] == plain.get_state()["node"]
    resumed = iter(pipeline())
    resumed.set_state(it.get_state())
    rest = list(resumed)
    np.testing.assert_array_equal(np.concatenate(rest), np.concatenate(list(plain)))
    assert sorted(np.concatenate([x[indices], *rest]).tolist()) == x.tolist()  # exactly once
    assert [b.tolist() for b in it] == [b.tolist() for b in rest]  # reading on from there


def test_a_cache_completes_in_the_first_epoch_although_batches_drop_the_remainder(
    data, weights0, gathers
):
    """fit reads a dataset of known length to its end, as a for loop does: the cache
    fills in the first epoch, and the map runs no more after it."""
    x, y, _ = data
    calls = [0]

    def scale(a, b):
        calls[0] += 1
        return a * 2.0, b

    ds = (
        phalanx.data.Dataset.from_tensor_slices((x, y))
        .map(scale)
        .cache()
        .shuffle(N, seed=1)
        .batch(32, drop_remainder=True)  # 100 = 3 x 32 + 4 dropped
    )
    model = _model(1, 2, weights0)
    model.fit(ds, epochs=1, verbose=0)
    assert calls[0] == N
    model.fit(ds, epochs=2, verbose=0)
    assert calls[0] == N and gathers[0] == 0


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize("spe,stop_at", [(1, 4), (2, 9)])
def test_backup_and_restore_resumes_an_index_read_dataset_mid_epoch(
    data, weights0, tmp_path, spe, stop_at
):
    """The saved input position of a prefetched pipeline read as indices is where its
    batches stopped: the resumed fit ends as the uninterrupted one, bit for bit."""
    x, y, _ = data

    def pipeline():
        return (
            phalanx.data.Dataset.from_tensor_slices((x, y)).shuffle(N, seed=5).batch(16).prefetch(2)
        )

    class StopAt(phalanx.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.model.optimizer.iterations >= stop_at:
                raise _Interrupt

    reference = _model(1, spe, weights0)
    reference.fit(pipeline(), epochs=3, verbose=0)
    backup = phalanx.callbacks.BackupAndRestore(tmp_path / "backup", save_freq=1)
    with pytest.raises(_Interrupt):
        _model(1, spe, weights0).fit(pipeline(), epochs=3, callbacks=[backup, StopAt()], verbose=0)
    resumed = _model(1, spe, weights0)
    resumed.fit(pipeline(), epochs=3, callbacks=[backup], verbose=0)
    assert resumed.optimizer.iterations == reference.optimizer.iterations == 21
    for a, b in zip(reference.get_weights(), resumed.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
