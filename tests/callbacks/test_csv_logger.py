"""CSVLogger writes Keras's columns: epoch, then the first epoch's keys sorted (real fit)."""

import os

import pytest
from real_fit import fit

from phalanx.callbacks import CSVLogger, ReduceLROnPlateau


def _read(path):
    with open(path, newline="") as f:
        return f.read()


def _row(epoch, history, keys, sep=","):
    """The row Keras writes for ``epoch``: the history's values, NA where there are none."""
    cells = [str(epoch)]
    for key in keys:
        values = history.history.get(key)
        cells.append(str(values[epoch]) if values and epoch < len(values) else "NA")
    return sep.join(cells)


KEYS = ["accuracy", "loss", "val_accuracy", "val_loss"]


def test_rows_with_validation(model, tmp_path):
    path = tmp_path / "log.csv"
    history = fit(model, [CSVLogger(str(path))], epochs=2, validation=True)
    assert _read(path) == (
        "epoch,accuracy,loss,val_accuracy,val_loss\r\n"
        f"{_row(0, history, KEYS)}\r\n"
        f"{_row(1, history, KEYS)}\r\n"
    )
    assert "NA" not in _read(path)


def test_val_columns_are_reserved_when_the_first_epoch_has_none(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], epochs=2, validation=True, validation_freq=2)
    header, first, second = _read(path).splitlines()
    assert header == "epoch,accuracy,loss,val_accuracy,val_loss"
    assert first.endswith(",NA,NA") and first.startswith("0,")
    val_accuracy, val_loss = second.split(",")[3:]
    assert second.startswith("1,") and float(val_accuracy) >= 0 and float(val_loss) > 0


def test_separator_and_learning_rate_column(model, tmp_path):
    path = tmp_path / "sub" / "log.tsv"
    fit(
        model,
        [ReduceLROnPlateau(monitor="loss"), CSVLogger(path, separator="\t")],
        epochs=2,
        validation=True,
    )
    header, first, _ = _read(path).splitlines()
    assert header.split("\t") == [
        "epoch",
        "accuracy",
        "learning_rate",
        "loss",
        "val_accuracy",
        "val_loss",
    ]
    assert float(first.split("\t")[2]) == pytest.approx(0.1)


def test_append_adds_rows_without_a_second_header(model, tmp_path):
    path = tmp_path / "log.csv"
    first = fit(model, [CSVLogger(str(path))])
    second = fit(model, [CSVLogger(str(path), append=True)], epochs=2)
    assert _read(path).splitlines() == [
        "epoch,accuracy,loss,val_accuracy,val_loss",
        _row(0, first, KEYS),
        _row(0, second, KEYS),
        _row(1, second, KEYS),
    ]
    assert _row(1, second, KEYS).endswith(",NA,NA")


def test_without_append_overwrites(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], epochs=2)
    fit(model, [CSVLogger(str(path))])
    assert len(_read(path).splitlines()) == 2


def test_only_process_0_writes(model, tmp_path, as_process):
    as_process(3)
    fit(model, [CSVLogger(str(tmp_path / "log.csv"))], epochs=2)
    assert os.listdir(tmp_path) == []


def test_bad_separator_is_refused():
    with pytest.raises(ValueError, match=r"separator must be one character; received ', '"):
        CSVLogger("log.csv", separator=", ")
