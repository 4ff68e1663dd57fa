"""A damaged orbax checkpoint (arrays split over processes) is a ``CheckpointError`` naming it.

orbax reading a damaged metadata file raised a bare ``JSONDecodeError`` or
``UnicodeDecodeError`` without a path (issue 29, item 5). Saves take orbax's
path here as when arrays are split over processes (``host_arrays`` returns
None). Bit flips over every JSON metadata file: none may raise anything but a
``CheckpointError``, and the meta item (phalanx's own JSON, with a CRC32C)
none may restore silently.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, _background, _io
from phalanx.errors import CheckpointError

X = np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32)
Y = np.eye(4, dtype=np.float32)[np.abs(X[:, :4]).argmax(1)]


def _model():
    model = phalanx.Sequential([layers.Input(shape=(6,)), layers.Dense(4)])
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``(path, {json file: bytes})`` of an orbax-format checkpoint after fit."""
    patch = pytest.MonkeyPatch()
    patch.setattr(_background, "host_arrays", lambda arrays: None)
    model = _model()
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    ckpt = Checkpoint(model=model)
    path = ckpt.save(tmp_path_factory.mktemp("orbax") / "ckpt")
    ckpt.close()
    patch.undo()
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            file = os.path.join(folder, name)
            if _io._is_json_metadata(folder, name, path):
                with open(file, "rb") as f:
                    files[file] = f.read()
    assert os.path.join(path, "meta", "metadata") in files and len(files) >= 3, files
    return path, files


def _write(file, data):
    with open(file, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("how", ["cut in half", "not utf-8"])
def test_a_damaged_metadata_file_is_named(saved, how):
    path, files = saved
    for file, raw in files.items():
        bad = raw[: len(raw) // 2] if how == "cut in half" else b"\xff" + raw
        _write(file, bad)
        try:
            with pytest.raises(CheckpointError, match="cannot be read: its file") as caught:
                Checkpoint(model=_model()).restore(path)
            assert repr(file) in str(caught.value), (file, str(caught.value))
        finally:
            _write(file, raw)


def test_bit_flips_in_metadata_files_are_refused_or_harmless(saved):
    """One bit per byte (bit offset % 8) of every JSON metadata file: each read is refused
    with a CheckpointError or restores the very state saved; in phalanx's meta, refused."""
    path, files = saved
    reference = _model()
    Checkpoint(model=reference).restore(path)
    want = reference.get_weights()
    counts = {}
    for file, raw in files.items():
        refused = harmless = 0
        for offset in range(0, len(raw), max(1, len(raw) // 40)):
            damaged = bytearray(raw)
            damaged[offset] ^= 1 << (offset % 8)
            _write(file, bytes(damaged))
            target = _model()
            try:
                Checkpoint(model=target).restore(path)
            except CheckpointError:
                refused += 1
            else:
                for u, v in zip(target.get_weights(), want, strict=True):
                    np.testing.assert_array_equal(u, v)
                harmless += 1
            finally:
                _write(file, raw)
        counts[os.path.relpath(file, path)] = (refused, harmless)
    print(json.dumps(counts))
    meta = counts[os.path.join("meta", "metadata")]
    assert meta[1] == 0, f"{meta[1]} flips in meta/metadata restored silently"
