"""TensorBoard writes Keras's tags and steps into log_dir/train and log_dir/validation.

Every test runs the real ``fit``/``evaluate`` and reads the event files back
(``tb_events``); the values written are checked against the history or the
logs a recording callback saw.
"""

import glob
import os
from types import SimpleNamespace

import pytest
import tensorboardX.event_file_writer
from real_fit import LEARNING_RATE, X, Y, build_model, fit
from tb_events import read_events, read_scalars

import phalanx
from phalanx.callbacks import Callback, LambdaCallback, TensorBoard


class BatchLogs(Callback):
    """Records each execution's logs by total step (it only reads them: fit runs ahead)."""

    batch_hooks_read_only_logs = True

    def __init__(self, steps_per_epoch):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.epoch = 0
        self.by_step = {}

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        # a last, shorter execution's index is Keras's begin + steps_per_execution - 1
        done = min(batch + 1, self.steps_per_epoch)
        self.by_step[self.epoch * self.steps_per_epoch + done] = dict(logs)


def test_epoch_scalars_in_keras_layout(model, tmp_path):
    start = model.optimizer.iterations  # the shared model may have trained before
    history = fit(model, [TensorBoard(log_dir=str(tmp_path))], epochs=3, validation=True)
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
    assert [v for _, v in train["epoch_loss"]] == pytest.approx(history.history["loss"])
    assert [v for _, v in train["epoch_accuracy"]] == pytest.approx(history.history["accuracy"])
    assert [v for _, v in val["epoch_loss"]] == pytest.approx(history.history["val_loss"])
    assert [v for _, v in val["epoch_accuracy"]] == pytest.approx(history.history["val_accuracy"])
    assert [v for _, v in train["epoch_learning_rate"]] == pytest.approx([0.1] * 3)
    # Validation results against the optimizer's iterations (4 steps per epoch).
    assert [s - start for s, _ in val["evaluation_loss_vs_iterations"]] == [4, 8, 12]


def test_no_batch_scalars_with_epoch_updates(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path))], epochs=3)
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
    make_model, tmp_path, steps_per_execution, expected_steps
):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=3)
    seen = BatchLogs(steps_per_epoch=10)
    fit(make_model(steps_per_execution), [seen, board], epochs=2, steps_per_epoch=10)
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_loss"]] == expected_steps
    # The value written at a step is the logs of the execution that ended there.
    for step, value in scalars["batch_loss"]:
        assert value == pytest.approx(seen.by_step[step]["loss"])
    for step, value in scalars["batch_accuracy"]:
        assert value == pytest.approx(seen.by_step[step]["accuracy"])


def test_update_freq_batch_writes_every_step(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path), update_freq="batch")], steps_per_epoch=3)
    assert [s for s, _ in read_scalars(str(tmp_path / "train"))["batch_loss"]] == [1, 2, 3]


def test_steps_per_second(make_model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=2, write_steps_per_second=True)
    fit(make_model(2), [board], steps_per_epoch=4)
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_steps_per_second"]] == [2, 4]
    assert len(scalars["epoch_steps_per_second"]) == 1
    assert all(v > 0 for _, v in scalars["epoch_steps_per_second"])


def test_event_files_are_closed_at_train_end(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path))
    fit(model, [board], epochs=3, validation=True)
    assert board._writers == {}
    # One event file per directory, each complete (every record passes its CRC check).
    for sub in ("train", "validation"):
        files = glob.glob(str(tmp_path / sub / "events.out.tfevents.*"))
        assert len(files) == 1
        assert read_events(str(tmp_path / sub))[0].file_version == "brain.Event:2"


def test_a_schedule_learning_rate_is_written_as_it_decays(tmp_path):
    """As Keras 3: the rate written at each epoch end is the optimizer's rate then."""
    decay = phalanx.optimizers.schedules.ExponentialDecay(LEARNING_RATE, 4, 0.5)
    model = build_model(optimizer=phalanx.optimizers.SGD(decay))
    rates = []
    read = LambdaCallback(on_epoch_end=lambda e, logs: rates.append(model.optimizer.learning_rate))
    fit(model, [read, TensorBoard(log_dir=str(tmp_path))], epochs=3)
    written = read_scalars(str(tmp_path / "train"))["epoch_learning_rate"]
    assert [v for _, v in written] == pytest.approx(rates)
    # Keras's optimizer.learning_rate: the schedule at the steps done (4 per epoch).
    assert rates == pytest.approx([0.05, 0.025, 0.0125])


