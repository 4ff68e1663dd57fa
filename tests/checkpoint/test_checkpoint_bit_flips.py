"""Bit flips in phalanx's one-file checkpoint (``state.phalanx``): none restores silently.

What issue 29's probe did, as a test: a model's checkpoint after ``fit``, one
bit flipped at a time in every class of its bytes (magic, header length,
header CRC, header JSON, padding, each array's data), and every read must be
a ``CheckpointError`` naming the file (and, in the data, the array); the
count of silent restores must be 0. Every bit of the small classes is
flipped; in the header and the data one bit per byte (bit ``offset % 8``),
which bounds the test to a few thousand reads. Through the public
``Checkpoint.restore``, a sample of each class also leaves the target
model's weights as they were.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.checkpoint import Checkpoint, _file
from phalanx.errors import CheckpointError

X = np.random.default_rng(0).normal(size=(64, 6)).astype(np.float32)
Y = (np.abs(X[:, :4]).argmax(1)).astype(np.int32)


def _model():
    model = phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(8, activation="relu"), layers.Dense(4)]
    )
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return model


def _trained(epochs):
    model = _model()
    model.fit(X, np.eye(4, dtype=np.float32)[Y], batch_size=16, epochs=epochs, verbose=0)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``(raw bytes, byte classes)`` of a trained model's checkpoint."""
    path = Checkpoint(model=_trained(2)).save(tmp_path_factory.mktemp("flips") / "ckpt")
    with open(os.path.join(path, _file.FILE), "rb") as f:
        raw = f.read()
    header, data_start = _file.read_header(path)
    length = int.from_bytes(raw[8:16], "little")
    classes = {
        "magic": range(0, 8),
        "length": range(8, 16),
        "header crc": range(16, 20),
        "header": range(20, 20 + length),
        "padding": range(20 + length, data_start),
    }
    for key, _dtype, _shape, offset, nbytes, _crc in header["arrays"]["model"]:
        classes[f"array model/{key}"] = range(data_start + offset, data_start + offset + nbytes)
    assert sum(len(r) for r in classes.values()) == len(raw)  # every byte has its class
    return raw, classes


def _flipped(path, raw, offset, bit):
    damaged = bytearray(raw)
    damaged[offset] ^= 1 << bit
    with open(os.path.join(path, _file.FILE), "wb") as f:
        f.write(damaged)


def _read(path):
    meta = _file.read_meta(path)
    return meta, _file.read_arrays(path, ["model"])


def test_no_bit_flip_in_any_byte_class_restores_silently(saved, tmp_path):
    raw, classes = saved
    copy = str(tmp_path / "ckpt")
    os.makedirs(copy)
    tried = silent = 0
    wrong = []
    for name, offsets in classes.items():
        every_bit = len(offsets) <= 64  # the small classes: all their bits
        for offset in offsets:
            for bit in range(8) if every_bit else (offset % 8,):
                _flipped(copy, raw, offset, bit)
                tried += 1
                try:
                    _read(copy)
                except CheckpointError as error:
                    text = str(error)
                    named = "state.phalanx" in text and (
                        not name.startswith("array") or f"array {name[6:]} " in text
                    )
                    if not named:
                        wrong.append((name, offset, bit, text[:200]))
                except Exception as error:  # a bare KeyError or ValueError: not a named error
                    wrong.append((name, offset, bit, repr(error)[:200]))
                else:
                    silent += 1
    assert silent == 0, f"{silent} of {tried} flips restored silently"
    assert not wrong, f"{len(wrong)} flips gave another error, first: {wrong[:3]}"
    assert tried > len(raw)  # every byte, and every bit of the small classes


def test_flips_through_restore_leave_the_model_as_it_was(saved, tmp_path):
    raw, classes = saved
    copy = str(tmp_path / "ckpt")
    os.makedirs(copy)
    target = _trained(1)
    before = target.get_weights()
    checkpoint = Checkpoint(model=target)
    for offsets in classes.values():
        for offset in list(offsets)[:: max(1, len(offsets) // 3)][:3]:
            _flipped(copy, raw, offset, offset % 8)
            with pytest.raises(CheckpointError, match=re.escape(copy)):
                checkpoint.restore(copy)
    for u, v in zip(target.get_weights(), before, strict=True):
        np.testing.assert_array_equal(u, v)
    _flipped(copy, raw, 0, 0)
    with open(os.path.join(copy, _file.FILE), "wb") as f:
        f.write(raw)  # undamaged: restores
    checkpoint.restore(copy)
    assert any(not np.array_equal(u, v) for u, v in zip(target.get_weights(), before, strict=True))


def test_a_row_that_disagrees_with_the_manifest_is_refused(saved, tmp_path):
    """A consistent file (CRCs recomputed) whose array table says float64[4] where the
    manifest says float32[8]: restored into the bias before; now refused, naming it."""
    import crc32c

    raw, _ = saved
    length = int.from_bytes(raw[8:16], "little")
    header = json.loads(raw[20 : 20 + length])
    data = raw[len(raw) - header["data_bytes"] :]
    manifest = header["meta"]["objects"]["model"]["arrays"]
    i = next(i for i, (_, spec) in enumerate(manifest) if spec["shape"] == [8])
    row = header["arrays"]["model"][i]
    assert row[1:3] == ["float32", [8]]
    row[1:3] = ["float64", [4]]
    text = json.dumps(header).encode()
    size = len(text).to_bytes(8, "little")
    head = _file.MAGIC + size + crc32c.crc32c(size + text).to_bytes(4, "little") + text
    copy = tmp_path / "ckpt"
    copy.mkdir()
    (copy / _file.FILE).write_bytes(head + b"\0" * (-len(head) % 64) + data)
    name = re.escape(manifest[i][0])
    with pytest.raises(
        CheckpointError,
        match=rf"'{name}' is float64\[4\] in its data, but float32\[8\] in its manifest",
    ):
        Checkpoint(model=_model()).restore(copy)
