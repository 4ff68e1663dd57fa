"""A damaged ``BackupAndRestore`` backup is never skipped silently (issue 29, item 2).

Before, an emptied ``ckpt_<n>`` folder made ``fit`` start over at epoch 1
without a word. Now the newest intact backup is restored and the message
names the damaged one and why; with none intact, ``fit`` raises.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import _file
from phalanx.errors import CheckpointError

X = np.random.default_rng(0).normal(size=(64, 6)).astype(np.float32)
Y = (np.abs(X[:, :4]).argmax(1)).astype(np.int32)


def _model():
    model = phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(8, activation="relu"), layers.Dense(4)]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _fit(model, folder, epochs):
    backup = phalanx.callbacks.BackupAndRestore(folder, delete_checkpoint=False)
    return model.fit(X, Y, batch_size=16, epochs=epochs, callbacks=[backup], verbose=0)


def _flip(path):
    file = os.path.join(path, _file.FILE)
    with open(file, "rb") as f:
        raw = bytearray(f.read())
    raw[-3] ^= 0x10  # in the last array's data
    with open(file, "wb") as f:
        f.write(raw)


def test_an_emptied_newest_backup_falls_back_to_the_intact_one_and_says_so(tmp_path, capsys):
    folder = tmp_path / "backup"
    _fit(_model(), folder, 2)
    assert sorted(os.listdir(folder)) == ["ckpt_2"]
    (folder / "ckpt_3").mkdir()  # what a damaged disk or a bad copy leaves
    model = _model()
    history = _fit(model, folder, 3)
    said = capsys.readouterr().out
    assert (
        f"the backup {folder / 'ckpt_3'} is damaged (kept as {folder / 'ckpt_3'}.damaged)" in said
    )
    assert "the folder is empty. Falling back to the previous intact backup" in said
    assert f"resuming from {folder / 'ckpt_2'} (epoch 3, 0 steps done in it)" in said
    assert history.epoch == [2]  # the third epoch only, not a start over
    reference = _model()
    reference.fit(X, Y, batch_size=16, epochs=3, verbose=0)
    for u, v in zip(reference.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


def test_a_flipped_bit_in_the_newest_backup_falls_back_to_the_previous(tmp_path, capsys):
    """Two backups (a process killed between a commit and the deletion of the previous one
    leaves both): the newest fails its CRC, the previous one is restored."""
    folder = tmp_path / "backup"
    _fit(_model(), folder, 2)
    shutil.copytree(folder / "ckpt_2", tmp_path / "kept")
    _fit(_model(), folder, 3)
    shutil.copytree(tmp_path / "kept", folder / "ckpt_2")
    _flip(folder / "ckpt_3")
    capsys.readouterr()
    model = _model()
    history = _fit(model, folder, 4)
    said = capsys.readouterr().out
    assert f"the backup {folder / 'ckpt_3'} is damaged: " in said
    assert "does not match its CRC32C" in said
    assert f"Falling back to the previous intact backup {folder / 'ckpt_2'}" in said
    assert history.epoch == [2, 3]
    reference = _model()
    reference.fit(X, Y, batch_size=16, epochs=4, verbose=0)
    for u, v in zip(reference.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)


def test_a_damaged_only_backup_is_an_error_not_a_start_over(tmp_path):
    folder = tmp_path / "backup"
    _fit(_model(), folder, 2)
    _flip(folder / "ckpt_2")
    model = _model()
    before = model.get_weights()
    with pytest.raises(
        CheckpointError,
        match=r"no intact backup in .*ckpt_2 is damaged .*CRC32C.*fit would start over at epoch 1",
    ):
        _fit(model, folder, 3)
    for u, v in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(u, v)
    shutil.rmtree(folder / "ckpt_2")
    (folder / "ckpt_2").mkdir()
    (folder / "ckpt_2" / "notes.txt").write_text("x")
    with pytest.raises(
        CheckpointError, match=r"ckpt_2 is damaged \(it holds \['notes.txt'\] but no checkpoint"
    ):
        _fit(_model(), folder, 3)
