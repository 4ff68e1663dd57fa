"""An input that ends before the steps asked for, as Keras 3 (keras/src/trainers/epoch_iterator.py).

Keras 3.15 warns "Your input ran out of data; interrupting training. ..." and ends the epoch
there; the next epoch reads a new pass; ``stop_training`` stays False and the history keeps
every epoch; ``evaluate(steps=...)`` beyond the data evaluates every batch once. The step
counts below are what Keras 3.15 (JAX backend) gives for the same programs on a
``PyDataset`` of 3 batches. A one-shot generator has no new pass: fit stops after the epoch
that used it up (tf.keras's rule).
"""

import warnings

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.data import Dataset

RAN_OUT = r"Your input ran out of data; interrupting training\. Make sure that your dataset"
X = np.random.default_rng(0).random((12, 3), np.float32)
Y = np.random.default_rng(1).random((12, 1), np.float32)


def _model(steps_per_execution=1):
    with phalanx.OneDeviceStrategy(jax.devices()[0]).scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(
            optimizer=phalanx.optimizers.SGD(0.1),
            loss="mse",
            steps_per_execution=steps_per_execution,
        )
    model.set_weights([np.full_like(w, 0.1) for w in model.get_weights()])
    return model


def _three_batches():
    return Dataset.from_tensor_slices((X, Y)).batch(4)  # no repeat()


def _generator(size=4):
    return ((X[i : i + size], Y[i : i + size]) for i in range(0, len(X), size))


class _Steps(phalanx.callbacks.Callback):
    """The steps each epoch ran, and ``model.stop_training`` at each epoch's end."""

    def on_train_begin(self, logs=None):
        self.steps, self.stopped = [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.steps.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.steps[-1] = batch + 1

    def on_epoch_end(self, epoch, logs=None):
        self.stopped.append(self.model.stop_training)


def _fit(model, x, **kwargs):
    steps = _Steps()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(x, verbose=0, shuffle=False, callbacks=[steps], **kwargs)
    ran_out = [w for w in caught if "ran out of data" in str(w.message)]
    for w in ran_out:
        assert issubclass(w.category, UserWarning)
        assert "at least `steps_per_epoch * epochs` batches" in str(w.message)
    return history, steps, len(ran_out)


def _same_weights(a, b):
    for wa, wb in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_allclose(wa, wb, rtol=1e-6)


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_a_dataset_shorter_than_steps_per_epoch_warns_and_ends_each_epoch_short(
    steps_per_execution,
):
    model = _model(steps_per_execution)
    history, steps, warned = _fit(model, _three_batches(), steps_per_epoch=5, epochs=3)
    # Keras 3 (keras.utils.PyDataset of 3 batches, steps_per_epoch=5, 3 epochs): batch-end
    # indices end at 2 with steps_per_execution=1 and at 3 with 2 (an execution's last index
    # is first + steps_per_execution - 1, also when the data ran out in it); a warning each.
    assert steps.steps == [2 + steps_per_execution] * 3
    assert warned == 3
    assert history.epoch == [0, 1, 2] and len(history.history["loss"]) == 3
    assert steps.stopped == [False, False, False] and model.stop_training is False
    # The same training as one pass per epoch without steps_per_epoch.
    reference = _model(steps_per_execution)
    expected = reference.fit(_three_batches(), epochs=3, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-6)
    _same_weights(model, reference)


def test_steps_per_epoch_that_does_not_divide_the_dataset_continues_then_starts_a_new_pass():
    # Keras 3 (arrays or a PyDataset of 3 batches, steps_per_epoch=2): 2, 1, 2, 1 steps,
    # a warning in each short epoch.
    _, steps, warned = _fit(_model(), _three_batches(), steps_per_epoch=2, epochs=4)
    assert steps.steps == [2, 1, 2, 1]
    assert warned == 2


def test_a_pass_of_unknown_length_used_up_at_an_epoch_end_is_read_again():
    # filter(): the dataset's length is unknown, so only reading tells that it ended.
    ds = Dataset.from_tensor_slices((X, Y)).filter(lambda x, y: True).batch(2)  # 6 batches
    history, steps, warned = _fit(_model(), ds, steps_per_epoch=3, epochs=4)
    assert steps.steps == [3, 3, 3, 3]
    assert warned == 0
    assert len(history.history["loss"]) == 4


def test_evaluate_steps_beyond_the_data_evaluates_every_batch_once():
    model = _model()
    full = model.evaluate(_three_batches(), verbose=0)
    with pytest.warns(UserWarning, match=RAN_OUT):
        short = model.evaluate(_three_batches(), steps=5, verbose=0)
    assert short == pytest.approx(full, rel=1e-6)
    with pytest.warns(UserWarning, match=RAN_OUT):
        from_generator = model.evaluate(_generator(), steps=5, verbose=0)
    assert from_generator == pytest.approx(full, rel=1e-6)


def test_validation_steps_beyond_the_validation_data():
    model = _model()
    history, _, warned = _fit(
        model, _three_batches(), epochs=2, validation_data=_three_batches(), validation_steps=5
    )
    assert warned == 2  # once per validation
    assert history.history["val_loss"][-1] == pytest.approx(
        model.evaluate(_three_batches(), verbose=0), rel=1e-6
    )


def test_a_generator_that_runs_out_stops_training_after_that_epoch():
    model = _model()
    history, steps, warned = _fit(model, _generator(), steps_per_epoch=5, epochs=3)
    assert steps.steps == [3]
    assert warned == 1
    assert history.epoch == [0]
    assert steps.stopped == [True] and model.stop_training is True


def test_a_generator_used_up_exactly_at_an_epoch_end_stops_there():
    model = _model()
    history, steps, warned = _fit(model, _generator(2), steps_per_epoch=3, epochs=4)  # 6 batches
    assert steps.steps == [3, 3]
    assert warned == 1
    assert history.epoch == [0, 1] and model.stop_training is True


def test_a_generator_without_steps_per_epoch_trains_one_epoch_of_several():
    model = _model()
    history, steps, warned = _fit(model, _generator(), epochs=2)
    assert steps.steps == [3]
    assert warned == 1
    assert history.epoch == [0] and model.stop_training is True


def test_a_generator_for_the_last_epoch_only_does_not_warn():
    _, steps, warned = _fit(_model(), _generator(), epochs=1)
    assert steps.steps == [3]
    assert warned == 0
