"""EarlyStopping follows Keras 3: the stop epoch, the wait counter, baseline, best-weight restore.

Each test runs the real ``fit`` with validation. A real loss cannot be made
to follow a chosen sequence, so the watched value is scripted: a
``LambdaCallback`` placed before ``EarlyStopping`` (``real_fit.scripted``)
writes ``val_loss[epoch]`` into the epoch logs, replacing the real one, before
``EarlyStopping`` reads them. The weights are the real trained ones: a second
callback keeps a copy at each epoch end, to tell which epoch's were restored.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from real_fit import LEARNING_RATE, fit, scripted

import phalanx
from phalanx.callbacks import EarlyStopping, LambdaCallback


def _run(model, stopper, values, *, monitor="val_loss", snapshots=None, **kwargs):
    """Fits ``len(values)`` epochs at most, ``monitor`` following ``values``."""
    callbacks = [scripted(monitor, values), stopper]
    if snapshots is not None:
        keep = LambdaCallback(on_epoch_end=lambda e, logs: snapshots.append(model.get_weights()))
        callbacks.append(keep)
    return fit(model, callbacks, epochs=len(values), validation=True, **kwargs)


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_stops_after_patience_epochs_without_improvement(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2)
    history = _run(model, stopper, [0.9, 0.8, 0.85, 0.81, 0.7, 0.6])
    # Best at epoch 1; epochs 2 and 3 do not improve: wait reaches 2 at epoch 3.
    assert stopper.stopped_epoch == 3
    assert history.epoch == [0, 1, 2, 3]
    assert history.history["val_loss"] == [0.9, 0.8, 0.85, 0.81]
    assert stopper.best == 0.8


def test_patience_zero_stops_at_first_non_improving_epoch(model):
    history = _run(model, EarlyStopping(monitor="val_loss"), [0.9, 0.8, 0.8, 0.7])
    assert history.epoch == [0, 1, 2]


def test_a_first_nan_is_the_best_as_keras(model):
    stopper = EarlyStopping(monitor="val_loss")
    history = _run(model, stopper, [float("nan"), 0.5, 0.6, 0.4])
    # Keras 3: the first value watched is the best (best is None before), even NaN; no
    # value compares better than NaN, so epoch 1 does not improve and stops.
    assert history.epoch == [0, 1]
    assert np.isnan(stopper.best)


def test_an_improving_epoch_never_stops(model):
    stopper = EarlyStopping(monitor="val_loss", baseline=0.1)
    history = _run(model, stopper, [0.5, 0.4, 0.3, 0.2])
    assert stopper.stopped_epoch == 0
    assert history.epoch == [0, 1, 2, 3]
    assert stopper.wait == 4  # the baseline was never beaten


def test_min_delta_counts_small_changes_as_no_improvement(model):
    stopper = EarlyStopping(monitor="val_loss", min_delta=0.05, patience=1)
    _run(model, stopper, [1.0, 0.97, 0.96, 0.5])
    assert stopper.stopped_epoch == 1
    assert stopper.best == 1.0


def test_baseline_keeps_the_wait_counting_until_beaten(model):
    stopper = EarlyStopping(monitor="val_loss", patience=3, baseline=0.5)
    # No epoch beats 0.5, so improvements do not reset the wait: 1, 2, then 3 at epoch 2.
    _run(model, stopper, [0.9, 0.8, 0.85, 0.7])
    assert stopper.stopped_epoch == 2
    unbounded = EarlyStopping(monitor="val_loss", patience=3)
    history = _run(model, unbounded, [0.9, 0.8, 0.85, 0.7])
    assert unbounded.stopped_epoch == 0
    assert history.epoch == [0, 1, 2, 3]


def test_start_from_epoch_ignores_warm_up_epochs(model):
    stopper = EarlyStopping(monitor="val_loss", patience=0, start_from_epoch=2)
    _run(model, stopper, [0.5, 0.9, 0.95, 0.9, 0.99])
    # Epochs 0-1 are not watched; the best is epoch 2 (0.95), epoch 3 improves, epoch 4 stops.
    assert stopper.stopped_epoch == 4


def test_auto_mode_maximizes_accuracy(model):
    stopper = EarlyStopping(monitor="val_accuracy", patience=1)
    _run(model, stopper, [0.5, 0.6, 0.7, 0.65, 0.66], monitor="val_accuracy")
    assert stopper.stopped_epoch == 3
    assert stopper.best == 0.7


def test_restores_best_weights_when_stopping(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    snapshots = []
    history = _run(model, stopper, [0.9, 0.5, 0.7, 0.8, 0.1], snapshots=snapshots)
    assert history.epoch == [0, 1, 2, 3]
    assert stopper.best_epoch == 1
    assert _same(model.get_weights(), snapshots[1])  # the weights trained up to epoch 1
    assert not _same(model.get_weights(), snapshots[3])


def test_restores_best_weights_when_patience_is_never_exhausted(model):
    stopper = EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
    snapshots = []
    history = _run(model, stopper, [0.9, 0.3, 0.7, 0.8], snapshots=snapshots)
    assert history.epoch == [0, 1, 2, 3]
    assert stopper.stopped_epoch == 0
    assert _same(model.get_weights(), snapshots[1])


def test_without_restore_keeps_last_weights(model):
    snapshots = []
    _run(
        model,
        EarlyStopping(monitor="val_loss", patience=1),
        [0.9, 0.3, 0.7, 0.8],
        snapshots=snapshots,
    )
    assert len(snapshots) == 3  # stopped at epoch 2
    assert _same(model.get_weights(), snapshots[-1])


def test_restore_with_unmet_baseline_uses_best_epoch_seen(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2, baseline=0.1, restore_best_weights=True)
    snapshots = []
    _run(model, stopper, [0.9, 0.5, 0.7, 0.8], snapshots=snapshots)
    assert stopper.stopped_epoch == 2
    assert _same(model.get_weights(), snapshots[1])


def test_instances_are_reusable(model, make_model):
    stopper = EarlyStopping(monitor="val_loss", patience=0)
    _run(model, stopper, [0.5, 0.6, 0.4])
    assert stopper.best == 0.5
    history = _run(make_model(1), stopper, [2.0, 1.0, 1.5, 0.1])
    assert history.epoch == [0, 1, 2]
    assert stopper.best == 1.0


def test_verbose_messages_are_printed_on_process_0_only(model, make_model, capsys, as_process):
    stopper = EarlyStopping(monitor="val_loss", verbose=1, restore_best_weights=True)
    _run(model, stopper, [0.5, 0.6])
    out = capsys.readouterr().out
    assert "Epoch 2: early stopping" in out
    assert "Restoring model weights from the end of the best epoch: 1." in out
    as_process(1)
    _run(make_model(1), stopper, [0.5, 0.6])
    assert capsys.readouterr().out == ""


def test_missing_monitor_warns_once_naming_the_available_keys(model):
    stopper = EarlyStopping(monitor="val_los")
    with pytest.warns(
        UserWarning, match=r"'val_los'.*Available: accuracy, loss, val_accuracy, val_loss"
    ) as record:
        history = fit(model, [stopper], epochs=3, validation=True)
    assert len([w for w in record if "val_los" in str(w.message)]) == 1
    assert history.epoch == [0, 1, 2]  # no stop without a value


def test_unknown_mode_warns_and_watches_in_auto_mode_as_keras():
    with pytest.warns(UserWarning, match=r"EarlyStopping mode 'minimum' is unknown, fallback"):
        assert EarlyStopping(mode="minimum").mode == "auto"
    with pytest.raises(ValueError, match=r"mode must be 'auto', 'min' or 'max'; received mode=1"):
        EarlyStopping(mode=1)


def test_negative_patience_stops_as_zero_as_keras(model):
    # Keras 3 accepts patience=-1: wait >= -1 holds at the first non-improving epoch.
    history = _run(model, EarlyStopping(monitor="val_loss", patience=-1), [0.9, 0.8, 0.8, 0.7])
    assert history.epoch == [0, 1, 2]


def test_non_integer_patience_is_refused():
    with pytest.raises(ValueError, match=r"patience must be an integer.*received 1.5 \(float\)"):
        EarlyStopping(patience=1.5)


def test_auto_mode_refuses_a_name_it_cannot_place(model):
    stopper = EarlyStopping(monitor="val_wiggle")
    with pytest.raises(ValueError, match=r"monitor='val_wiggle'.*Pass mode='max'"):
        _run(model, stopper, [0.5], monitor="val_wiggle")


class Wiggle(phalanx.metrics.MeanMetricWrapper):
    """A user's metric that says it goes up (Keras metrics set ``_direction``)."""

    direction = "up"

    def __init__(self):
        super().__init__(lambda y_true, y_pred: jnp.max(y_pred, axis=-1), name="wiggle")


def test_metric_direction_from_the_model_settles_auto_mode():
    """The compiled metric ``wiggle`` says it goes up; its value is scripted as it is watched."""
    model = phalanx.Sequential([phalanx.layers.Input(shape=(3,)), phalanx.layers.Dense(2)])
    model.compile(optimizer=phalanx.optimizers.SGD(LEARNING_RATE), loss="mse", metrics=[Wiggle()])
    stopper = EarlyStopping(monitor="val_wiggle", patience=0)
    history = model.fit(
        *(np.ones((8, 3), np.float32), np.ones((8, 2), np.float32)),
        epochs=3,
        validation_data=(np.ones((8, 3), np.float32), np.ones((8, 2), np.float32)),
        callbacks=[scripted("val_wiggle", [1.0, 2.0, 1.5]), stopper],
        verbose=0,
    )
    assert stopper.stopped_epoch == 2
    assert history.epoch == [0, 1, 2]
