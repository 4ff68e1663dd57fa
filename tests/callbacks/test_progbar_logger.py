"""The progress bar prints Keras 3's lines: plain once per epoch off a terminal, live on one.

Every test runs the real ``fit``/``evaluate``/``predict``; the values printed
are checked against the history (or ``evaluate``'s result) in Keras's format.
The bar reads a fake clock, so the times printed do not depend on the machine.
"""

import io
import re

import numpy as np
import pytest
from real_fit import X, Y, fit, scripted
from rich.console import Console

import phalanx
from phalanx.callbacks import ProgbarLogger
from phalanx.callbacks._progbar import format_eta, format_step_time, format_value

BAR = "━" * 20
V = r"-?\d\.\d{4}"  # a value as the bar prints it (between 0.001 and 10)


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


def _values(history, epoch, keys=("accuracy", "loss", "val_accuracy", "val_loss")):
    """`` - key: value`` for each key, as the bar prints the epoch's logs."""
    return "".join(f" - {k}: {format_value(history.history[k][epoch])}" for k in keys)


def test_plain_verbose_1_prints_one_keras_line_per_epoch(model):
    out, bar = _plain()
    history = fit(model, [bar], epochs=2, steps_per_epoch=59, validation=True, verbose=1)
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines() == [
        "Epoch 1/2",
        f"59/59 {BAR} 1s 9ms/step{_values(history, 0)}",
        "Epoch 2/2",
        f"59/59 {BAR} 1s 9ms/step{_values(history, 1)}",
    ]


def test_plain_line_matches_the_keras_pattern_with_fused_steps(make_model):
    out, bar = _plain(tick=0.05)
    fit(make_model(10), [bar], epochs=3, steps_per_epoch=59, validation=True, verbose=1)
    lines = out.getvalue().splitlines()
    assert lines[::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    pattern = re.compile(
        rf"^59/59 ━{{20}} \d+s \d+(s|ms|us)/step - accuracy: {V} - loss: {V}"
        rf" - val_accuracy: {V} - val_loss: {V}$"
    )
    for line in lines[1::2]:
        assert pattern.match(line), line
    # One clock tick per update: the 5 executions after the first (compilation, left
    # out) and the epoch end span 0.30 s for 49 steps: 6 ms/step.
    assert " 6ms/step " in lines[1]


def test_verbose_2_prints_one_summary_line_per_epoch(model):
    out, bar = _plain(tick=0.531)  # verbose 2 reads the clock at the start and at the end
    history = fit(model, [bar], epochs=2, steps_per_epoch=59, validation=True, verbose=2)
    assert out.getvalue().splitlines() == [
        "Epoch 1/2",
        f"59/59 - 1s - 9ms/step{_values(history, 0)}",
        "Epoch 2/2",
        f"59/59 - 1s - 9ms/step{_values(history, 1)}",
    ]


def test_verbose_0_prints_nothing(model, capsys):
    out, bar = _plain()
    fit(model, [bar], epochs=2, verbose=0)
    assert out.getvalue() == ""
    assert capsys.readouterr().out == ""


def _unknown_length(steps):
    """A generator dataset of ``steps`` batches of 8: its length is unknown until read."""

    def batches():
        for i in range(steps):
            j = i * 8 % len(X)
            yield X[j : j + 8], Y[j : j + 8]

    spec = phalanx.data.TensorSpec
    return phalanx.data.Dataset.from_generator(
        batches, output_signature=(spec((None, 3), np.float32), spec((None,), np.int32))
    )


def test_one_epoch_has_no_epoch_header_and_unknown_steps_are_learned(model):
    out, bar = _plain()
    history = model.fit(_unknown_length(7), callbacks=[bar], verbose=1)
    assert bar.params["steps"] is None
    assert re.fullmatch(
        rf"7/7 {BAR} \d+s \d+ms/step{re.escape(_values(history, 0, ('accuracy', 'loss')))}\n",
        out.getvalue(),
    )
    assert bar.target == 7


def test_metrics_are_ordered_as_keras_prints_them(model):
    """``zeta`` and a tiny ``val_accuracy`` are written into the epoch logs before the bar."""
    out, bar = _plain()
    callbacks = [scripted("zeta", [1.0]), scripted("val_accuracy", [0.0001]), bar]
    history = fit(model, callbacks, steps_per_epoch=2, validation=True, verbose=1)
    loss, val_loss = (format_value(history.history[k][0]) for k in ("loss", "val_loss"))
    accuracy = format_value(history.history["accuracy"][0])
    assert out.getvalue().endswith(
        f" - accuracy: {accuracy} - loss: {loss} - zeta: 1.0000"
        f" - val_accuracy: 1.0000e-04 - val_loss: {val_loss}\n"
    )


def test_evaluate_and_predict_have_their_own_bar(model):
    out, bar = _plain(tick=0.002)
    result = model.evaluate(X, Y, batch_size=8, callbacks=[bar], verbose=1, return_dict=True)
    model.predict(X, batch_size=8, callbacks=[bar], verbose=1)
    first, second = out.getvalue().splitlines()
    accuracy, loss = format_value(result["accuracy"]), format_value(result["loss"])
    assert re.fullmatch(rf"4/4 {BAR} 0s \d+ms/step - accuracy: {accuracy} - loss: {loss}", first)
    assert re.fullmatch(rf"4/4 {BAR} 0s \d+ms/step", second)


def test_prints_on_process_0_only(model, as_process):
    as_process(1)
    out, bar = _plain()
    fit(model, [bar], epochs=2, validation=True, verbose=1)
    assert out.getvalue() == ""


def test_default_console_writes_plain_lines_to_captured_stdout(model, capsys, monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    history = fit(model, epochs=2, steps_per_epoch=3, verbose=1)  # fit adds the ProgbarLogger
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2"
    values = re.escape(_values(history, 0, ("accuracy", "loss")))
    assert re.fullmatch(rf"3/3 {BAR} \d+s \d+(s|ms|us)/step{values}", lines[1])


def test_terminal_mode_redraws_one_live_line(model):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system="standard")
    bar = ProgbarLogger(console=console, clock=Clock(0.009))
    history = fit(model, [bar], epochs=2, steps_per_epoch=59, validation=True, verbose=1)
    raw = out.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert "\x1b[32m" in raw  # the done part of the bar is green
    assert plain.count("Epoch 1/2") == 1
    # Intermediate frames show the ETA, the final one the elapsed time and the val_ metrics.
    assert re.search(rf"\b\d\d/59 ━{{20}} 0s 9ms/step - accuracy: {V} - loss: {V}", plain)
    assert plain.count(" - val_loss: ") == 2
    assert plain.rstrip().endswith(_values(history, 1))


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
