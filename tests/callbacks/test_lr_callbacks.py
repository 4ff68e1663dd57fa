"""ReduceLROnPlateau and LearningRateScheduler change the real optimizer's rate at the right epochs.

The plateau tests script the watched value: a ``LambdaCallback`` placed before
``ReduceLROnPlateau`` (``real_fit.scripted``) writes ``val_loss[epoch]`` into
the real fit's epoch logs before the reducer reads them. The rates are read
back from the real optimizer (a float32 in its state, hence ``approx``).
"""

import numpy as np
import pytest
from real_fit import LEARNING_RATE, build_model, fit, scripted

import phalanx
from phalanx.callbacks import (
    EarlyStopping,
    LambdaCallback,
    LearningRateScheduler,
    ReduceLROnPlateau,
)


def _plateau(model, reducer, values, monitor="val_loss"):
    history = fit(model, [scripted(monitor, values), reducer], epochs=len(values), validation=True)
    return history.history["learning_rate"]


def _reduced_at(lrs):
    """Epochs at whose end the rate was lowered (history holds the rate before the cut)."""
    return [e for e in range(len(lrs) - 1) if lrs[e + 1] < lrs[e]]


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
    assert model.optimizer.learning_rate == pytest.approx(0.005)


def test_auto_mode_maximizes_accuracy(model):
    reducer = ReduceLROnPlateau(monitor="val_accuracy", factor=0.5, patience=1)
    lrs = _plateau(model, reducer, [0.1, 0.2, 0.3, 0.3], monitor="val_accuracy")
    assert _reduced_at(lrs) == []
    assert model.optimizer.learning_rate == pytest.approx(0.05)  # the last epoch did not improve


def test_learning_rate_reaches_later_callbacks_and_history(model):
    seen = []
    spy = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(logs["learning_rate"]))
    history = fit(
        model, [scripted("val_loss", [1.0, 1.0]), ReduceLROnPlateau(patience=0), spy], epochs=2
    )
    assert seen == pytest.approx([0.1, 0.1])  # logged before the cut of epoch 1
    assert history.history["learning_rate"] == seen
    assert model.optimizer.learning_rate == pytest.approx(0.01)


def test_the_reduced_rate_trains_the_next_epochs(model):
    """A rate cut to 0 (``factor=0``) freezes the real weights from the next epoch on."""
    weights = []
    keep = LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    reducer = ReduceLROnPlateau(factor=0.0, patience=0)
    fit(model, [scripted("val_loss", [1.0] * 4), reducer, keep], epochs=4)
    # Epoch 1 does not improve: the rate is 0 from epoch 2 on.
    assert not all(np.array_equal(a, b) for a, b in zip(weights[0], weights[1], strict=True))
    for later in weights[2:]:
        assert all(np.array_equal(a, b) for a, b in zip(weights[1], later, strict=True))


def test_verbose_message(model, capsys):
    _plateau(model, ReduceLROnPlateau(patience=0, verbose=1), [1.0, 1.0])
    # The rate is a float32 in the optimizer state, as in Keras 3: 0.1 * 0.1 prints as such.
    assert "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.0100000" in (
        capsys.readouterr().out
    )


def test_factor_of_one_or_more_is_refused():
    with pytest.raises(ValueError, match=r"factor must be in \[0, 1\).*received factor=1.5"):
        ReduceLROnPlateau(factor=1.5)


def _with_schedule():
    decay = phalanx.optimizers.schedules.ExponentialDecay(LEARNING_RATE, 4, 0.5)
    return build_model(optimizer=phalanx.optimizers.SGD(decay))


def test_schedule_learning_rate_is_refused_with_context():
    """Keras reads a schedule's current rate, and refuses to set it: at the first cut."""
    model = _with_schedule()
    with pytest.raises(TypeError, match=r"ReduceLROnPlateau needs a float learning rate.*schedule"):
        fit(model, [scripted("val_loss", [1.0, 1.0]), ReduceLROnPlateau(patience=0)], epochs=2)
    # Epoch 0 logged the schedule's current rate (0.1 halved over its 4 steps), as Keras.
    assert model.history.history["learning_rate"] == [pytest.approx(0.05)]


def test_scheduler_sets_the_rate_each_epoch(model):
    scheduler = LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch >= 2 else lr)
    history = fit(model, [scheduler], epochs=4)
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.1, 0.05, 0.025])


def test_scheduler_rate_trains_that_epoch(model):
    """A rate of 0 from epoch 1 on leaves the real weights as epoch 0 trained them."""
    weights = []
    keep = LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
    scheduler = LearningRateScheduler(lambda epoch, lr: 0.0 if epoch >= 1 else lr)
    fit(model, [scheduler, keep], epochs=3)
    assert all(np.array_equal(a, b) for a, b in zip(weights[0], weights[2], strict=True))


def test_scheduler_accepts_a_function_of_the_epoch_only(model):
    def one_arg(epoch):
        return 0.1 / (epoch + 1)

    history = fit(model, [LearningRateScheduler(one_arg)], epochs=3)
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.1 / 3])


def test_scheduler_with_early_stopping_and_verbose(model, capsys):
    scheduler = LearningRateScheduler(lambda epoch, lr: 0.2, verbose=1)
    history = fit(
        model, [scheduler, scripted("loss", [1.0] * 3), EarlyStopping(monitor="loss")], epochs=3
    )
    out = capsys.readouterr().out
    assert "Epoch 1: LearningRateScheduler setting learning rate to 0.2." in out
    assert history.epoch == [0, 1]


def test_scheduler_refuses_a_schedule_learning_rate():
    """Keras reads the schedule's rate (0.1 before any step), then refuses to set it."""
    with pytest.raises(
        TypeError, match=r"LearningRateScheduler needs a float learning rate.*from a schedule"
    ):
        fit(_with_schedule(), [LearningRateScheduler(lambda epoch, lr: lr)])


def test_scheduler_refuses_a_non_callable():
    with pytest.raises(
        TypeError,
        match=r"schedule must be a function schedule\(epoch, lr\).*received 0.1 \(float\)",
    ):
        LearningRateScheduler(0.1)


def test_scheduler_refuses_a_non_number_result(model):
    scheduler = LearningRateScheduler(lambda epoch, lr: "fast")
    with pytest.raises(ValueError, match=r"must return a float; received 'fast' \(str\)"):
        fit(model, [scheduler])
