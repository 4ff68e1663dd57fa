"""ReduceLROnPlateau and LearningRateScheduler change the learning rate at the right epochs."""

import pytest
from callback_fakes import FakeModel, fit

from phalanx.callbacks import EarlyStopping, LearningRateScheduler, ReduceLROnPlateau


def _plateau(model, reducer, val_losses):
    train = [{"loss": 1.0} for _ in val_losses]
    cbs = fit(model, [reducer], train_logs=train, val_logs=[{"loss": v} for v in val_losses])
    return cbs.history.history["learning_rate"]


def _reduced_at(lrs, start=0.1):
    """Epochs at whose end the rate was lowered (history holds the rate before the cut)."""
    after = [*lrs[1:], None]
    return [
        e
        for e, (now, nxt) in enumerate(zip(lrs, after, strict=True))
        if nxt is not None and nxt < now
    ]


def test_reduces_after_patience_epochs_without_cooldown(model):
    reducer = ReduceLROnPlateau(factor=0.5, patience=2)
    lrs = _plateau(model, reducer, [1.0] * 8)
    # Epoch 0 sets the best; waits 1, 2 -> cut at epoch 2, then every 2 epochs.
    assert _reduced_at(lrs) == [2, 4, 6]
    assert model.optimizer.learning_rate == pytest.approx(0.1 * 0.5**3)


def test_cooldown_delays_the_next_wait(model):
    reducer = ReduceLROnPlateau(factor=0.5, patience=2, cooldown=2)
    lrs = _plateau(model, reducer, [1.0] * 10)
    # Keras: cut at 2, cooldown epochs 3 and 4 (the counter reaches 0 during 4, which
    # then counts a wait of 1), second wait at 5 -> cut; likewise 8.
    assert _reduced_at(lrs) == [2, 5, 8]
    assert reducer.cooldown_counter == 1


def test_improvement_resets_the_wait(model):
    reducer = ReduceLROnPlateau(factor=0.1, patience=2, min_delta=0.01)
    lrs = _plateau(model, reducer, [1.0, 1.0, 0.5, 0.499, 0.498, 0.2])
    # 0.499 and 0.498 are within min_delta of 0.5: cut at epoch 4.
    assert _reduced_at(lrs) == [4]


def test_min_lr_bounds_the_rate(model):
    reducer = ReduceLROnPlateau(factor=0.1, patience=1, min_lr=0.005)
    _plateau(model, reducer, [1.0] * 5)
    assert model.optimizer.learning_rate == 0.005


def test_auto_mode_maximizes_accuracy(model):
    reducer = ReduceLROnPlateau(monitor="val_accuracy", factor=0.5, patience=1)
    train = [{"loss": 1.0}] * 4
    cbs = fit(
        model, [reducer], train_logs=train, val_logs=[{"accuracy": a} for a in (0.1, 0.2, 0.3, 0.3)]
    )
    assert _reduced_at(cbs.history.history["learning_rate"]) == []
    assert model.optimizer.learning_rate == 0.05  # the last epoch did not improve


def test_learning_rate_reaches_later_callbacks_and_history(model):
    seen = []
    from phalanx.callbacks import LambdaCallback

    spy = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(logs["learning_rate"]))
    fit(
        model,
        [ReduceLROnPlateau(patience=0), spy],
        train_logs=[{"loss": 1.0}] * 2,
        val_logs=[{"loss": 1.0}] * 2,
    )
    assert seen == [0.1, 0.1]  # logged before the cut of epoch 1
    assert model.optimizer.learning_rate == pytest.approx(0.01)


def test_verbose_message(model, capsys):
    _plateau(model, ReduceLROnPlateau(patience=0, verbose=1), [1.0, 1.0])
    assert "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.01" in capsys.readouterr().out


def test_factor_of_one_or_more_is_refused():
    with pytest.raises(ValueError, match=r"factor must be in \[0, 1\).*received factor=1.5"):
        ReduceLROnPlateau(factor=1.5)


def test_schedule_learning_rate_is_refused_with_context():
    model = FakeModel(learning_rate=lambda step: 0.1)
    with pytest.raises(TypeError, match=r"ReduceLROnPlateau needs a float learning rate.*schedule"):
        fit(model, [ReduceLROnPlateau()], train_logs=[{"loss": 1.0}], val_logs=[{"loss": 1.0}])


def test_scheduler_sets_the_rate_each_epoch(model):
    scheduler = LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch >= 2 else lr)
    cbs = fit(model, [scheduler], train_logs=[{"loss": 1.0}] * 4)
    assert cbs.history.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.05, 0.025])


def test_scheduler_accepts_a_function_of_the_epoch_only(model):
    def one_arg(epoch):
        return 0.1 / (epoch + 1)

    cbs = fit(model, [LearningRateScheduler(one_arg)], train_logs=[{"loss": 1.0}] * 3)
    assert cbs.history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.1 / 3])


def test_scheduler_with_early_stopping_and_verbose(model, capsys):
    scheduler = LearningRateScheduler(lambda epoch, lr: 0.2, verbose=1)
    fit(model, [scheduler, EarlyStopping(monitor="loss")], train_logs=[{"loss": 1.0}] * 3)
    out = capsys.readouterr().out
    assert "Epoch 1: LearningRateScheduler setting learning rate to 0.2." in out
    assert model.epochs_trained == [0, 1]


def test_scheduler_refuses_a_non_callable():
    with pytest.raises(
        TypeError,
        match=r"schedule must be a function schedule\(epoch, lr\).*received 0.1 \(float\)",
    ):
        LearningRateScheduler(0.1)


def test_scheduler_refuses_a_non_number_result(model):
    scheduler = LearningRateScheduler(lambda epoch, lr: "fast")
    with pytest.raises(ValueError, match=r"must return a float; received 'fast' \(str\)"):
        fit(model, [scheduler], train_logs=[{"loss": 1.0}])
