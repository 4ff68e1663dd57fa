"""Arrays with ``steps_per_epoch`` (``validation_steps``, ``steps``) read as Keras 3 reads them.

Keras 3.15 (jax backend), ``fit(x, y, batch_size=4, steps_per_epoch=S)`` on 10 examples
(3 batches a pass), run side by side:

- S=5, 3 epochs: each epoch runs 3 steps and warns "Your input ran out of data; ..."
  (a ``UserWarning``); the History keeps the 3 epochs; ``stop_training`` stays False.
- S=2, 4 epochs: one iterator goes on across epochs: 2, 1, 2, 1 steps, a warning in each
  epoch of 1; the epoch after a pass's end starts a new pass.
- ``evaluate(steps=5)`` evaluates the 10 examples once and warns; ``predict(steps=5)``
  returns 10 rows.
- ``fit(initial_epoch=-1, epochs=1)`` runs epochs -1 and 0 (``History.epoch == [-1, 0]``).

phalanx used to wrap around the arrays (every epoch had its S steps, no warning) and refused
a negative ``initial_epoch``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import FitInputError

OUT_OF_DATA = (
    "Your input ran out of data; interrupting training. Make sure that your dataset or "
    "generator can generate at least `steps_per_epoch * epochs` batches. You may need to "
    "use the `.repeat()` function when building your dataset."
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(10, 3)).astype(np.float32)
Y = RNG.normal(size=(10, 1)).astype(np.float32)


def _model(learning_rate: float = 0.0) -> phalanx.Model:
    """A linear regression; at learning rate 0 an epoch's loss is the loss over what it read."""
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer=phalanx.optimizers.SGD(learning_rate), loss="mse")
    return model


def _fit(model, *args, **kwargs):
    """``model.fit``; returns the History, the batch indices per epoch and the warnings."""
    steps: dict[int, list[int]] = {}
    cb = phalanx.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: steps.setdefault(epoch, []),
        on_train_batch_end=lambda batch, logs: steps[max(steps)].append(batch),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(*args, verbose=0, callbacks=[cb], **kwargs)
    warned = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    return history, steps, warned


def _loss(model, x, y) -> float:
    return model.evaluate(x, y, batch_size=len(x), verbose=0)


def test_steps_beyond_one_pass_end_each_epoch_at_the_pass_with_keras_warning():
    model = _model()
    history, steps, warned = _fit(model, X, Y, batch_size=4, steps_per_epoch=5, epochs=3)
    assert steps == {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 1, 2]}
    assert warned == [OUT_OF_DATA] * 3
    assert history.epoch == [0, 1, 2] and len(history.history["loss"]) == 3
    assert model.stop_training is False
    # each epoch read the 10 examples once (learning rate 0: the loss over all of them)
    np.testing.assert_allclose(history.history["loss"], [_loss(model, X, Y)] * 3, rtol=1e-5)


def test_fewer_steps_than_a_pass_read_on_through_it_across_epochs():
    model = _model()
    history, steps, warned = _fit(
        model, X, Y, batch_size=4, steps_per_epoch=2, epochs=4, shuffle=False
    )
    assert steps == {0: [0, 1], 1: [0], 2: [0, 1], 3: [0]}
    assert warned == [OUT_OF_DATA] * 2
    loss = history.history["loss"]
    np.testing.assert_allclose(loss[0], _loss(model, X[:8], Y[:8]), rtol=1e-5)
    np.testing.assert_allclose(loss[1], _loss(model, X[8:], Y[8:]), rtol=1e-5)  # the rest
    np.testing.assert_allclose(loss[2:], loss[:2], rtol=1e-6)  # a new pass


def test_a_shuffled_pass_is_read_once_over_its_epochs():
    model = _model()
    history, _, _ = _fit(model, X, Y, batch_size=4, steps_per_epoch=2, epochs=2, shuffle=True)
    first, rest = history.history["loss"]
    # 8 examples, then the other 2: together every example once
    np.testing.assert_allclose((8 * first + 2 * rest) / 10, _loss(model, X, Y), rtol=1e-5)


def test_steps_that_divide_a_pass_start_the_next_without_a_warning():
    _, steps, warned = _fit(_model(), X, Y, batch_size=5, steps_per_epoch=1, epochs=4)
    assert steps == {0: [0], 1: [0], 2: [0], 3: [0]}
    assert warned == []


def test_a_resumed_fit_reads_the_pass_where_the_whole_run_did(tmp_path):
    """BackupAndRestore inside a pass (epoch 1 of 2, 1 of 3 epochs read): the same weights."""

    class Interrupt(Exception):
        pass

    def stop_at(steps):
        def end(batch, logs):
            if int(model.optimizer.iterations) >= steps:
                raise Interrupt

        return phalanx.callbacks.LambdaCallback(on_train_batch_end=end)

    kwargs = dict(batch_size=4, steps_per_epoch=2, epochs=5, shuffle=True, verbose=0)
    reference = _model(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        reference.fit(X, Y, **kwargs)
        backup = phalanx.callbacks.BackupAndRestore(str(tmp_path / "backup"), save_freq=1)
        model = _model(0.1)
        with pytest.raises(Interrupt):
            model.fit(X, Y, callbacks=[backup, stop_at(4)], **kwargs)
        resumed = _model(0.1)
        resumed.fit(X, Y, callbacks=[backup], **kwargs)
    for got, want in zip(resumed.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_evaluate_and_predict_read_the_arrays_once_and_warn():
    model = _model()
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        short = model.evaluate(X, Y, batch_size=4, steps=5, verbose=0)
    np.testing.assert_allclose(short, _loss(model, X, Y), rtol=1e-5)
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        predictions = model.predict(X, batch_size=4, steps=5, verbose=0)
    np.testing.assert_allclose(predictions, model.predict(X, verbose=0), rtol=1e-6)


def test_validation_steps_beyond_the_validation_arrays():
    model = _model()
    history, _, warned = _fit(
        model, X, Y, batch_size=4, epochs=2, validation_data=(X, Y), validation_steps=5
    )
    assert warned == [OUT_OF_DATA] * 2  # each validation reads its arrays once
    np.testing.assert_allclose(history.history["val_loss"], [_loss(model, X, Y)] * 2, rtol=1e-5)


@pytest.mark.parametrize("dataset", [False, True])
def test_negative_initial_epoch_runs_from_that_epoch_as_keras(dataset):
    model = _model(0.1)
    data = (X, Y) if not dataset else (phalanx.data.Dataset.from_tensor_slices((X, Y)).batch(4),)
    kwargs = dict(batch_size=4) if not dataset else {}
    history, steps, _ = _fit(model, *data, epochs=1, initial_epoch=-1, shuffle=True, **kwargs)
    assert history.epoch == [-1, 0]
    assert steps == {-1: [0, 1, 2], 0: [0, 1, 2]}
    assert all(np.isfinite(history.history["loss"]))


def test_negative_epochs_and_non_int_initial_epoch_stay_refused():
    with pytest.raises(FitInputError, match=r"epochs must be an int >= 0.*int -1"):
        _model().fit(X, Y, epochs=-1, verbose=0)
    with pytest.raises(FitInputError, match=r"initial_epoch must be an int, got str '1'"):
        _model().fit(X, Y, initial_epoch="1", verbose=0)
