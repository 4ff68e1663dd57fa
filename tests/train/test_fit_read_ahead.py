"""fit reads a Dataset's next epoch ahead while the current epoch's last executions run.

Only the next epoch's first execution is read before fit starts that epoch; a run that
stops (stop_training, an error) drops it and joins its thread; the batches and weights
are those of fit run one epoch at a time; a one-shot generator is not read further.
"""

import threading

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.data import Dataset

N, BATCH, SPE = 24, 4, 2  # 6 batches an epoch: 3 executions of 2 steps
X = np.random.default_rng(0).random((N, 3), np.float32)
Y = np.random.default_rng(1).random((N, 1), np.float32)
WAIT_S = 30.0  # bounds a wait that a correct run ends at once


def _model():
    with phalanx.OneDeviceStrategy(jax.devices()[0]).scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer=phalanx.optimizers.SGD(0.1), loss="mse", steps_per_execution=SPE)
    model.set_weights([np.full_like(w, 0.1) for w in model.get_weights()])
    return model


class _Reads:
    """A map function that counts the examples the pipeline read (in any thread)."""

    def __init__(self):
        self.count = 0
        self.next_epoch_read = threading.Event()  # the first example past epoch 0

    def __call__(self, x, y):
        self.count += 1
        if self.count > N:
            self.next_epoch_read.set()
        return x, y


def _dataset(reads, shuffle=False):
    ds = Dataset.from_tensor_slices((X, Y))
    if shuffle:
        ds = ds.shuffle(N, seed=3)
    return ds.map(reads).batch(BATCH)


class _AtEpochEnd(phalanx.callbacks.Callback):
    """At epoch 0's end: waits until epoch 1's input is being read (bounded), records the
    examples read, and optionally stops or raises."""

    def __init__(self, reads, then=None):
        super().__init__()
        self.reads, self.then = reads, then
        self.read_ahead = None

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            self.read_ahead = self.reads.next_epoch_read.wait(WAIT_S)
            if self.then == "stop":
                self.model.stop_training = True
            elif self.then == "raise":
                raise RuntimeError("callback failed")

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            # Before fit takes epoch 1: at most its first execution was read ahead.
            self.before_epoch_1 = self.reads.count - N


def _new_threads(before):
    """Threads started since ``before`` that do not end within WAIT_S."""
    extra = [t for t in threading.enumerate() if t not in before]
    for t in extra:
        t.join(WAIT_S)
    return [t.name for t in extra if t.is_alive()]


def test_next_epoch_is_read_during_this_one():
    reads = _Reads()
    cb = _AtEpochEnd(reads)
    history = _model().fit(_dataset(reads), epochs=3, verbose=0, callbacks=[cb])
    assert cb.read_ahead  # epoch 1's examples were read before epoch 0 ended
    assert 0 < cb.before_epoch_1 <= SPE * BATCH  # its first execution, no more
    assert reads.count == 3 * N  # every example once per epoch, none twice
    assert len(history.history["loss"]) == 3


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("steps_per_epoch", [None, 4])
def test_same_weights_as_one_epoch_at_a_time(shuffle, steps_per_epoch):
    """fit(epochs=3) (read ahead) trains as three fit(epochs=1) calls, which read nothing
    ahead; with steps_per_epoch=4 the iterator continues across epochs (a repeated Dataset),
    so the weights are those of one epoch of 12 steps, which reads nothing ahead."""

    def dataset():
        ds = _dataset(_Reads(), shuffle)
        return ds.repeat() if steps_per_epoch else ds

    runs = []
    for _ in range(2):  # twice: what streams in threads must repeat bit for bit
        ahead = _model()
        h = ahead.fit(dataset(), epochs=3, steps_per_epoch=steps_per_epoch, verbose=0)
        runs.append((ahead.get_weights(), h.history["loss"]))
    if steps_per_epoch is None:
        stepwise, losses, ds = _model(), [], dataset()
        for epoch in range(3):
            h = stepwise.fit(ds, epochs=epoch + 1, initial_epoch=epoch, verbose=0)
            losses += h.history["loss"]
        runs.append((stepwise.get_weights(), losses))
    else:
        whole = _model()
        whole.fit(dataset(), epochs=1, steps_per_epoch=3 * steps_per_epoch, verbose=0)
        runs.append((whole.get_weights(), None))
    for weights, losses in runs[1:]:
        if losses is not None:
            np.testing.assert_array_equal(losses, runs[0][1])
        for a, b in zip(weights, runs[0][0], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("then", ["stop", "raise"])
def test_a_stop_drops_the_read_ahead(then):
    before = set(threading.enumerate())
    count = threading.active_count()
    reads = _Reads()
    cb = _AtEpochEnd(reads, then)
    model = _model()
    if then == "raise":
        with pytest.raises(RuntimeError, match="callback failed"):
            model.fit(_dataset(reads), epochs=5, verbose=0, callbacks=[cb])
    else:
        history = model.fit(_dataset(reads), epochs=5, verbose=0, callbacks=[cb])
        assert len(history.history["loss"]) == 1
    assert cb.read_ahead
    assert N < reads.count <= N + SPE * BATCH  # epoch 1's first execution at most
    assert _new_threads(before) == []
    assert threading.active_count() == count


def test_early_stopping_drops_the_read_ahead():
    before = set(threading.enumerate())
    reads = _Reads()
    stop = phalanx.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=0)
    history = _model().fit(_dataset(reads), epochs=5, verbose=0, callbacks=[stop])
    assert len(history.history["loss"]) == 2  # epoch 1 does not improve by 1e9: stop
    assert reads.count <= 2 * N + SPE * BATCH
    assert _new_threads(before) == []


def test_validation_data_is_evaluated_whole_each_epoch():
    reads, val_reads = _Reads(), _Reads()
    history = _model().fit(
        _dataset(reads), validation_data=_dataset(val_reads), epochs=3, verbose=0
    )
    ref = _model()
    val_loss = []
    for epoch in range(3):
        ref.fit(_dataset(_Reads()), epochs=epoch + 1, initial_epoch=epoch, verbose=0)
        val_loss.append(ref.evaluate(_dataset(_Reads()), verbose=0))
    assert val_reads.count == 3 * N
    np.testing.assert_allclose(history.history["val_loss"], val_loss, rtol=1e-6)


def test_a_generator_is_not_read_ahead():
    read = []

    def batches():
        for i in range(100):
            read.append(i)
            yield X[:BATCH], Y[:BATCH]

    class Count(phalanx.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                self.at_end = len(read)

    cb = Count()
    _model().fit(batches(), steps_per_epoch=6, epochs=3, verbose=0, callbacks=[cb])
    assert cb.at_end == 7  # the epoch's 6 batches and the one peeked at, as before
    assert len(read) == 19
