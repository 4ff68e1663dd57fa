"""save_weights(overwrite=False) and ModelCheckpoint on URLs: checked where the file lives."""

from __future__ import annotations

import os
import uuid

import pytest
from io_support import data, model

from phalanx.callbacks import ModelCheckpoint
from phalanx.errors import WeightsFileExistsError
from phalanx.io import gfile


@pytest.fixture
def base():
    url = f"memory://phalanx-test-{uuid.uuid4().hex}"
    yield url
    if gfile.exists(url):
        gfile.rmtree(url)


def test_overwrite_false_sees_a_remote_file(base):
    m = model()
    m.save_weights(f"{base}/w.npz")
    with pytest.raises(WeightsFileExistsError, match=r"w\.npz' exists and overwrite=False"):
        m.save_weights(f"{base}/w.npz", overwrite=False)
    with pytest.raises(FileExistsError):  # still the builtin a caller may catch
        m.save_weights(f"{base}/w.npz", overwrite=False)
    m.save_weights(f"{base}/other.npz", overwrite=False)
    assert gfile.exists(f"{base}/other.npz")


def test_model_checkpoint_to_a_url_makes_no_local_folder(base, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x, y = data()
    path = base + "/ckpt/epoch-{epoch}.npz"
    model().fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[ModelCheckpoint(path)])
    assert gfile.exists(f"{base}/ckpt/epoch-2.npz")
    assert os.listdir(tmp_path) == []
