"""EarlyStopping follows Keras 3: the stop epoch, the wait counter, baseline, best-weight restore."""

import numpy as np
import pytest
from callback_fakes import FakeModel, fit

from phalanx.callbacks import EarlyStopping


def _run(model, stopper, val_losses, **kwargs):
    train = [{"loss": 1.0} for _ in val_losses]
    val = [{"loss": v} for v in val_losses]
    return fit(model, [stopper], train_logs=train, val_logs=val, **kwargs)


def test_stops_after_patience_epochs_without_improvement(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2)
    cbs = _run(model, stopper, [0.9, 0.8, 0.85, 0.81, 0.7, 0.6])
    # Best at epoch 1; epochs 2 and 3 do not improve: wait reaches 2 at epoch 3.
    assert stopper.stopped_epoch == 3
    assert model.epochs_trained == [0, 1, 2, 3]
    assert cbs.history.epoch == [0, 1, 2, 3]
    assert stopper.best == 0.8


def test_patience_zero_stops_at_first_non_improving_epoch(model):
    stopper = EarlyStopping(monitor="val_loss")
    _run(model, stopper, [0.9, 0.8, 0.8, 0.7])
    assert model.epochs_trained == [0, 1, 2]


def test_never_stops_on_the_first_epoch(model):
    stopper = EarlyStopping(monitor="val_loss")
    _run(model, stopper, [float("nan"), 0.5, 0.6, 0.4])
    # A NaN is no improvement, but Keras never stops at epoch 0; epoch 2 does not improve.
    assert model.epochs_trained == [0, 1, 2]


def test_an_improving_epoch_never_stops(model):
    stopper = EarlyStopping(monitor="val_loss", baseline=0.1)
    _run(model, stopper, [0.5, 0.4, 0.3, 0.2])
    assert stopper.stopped_epoch == 0
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
    _run(FakeModel(), unbounded, [0.9, 0.8, 0.85, 0.7])
    assert unbounded.stopped_epoch == 0


def test_start_from_epoch_ignores_warm_up_epochs(model):
    stopper = EarlyStopping(monitor="val_loss", patience=0, start_from_epoch=2)
    _run(model, stopper, [0.5, 0.9, 0.95, 0.9, 0.99])
    # Epochs 0-1 are not watched; the best is epoch 2 (0.95), epoch 3 improves, epoch 4 stops.
    assert stopper.stopped_epoch == 4


def test_auto_mode_maximizes_accuracy(model):
    stopper = EarlyStopping(monitor="val_accuracy", patience=1)
    train = [{"loss": 1.0, "accuracy": 0.5}] * 5
    val = [{"accuracy": a} for a in (0.5, 0.6, 0.7, 0.65, 0.66)]
    fit(model, [stopper], train_logs=train, val_logs=val)
    assert stopper.stopped_epoch == 3
    assert stopper.best == 0.7


def test_restores_best_weights_when_stopping(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    _run(model, stopper, [0.9, 0.5, 0.7, 0.8, 0.1])
    assert model.epochs_trained == [0, 1, 2, 3]
    # FakeModel's weights after epoch e are e + 1: the best epoch is 1.
    assert all(np.all(w == 2) for w in model.weights)
    assert stopper.best_epoch == 1


def test_restores_best_weights_when_patience_is_never_exhausted(model):
    stopper = EarlyStopping(monitor="val_loss", patience=10, restore_best_weights=True)
    _run(model, stopper, [0.9, 0.3, 0.7, 0.8])
    assert model.epochs_trained == [0, 1, 2, 3]
    assert stopper.stopped_epoch == 0
    assert all(np.all(w == 2) for w in model.weights)


def test_without_restore_keeps_last_weights(model):
    stopper = EarlyStopping(monitor="val_loss", patience=1)
    _run(model, stopper, [0.9, 0.3, 0.7, 0.8])
    assert all(np.all(w == 3) for w in model.weights)


def test_restore_with_unmet_baseline_uses_best_epoch_seen(model):
    stopper = EarlyStopping(monitor="val_loss", patience=2, baseline=0.1, restore_best_weights=True)
    _run(model, stopper, [0.9, 0.5, 0.7, 0.8])
    assert stopper.stopped_epoch == 2
    assert all(np.all(w == 2) for w in model.weights)


def test_instances_are_reusable(model):
    stopper = EarlyStopping(monitor="val_loss", patience=0)
    _run(model, stopper, [0.5, 0.6, 0.4])
    assert stopper.best == 0.5
    second = FakeModel()
    _run(second, stopper, [2.0, 1.0, 1.5, 0.1])
    assert second.epochs_trained == [0, 1, 2]
    assert stopper.best == 1.0


def test_verbose_messages_are_printed_on_process_0_only(model, capsys, as_process):
    stopper = EarlyStopping(monitor="val_loss", verbose=1, restore_best_weights=True)
    _run(model, stopper, [0.5, 0.6])
    out = capsys.readouterr().out
    assert "Epoch 2: early stopping" in out
    assert "Restoring model weights from the end of the best epoch: 1." in out
    as_process(1)
    _run(FakeModel(), stopper, [0.5, 0.6])
    assert capsys.readouterr().out == ""


def test_missing_monitor_warns_once_naming_the_available_keys(model):
    stopper = EarlyStopping(monitor="val_los")
    with pytest.warns(UserWarning, match=r"'val_los'.*Available: loss, val_loss") as record:
        _run(model, stopper, [0.5, 0.6, 0.7])
    assert len([w for w in record if "val_los" in str(w.message)]) == 1
    assert model.epochs_trained == [0, 1, 2]  # no stop without a value


def test_unknown_mode_is_refused():
    with pytest.raises(
        ValueError, match=r"mode must be 'auto', 'min' or 'max'; received mode='minimum'"
    ):
        EarlyStopping(mode="minimum")


def test_bad_patience_is_refused():
    with pytest.raises(ValueError, match=r"patience must be an integer >= 0.*received -1"):
        EarlyStopping(patience=-1)


def test_auto_mode_refuses_a_name_it_cannot_place(model):
    stopper = EarlyStopping(monitor="val_wiggle")
    with pytest.raises(ValueError, match=r"monitor='val_wiggle'.*Pass mode='max'"):
        fit(model, [stopper], train_logs=[{"loss": 1.0}], val_logs=[{"wiggle": 0.5}])


def test_metric_direction_from_the_model_settles_auto_mode(model):
    class Wiggle:
        name = "wiggle"
        direction = "up"

    model.metrics = [Wiggle()]
    stopper = EarlyStopping(monitor="val_wiggle", patience=0)
    train = [{"loss": 1.0}] * 3
    fit(model, [stopper], train_logs=train, val_logs=[{"wiggle": w} for w in (1.0, 2.0, 1.5)])
    assert stopper.stopped_epoch == 2