def test_histograms(model, tmp_path):
    fit(model, [TensorBoard(log_dir=str(tmp_path), histogram_freq=2)], epochs=3)
    events = read_events(str(tmp_path / "train"))
    hist = [(e.step, v.tag) for e in events for v in e.summary.value if v.HasField("histo")]
    assert hist == [(0, "weights/0"), (0, "weights/1"), (2, "weights/0"), (2, "weights/1")]
    # The histogram counts every weight of the layer: a 3x2 kernel and 2 biases.
    counts = sorted(
        v.histo.num for e in events for v in e.summary.value if v.HasField("histo") and e.step == 0
    )
    assert counts == [2, 6]


def test_only_process_0_writes(model, tmp_path, as_process):
    as_process(1)
    fit(
        model,
        [TensorBoard(log_dir=str(tmp_path / "logs"), update_freq=1)],
        epochs=3,
        validation=True,
    )
    assert not os.path.exists(tmp_path / "logs")


def test_standalone_evaluate_closes_its_file(tmp_path):
    board = TensorBoard(log_dir=str(tmp_path))
    model = build_model()  # never trained: 0 iterations
    result = model.evaluate(X, Y, batch_size=8, callbacks=[board], verbose=0, return_dict=True)
    assert board._writers == {}
    scalars = read_scalars(str(tmp_path / "validation"))
    assert scalars == {
        "evaluation_loss_vs_iterations": [(0, pytest.approx(result["loss"]))],
        "evaluation_accuracy_vs_iterations": [(0, pytest.approx(result["accuracy"]))],
    }


def test_evaluation_is_written_at_the_optimizers_iterations(model, tmp_path):
    """As Keras 3: ``step=model.optimizer.iterations``, across fit calls and after them."""
    start = model.optimizer.iterations  # the shared model may have trained before
    board = TensorBoard(log_dir=str(tmp_path / "fit"))
    fit(model, [board], validation=True)
    fit(model, [board], validation=True)  # a second fit goes on from 4 steps more
    fitted = read_scalars(str(tmp_path / "fit" / "validation"))["evaluation_loss_vs_iterations"]
    assert [s - start for s, _ in fitted] == [4, 8]
    later = TensorBoard(log_dir=str(tmp_path / "evaluate"))
    model.evaluate(X, Y, batch_size=8, callbacks=[later], verbose=0)
    scalars = read_scalars(str(tmp_path / "evaluate" / "validation"))
    assert [s - start for s, _ in scalars["evaluation_loss_vs_iterations"]] == [8]


def test_writers_opened_in_the_same_second_keep_their_own_files(model, tmp_path, monkeypatch):
    """tensorboardX names a file by the second and the host: ``fit`` then ``evaluate`` with one
    board, in the same second (the clock tensorboardX reads is frozen), write two files."""
    frozen = SimpleNamespace(time=lambda: 1_796_000_000.0)
    monkeypatch.setattr(tensorboardX.event_file_writer, "time", frozen)
    start = model.optimizer.iterations
    board = TensorBoard(log_dir=str(tmp_path))
    history = fit(model, [board], validation=True)
    result = model.evaluate(X, Y, batch_size=8, callbacks=[board], verbose=0, return_dict=True)
    assert len(glob.glob(str(tmp_path / "validation" / "events.out.tfevents.*"))) == 2
    val = read_scalars(str(tmp_path / "validation"))
    assert [v for _, v in val["epoch_loss"]] == pytest.approx(history.history["val_loss"])
    written = sorted((s - start, v) for s, v in val["evaluation_loss_vs_iterations"])
    expected = sorted([(4, history.history["val_loss"][0]), (4, result["loss"])])
    assert [s for s, _ in written] == [s for s, _ in expected]
    assert [v for _, v in written] == pytest.approx([v for _, v in expected])


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
        NotImplementedError, match=r"write_images=True.*not supported.*leave write_images=False"
    ):
        TensorBoard(write_images=True)


def test_resumed_run_continues_the_step_count(model, tmp_path):
    board = TensorBoard(log_dir=str(tmp_path), update_freq=2)
    fit(model, [board], epochs=3, initial_epoch=2)
    scalars = read_scalars(str(tmp_path / "train"))
    assert [s for s, _ in scalars["batch_loss"]] == [10, 12]  # epoch 2 = steps 9..12
    assert [s for s, _ in scalars["epoch_loss"]] == [2]
