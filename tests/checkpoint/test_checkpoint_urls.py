"""Checkpoint paths that are URLs: file:// is a local path; other URLs are refused, not
written under the working directory as a folder named 'memory:' or 'gs:'."""

import os

import numpy as np
import pytest

import phalanx as px
from phalanx.callbacks import BackupAndRestore, ModelCheckpoint
from phalanx.errors import CheckpointError


def _model():
    m = px.Sequential([px.layers.Input(shape=(3,)), px.layers.Dense(2)])
    m.compile("adam", "mse")
    m.fit(np.ones((8, 3), np.float32), np.ones((8, 2), np.float32), verbose=0)
    return m


def test_a_file_url_is_the_local_path(tmp_path):
    m = _model()
    saved = px.checkpoint.Checkpoint(model=m).save(f"file://{tmp_path}/ck")
    assert saved == f"{tmp_path}/ck-1" and os.path.isdir(saved)
    px.checkpoint.Checkpoint(model=_model()).restore(f"file://{saved}")


@pytest.mark.parametrize("url", ["memory://bucket/ck", "gs://bucket/ck", "s3://bucket/ck"])
def test_a_remote_url_is_refused_before_anything_is_written(url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    m = _model()
    with pytest.raises(CheckpointError, match="remote URL.*local or mounted directory"):
        px.checkpoint.Checkpoint(model=m).save(url)
    with pytest.raises(CheckpointError, match="remote URL"):
        px.checkpoint.CheckpointManager(
            url, max_to_keep=1, checkpoint=px.checkpoint.Checkpoint(model=m)
        )
    with pytest.raises(CheckpointError, match="BackupAndRestore.*remote URL"):
        BackupAndRestore(url)
    with pytest.raises(CheckpointError, match="ModelCheckpoint.*remote URL"):
        ModelCheckpoint(url + "/e{epoch}", save_weights_only=False)
    assert os.listdir(tmp_path) == []
