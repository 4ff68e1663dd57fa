"""The progress bar prints Keras 3's lines: plain once per epoch off a terminal, live on one."""

import io
import re

import pytest
from callback_fakes import fit
from rich.console import Console

from phalanx.callbacks import CallbackList, ProgbarLogger
from phalanx.callbacks._progbar import format_eta, format_step_time, format_value

TRAIN = {"loss": 0.0931, "accuracy": 0.9712}
VAL = {"loss": 0.112, "accuracy": 0.965}
BAR = "━" * 20


class Clock:
    """Advances ``tick`` seconds at each reading: one reading per bar start and per update."""

    def __init__(self, tick):
        self.tick = tick
        self.now = 0.0

    def __call__(self):
        self.now += self.tick
        return self.now


def _plain(tick=0.009):
    out = io.StringIO()
    return out, ProgbarLogger(console=Console(file=out, force_terminal=False), clock=Clock(tick))


def test_plain_verbose_1_prints_one_keras_line_per_epoch(model):
    out, bar = _plain()
    fit(model, [bar], train_logs=[TRAIN] * 2, val_logs=[VAL] * 2, steps=59, verbose=1)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    line = f"59/59 {BAR} 1s 9ms/step - accuracy: 0.9712 - loss: 0.0931 - val_accuracy: 0.9650 - val_loss: 0.1120"
    assert text.splitlines() == ["Epoch 1/2", line, "Epoch 2/2", line]


def test_plain_line_matches_the_keras_pattern_with_fused_steps(model):
    out, bar = _plain(tick=0.05)
    fit(
        model,
        [bar],
        train_logs=[TRAIN] * 3,
        val_logs=[VAL] * 3,
        steps=59,
        steps_per_execution=10,
        verbose=1,
    )
    lines = out.getvalue().splitlines()
    assert lines[::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    pattern = re.compile(
        r"^59/59 ━{20} \d+s \d+(s|ms|us)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}"
        r" - val_accuracy: \d\.\d{4} - val_loss: \d\.\d{4}$"
    )
    for line in lines[1::2]:
        assert pattern.match(line), line
    # One clock tick per update: the 5 executions after the first (compilation, left
    # out) and the epoch end span 0.30 s for 49 steps: 6 ms/step.
    assert " 6ms/step " in lines[1]


def test_verbose_2_prints_one_summary_line_per_epoch(model):
    out, bar = _plain(tick=0.531)  # verbose 2 reads the clock at the start and at the end
    fit(model, [bar], train_logs=[TRAIN] * 2, val_logs=[VAL] * 2, steps=59, verbose=2)
    assert out.getvalue().splitlines() == [
        "Epoch 1/2",
        "59/59 - 1s - 9ms/step - accuracy: 0.9712 - loss: 0.0931 - val_accuracy: 0.9650 - val_loss: 0.1120",
        "Epoch 2/2",
        "59/59 - 1s - 9ms/step - accuracy: 0.9712 - loss: 0.0931 - val_accuracy: 0.9650 - val_loss: 0.1120",
    ]


def test_verbose_0_prints_nothing(model):
    out, bar = _plain()
    fit(model, [bar], train_logs=[TRAIN] * 2, steps=5, verbose=0)
    assert out.getvalue() == ""


def test_one_epoch_has_no_epoch_header_and_unknown_steps_are_learned(model):
    out, bar = _plain()
    fit(model, [bar], train_logs=[TRAIN], steps=7, steps_known=False, verbose=1)
    assert re.fullmatch(
        rf"7/7 {BAR} \d+s \d+ms/step - accuracy: 0.9712 - loss: 0.0931\n", out.getvalue()
    )
    assert bar.target == 7


def test_metrics_are_ordered_as_keras_prints_them(model):
    out, bar = _plain()
    logs = {"loss": 0.5, "zeta": 1.0, "accuracy": 0.25}
    fit(
        model,
        [bar],
        train_logs=[logs],
        val_logs=[{"loss": 0.5, "accuracy": 0.0001}],
        steps=2,
        verbose=1,
    )
    assert out.getvalue().endswith(
        " - accuracy: 0.2500 - loss: 0.5000 - zeta: 1.0000 - val_accuracy: 1.0000e-04 - val_loss: 0.5000\n"
    )


def test_evaluate_and_predict_have_their_own_bar():
    out, bar = _plain(tick=0.002)
    evaluate = CallbackList([bar], epochs=1, steps=32, verbose=1)
    evaluate.on_test_begin()
    for step in range(0, 32, 8):
        evaluate.on_test_batch_begin(step)
        evaluate.on_test_batch_end(step + 7, {"loss": 0.25, "accuracy": 0.5})
    evaluate.on_test_end({"loss": 0.25, "accuracy": 0.5})
    predict = CallbackList([bar], epochs=1, steps=4, verbose=1)
    predict.on_predict_begin()
    for step in range(4):
        predict.on_predict_batch_end(step, {"outputs": [1, 2]})
    predict.on_predict_end()
    first, second = out.getvalue().splitlines()
    assert re.fullmatch(rf"32/32 {BAR} 0s \d+us/step - accuracy: 0.5000 - loss: 0.2500", first)
    assert re.fullmatch(rf"4/4 {BAR} 0s \d+ms/step", second)


def test_prints_on_process_0_only(model, as_process):
    as_process(1)
    out, bar = _plain()
    fit(model, [bar], train_logs=[TRAIN] * 2, val_logs=[VAL] * 2, steps=5, verbose=1)
    assert out.getvalue() == ""


def test_default_console_writes_plain_lines_to_captured_stdout(model, capsys, monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    fit(model, [], train_logs=[TRAIN] * 2, steps=3, verbose=1)  # fit adds the ProgbarLogger
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2"
    assert re.fullmatch(
        rf"3/3 {BAR} \d+s \d+(s|ms|us)/step - accuracy: 0.9712 - loss: 0.0931", lines[1]
    )


def test_terminal_mode_redraws_one_live_line(model):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system="standard")
    bar = ProgbarLogger(console=console, clock=Clock(0.009))
    fit(model, [bar], train_logs=[TRAIN] * 2, val_logs=[VAL] * 2, steps=59, verbose=1)
    raw = out.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert "\x1b[32m" in raw  # the done part of the bar is green
    assert plain.count("Epoch 1/2") == 1
    # Intermediate frames show the ETA, the final one the elapsed time and the val_ metrics.
    assert re.search(r"\b\d\d/59 ━{20} 0s 9ms/step - accuracy: 0.9712 - loss: 0.0931", plain)
    assert plain.count(" - val_loss: 0.1120") == 2
    assert plain.rstrip().endswith(" - val_loss: 0.1120")


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (2.4, "2s/step"),
        (1.0, "1s/step"),
        (0.0093, "9ms/step"),
        (0.001, "1ms/step"),
        (8.5e-5, "85us/step"),
        (0, "0s/step"),
    ],
)
def test_step_time_units(seconds, expected):
    assert format_step_time(seconds, "step") == expected


def test_value_and_eta_formats():
    assert format_value(0.09312) == "0.0931"
    assert format_value(0.0009) == "9.0000e-04"
    assert format_value(-2.5) == "-2.5000"
    assert [format_eta(s) for s in (42.7, 187, 3723)] == ["42s", "3:07", "1:02:03"]
