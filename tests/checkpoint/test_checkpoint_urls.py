"""Checkpoint paths that are URLs: file:// is a local path (orbax writes it in place); other
URLs are written through phalanx.io (tests/checkpoint/test_checkpoint_remote.py), and one whose
protocol package is missing is refused at once, naming the extra to install."""

import os

import numpy as np
import pytest

import phalanx as px
from phalanx.callbacks import BackupAndRestore, ModelCheckpoint
from phalanx.errors import FileSystemNotInstalledError
from phalanx.io import gfile


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


def test_a_memory_url_is_written_there_not_under_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved = px.checkpoint.Checkpoint(model=_model()).save("memory://urls-test/ck")
    try:
        assert saved == "memory://urls-test/ck-1" and gfile.isdir(saved)
        assert os.listdir(tmp_path) == []
    finally:
        gfile.rmtree("memory://urls-test")


def test_a_url_without_its_package_names_the_extra_before_anything_is_written(
    tmp_path, monkeypatch
):
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed: gs:// URLs are served")
    monkeypatch.chdir(tmp_path)
    m = _model()
    url = "gs://bucket/ck"
    extra = r'pip install "phalanx\[gcs\]"'
    with pytest.raises(FileSystemNotInstalledError, match=extra):
        px.checkpoint.Checkpoint(model=m).save(url)
    with pytest.raises(FileSystemNotInstalledError, match=extra):
        px.checkpoint.CheckpointManager(
            url, max_to_keep=1, checkpoint=px.checkpoint.Checkpoint(model=m)
        )
    with pytest.raises(FileSystemNotInstalledError, match=extra):
        px.checkpoint.latest_checkpoint(url)
    with pytest.raises(FileSystemNotInstalledError, match=extra):
        BackupAndRestore(url)
    with pytest.raises(FileSystemNotInstalledError, match=extra):
        ModelCheckpoint(url + "/e{epoch}", save_weights_only=False)
    assert os.listdir(tmp_path) == []
