"""TensorBoard writes Keras's tags and steps into log_dir/train and log_dir/validation."""

import glob
import os

import pytest
from callback_fakes import FakeModel, fit, read_events, read_scalars

from phalanx.callbacks import TensorBoard

TRAIN = [{"accuracy": 0.5 + e / 10, "loss": 1.0 - e / 10} for e in range(3)]
VAL = [{"accuracy": 0.4 + e / 10, "loss": 1.1 - e / 10} for e in range(3)]


def test_epoch_scalars_in_keras_layout(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path))], train_logs=TRAIN, val_logs=VAL)
    assert sorted(os.listdir(tmp_path)) == ["train", "validation"]
    train = read_scalars(str(tmp_path / "train"))
    val = read_scalars(str(tmp_path / "validation"))
    assert set(train) == {"epoch_loss", "epoch_accuracy", "epoch_learning_rate"}
    assert set(val) == {
        "epoch_loss",
        "epoch_accuracy",
        "evaluation_loss_vs_iterations",
        "evaluation_accuracy_vs_iterations",
    }
    assert [s for s, _ in train["epoch_loss"]] == [0, 1, 2]
    assert [v for _, v in train["epoch_loss"]] == pytest.approx([1.0, 0.9, 0.8])
    assert [v for _, v in val["epoch_accuracy"]] == pytest.approx([0.4, 0.5, 0.6])
    assert [v for _, v in train["epoch_learning_rate"]] == pytest.approx([0.1] * 3)
    # Validation results against the training steps done (4 per epoch).
    assert [s for s, _ in val["evaluation_loss_vs_iterations"]] == [4, 8, 12]


def test_no_batch_scalars_with_epoch_updates(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path))], train_logs=TRAIN)
    assert not any(t.startswith("batch_") for t in read_scalars(str(tmp_path / "train")))
    assert not os.path.exists(tmp_path / "validation")


@pytest.mark.parametrize(
    ("steps_per_execution", "expected_steps"),
    [
        (1, [3, 6, 9, 12, 15, 18]),
        # Executions end at 4, 8, 10 | 14, 18, 20: written when a multiple of 3 was passed.
        (4, [4, 8, 10, 14, 18]),
        (5, [5, 10, 15, 20]),
    ],
)
def test_batch_scalars_every_n_steps_through_fused_executions(
    model, tmp_path, steps_per_execution, expected_steps
):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=3)

    def batch_logs(epoch, last):
        return {"loss": float(epoch * 100 + last)}

    fit(
        model,
        [board],
        train_logs=[{"loss": 1.0}] * 2,
        steps=10,
        steps_per_execution=steps_per_execution,
        batch_logs=batch_logs,
    )
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_loss"]] == expected_steps
    # The value written is that execution's logs: (epoch, last step) recovered from the step.
    for step, value in scalars["batch_loss"]:
        epoch, last = divmod(step - 1, 10)
        assert value == epoch * 100 + last


def test_update_freq_batch_writes_every_step(model, tmp_path):
    fit(
        model,
        [TensorBoard(log_dir=str(tmp_path), update_freq="batch")],
        train_logs=TRAIN[:1],
        steps=3,
    )
    assert [s for s, _ in read_scalars(str(tmp_path / "train"))["batch_loss"]] == [1, 2, 3]


def test_steps_per_second(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=2, write_steps_per_second=True)
    fit(model, [board], train_logs=TRAIN[:1], steps=4, steps_per_execution=2)
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_steps_per_second"]] == [2, 4]
    assert len(scalars["epoch_steps_per_second"]) == 1
    assert all(v > 0 for _, v in scalars["epoch_steps_per_second"])


def test_event_files_are_closed_at_train_end(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path))
    fit(model, [board], train_logs=TRAIN, val_logs=VAL)
    assert board._writers == {}
    # One event file per directory, each complete (every record passes its CRC check).
    for sub in ("train", "validation"):
        files = glob.glob(str(tmp_path / sub / "events.out.tfevents.*"))
        assert len(files) == 1
        assert read_events(str(tmp_path / sub))[0].file_version == "brain.Event:2"


def test_schedule_learning_rate_is_skipped(tmp_path):
    model = FakeModel(learning_rate=lambda step: 0.1)
    fit(model, [TensorBoard(log_dir=str(tmp_path))], train_logs=TRAIN)
    assert "epoch_learning_rate" not in read_scalars(str(tmp_path / "train"))


def test_histograms(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path), histogram_freq=2)], train_logs=TRAIN)
    events = read_events(str(tmp_path / "train"))
    hist = [(e.step, v.tag) for e in events for v in e.summary.value if v.HasField("histo")]
    assert hist == [(0, "weights/0"), (0, "weights/1"), (2, "weights/0"), (2, "weights/1")]


def test_only_process_0_writes(model, tmp_path, as_process):
    as_process(1)
    fit(
        model,
        [TensorBoard(log_dir=str(tmp_path / "logs"), update_freq=1)],
        train_logs=TRAIN,
        val_logs=VAL,
    )
    assert not os.path.exists(tmp_path / "logs")


def test_standalone_evaluate_closes_its_file(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path))
    board.set_model(model)
    board.on_test_begin()
    board.on_test_end({"loss": 0.5})
    assert board._writers == {}
    assert read_scalars(str(tmp_path / "validation")) == {
        "evaluation_loss_vs_iterations": [(0, 0.5)]
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"update_freq": 0},
            r"update_freq must be 'epoch', 'batch' or a positive number of steps; received update_freq=0",
        ),
        ({"update_freq": "step"}, r"received update_freq='step' \(str\)"),
        ({"histogram_freq": -1}, r"histogram_freq must be an integer >= 0"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TensorBoard(**kwargs)


def test_unsupported_options_say_so():
    with pytest.raises(
        NotImplementedError, match=r"profile_batch=5.*not supported.*leave profile_batch=0"
    ):
        TensorBoard(profile_batch=5)


def test_resumed_run_continues_the_step_count(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=2)
    fit(model, [board], train_logs=TRAIN, initial_epoch=2, steps=4)
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_loss"]] == [10, 12]  # epoch 2 = steps 9..12
    assert [s for s, _ in scalars["epoch_loss"]] == [2]
