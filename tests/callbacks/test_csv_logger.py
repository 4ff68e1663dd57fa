"""CSVLogger writes Keras's columns: epoch, then the first epoch's keys sorted."""

import os

import pytest
from callback_fakes import fit

from phalanx.callbacks import CSVLogger, ReduceLROnPlateau

TRAIN = [{"loss": 0.5, "accuracy": 0.75}, {"loss": 0.25, "accuracy": 0.875}]
VAL = [{"loss": 0.625, "accuracy": 0.5}, {"loss": 0.375, "accuracy": 0.625}]


def _read(path):
    with open(path, newline="") as f:
        return f.read()


def test_rows_with_validation(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], train_logs=TRAIN, val_logs=VAL)
    assert _read(path) == (
        "epoch,accuracy,loss,val_accuracy,val_loss\r\n"
        "0,0.75,0.5,0.5,0.625\r\n"
        "1,0.875,0.25,0.625,0.375\r\n"
    )


def test_val_columns_are_reserved_when_the_first_epoch_has_none(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], train_logs=TRAIN, val_logs=[None, VAL[1]])
    assert _read(path).splitlines() == [
        "epoch,accuracy,loss,val_accuracy,val_loss",
        "0,0.75,0.5,NA,NA",
        "1,0.875,0.25,0.625,0.375",
    ]


def test_separator_and_learning_rate_column(model, tmp_path):
    path = tmp_path / "sub" / "log.tsv"
    fit(
        model,
        [ReduceLROnPlateau(monitor="loss"), CSVLogger(path, separator="\t")],
        train_logs=TRAIN,
        val_logs=VAL,
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
    assert first.split("\t")[2] == "0.1"


def test_append_adds_rows_without_a_second_header(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], train_logs=TRAIN[:1])
    fit(model, [CSVLogger(str(path), append=True)], train_logs=TRAIN)
    assert _read(path).splitlines() == [
        "epoch,accuracy,loss,val_accuracy,val_loss",
        "0,0.75,0.5,NA,NA",
        "0,0.75,0.5,NA,NA",
        "1,0.875,0.25,NA,NA",
    ]


def test_without_append_overwrites(model, tmp_path):
    path = tmp_path / "log.csv"
    fit(model, [CSVLogger(str(path))], train_logs=TRAIN)
    fit(model, [CSVLogger(str(path))], train_logs=TRAIN[:1])
    assert len(_read(path).splitlines()) == 2


def test_only_process_0_writes(model, tmp_path, as_process):
    as_process(3)
    fit(model, [CSVLogger(str(tmp_path / "log.csv"))], train_logs=TRAIN)
    assert os.listdir(tmp_path) == []


def test_bad_separator_is_refused():
    with pytest.raises(ValueError, match=r"separator must be one character; received ', '"):
        CSVLogger("log.csv", separator=", ")
