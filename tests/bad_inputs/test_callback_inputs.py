"""Bad inputs to ``phalanx.callbacks`` constructors and ``fit(callbacks=...)``: each is a
``CallbackArgumentError`` (a ValueError and a TypeError) naming the callback, the argument and
the value; what Keras 3 accepts stays accepted."""

import pathlib

import jax
import numpy as np
import pytest
from catalog import Case, run

import phalanx
from phalanx import layers
from phalanx.callbacks import (
    BackupAndRestore,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
    TensorBoard,
)
from phalanx.errors import CallbackArgumentError

X = np.random.default_rng(0).random((8, 3), np.float32)
Y = np.random.default_rng(1).random((8, 1), np.float32)


def _model():
    with phalanx.OneDeviceStrategy(jax.devices()[0]).scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    return model


CASES = [
    Case(
        "fit with an int callback",
        lambda: _model().fit(X, Y, verbose=0, callbacks=[1]),
        CallbackArgumentError,
        r"fit's callbacks\[0\] must be a phalanx.callbacks.Callback; received 1 \(int\)",
    ),
    Case(
        "EarlyStopping monitor an int",
        lambda: EarlyStopping(monitor=3),
        CallbackArgumentError,
        r"EarlyStopping: monitor must be the name of a value .*received 3 \(int\)",
    ),
    Case(
        "EarlyStopping patience a float",
        lambda: EarlyStopping(patience=1.5),
        CallbackArgumentError,
        r"EarlyStopping: patience must be an integer .*received 1.5 \(float\)",
    ),
    Case(
        "EarlyStopping mode a list",
        lambda: EarlyStopping(mode=["min"]),
        CallbackArgumentError,
        r"mode must be 'auto', 'min' or 'max'; received mode=\['min'\]",
    ),
    Case(
        "BackupAndRestore(None)",
        lambda: BackupAndRestore(None),
        CallbackArgumentError,
        r"BackupAndRestore: backup_dir must be a folder .*received None \(NoneType\)",
    ),
    Case(
        "BackupAndRestore('')",
        lambda: BackupAndRestore(""),
        CallbackArgumentError,
        r"BackupAndRestore: backup_dir is empty",
    ),
    Case(
        "ModelCheckpoint(3)",
        lambda: ModelCheckpoint(3),
        CallbackArgumentError,
        r"ModelCheckpoint: filepath must be a file path .*received 3 \(int\)",
    ),
    Case(
        "ReduceLROnPlateau factor 1.5",
        lambda: ReduceLROnPlateau(factor=1.5),
        CallbackArgumentError,
        r"ReduceLROnPlateau: factor must be in \[0, 1\) .*received factor=1.5",
    ),
    Case(
        "ReduceLROnPlateau factor a str",
        lambda: ReduceLROnPlateau(factor="0.5"),
        CallbackArgumentError,
        r"factor must be in \[0, 1\) .*received factor='0.5'",
    ),
    Case(
        "LearningRateScheduler of a str",
        lambda: LearningRateScheduler("x"),
        CallbackArgumentError,
        r"LearningRateScheduler: schedule must be a function .*received 'x' \(str\)",
    ),
    Case(
        "TensorBoard log_dir an int",
        lambda: TensorBoard(log_dir=3),
        CallbackArgumentError,
        r"TensorBoard: log_dir must be a folder .*received 3 \(int\)",
    ),
    Case(
        "CSVLogger(None)",
        lambda: CSVLogger(None),
        CallbackArgumentError,
        r"CSVLogger: filename must be a file path .*received None \(NoneType\)",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_callback_argument(case):
    run(case)


def test_the_error_is_a_value_error_and_a_type_error():
    # Keras raises ValueError for some (BackupAndRestore(None), factor >= 1), TypeError for others.
    assert issubclass(CallbackArgumentError, ValueError)
    assert issubclass(CallbackArgumentError, TypeError)


def test_what_keras_accepts_stays_accepted(tmp_path):
    """Negative patience (Keras 3 stops as with 0), paths as pathlib.Path, numpy integers."""
    assert EarlyStopping(patience=-1, start_from_epoch=np.int64(-1)).patience == -1
    assert ReduceLROnPlateau(patience=-2, cooldown=np.int32(0)).patience == -2
    assert CSVLogger(pathlib.Path(tmp_path) / "log.csv").filename.endswith("log.csv")
    assert ModelCheckpoint(tmp_path / "m.weights.h5").filepath.endswith("m.weights.h5")
    assert TensorBoard(log_dir=tmp_path).log_dir == str(tmp_path)
    assert BackupAndRestore(tmp_path / "backup").backup_dir.endswith("backup")
