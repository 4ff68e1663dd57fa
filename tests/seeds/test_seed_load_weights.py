"""The distributed-training tutorial's resume line, ``model.load_weights(latest_checkpoint(dir))``,
when ``latest_checkpoint`` found nothing: a ``WeightsFileError`` that says why, not a
``TypeError`` from ``os.fspath(None)`` deep inside phalanx; and the tutorial's Keras 3 form
(the newest ``.weights.h5`` ModelCheckpoint wrote) restores the weights."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import phalanx


def test_load_weights_of_none_and_the_keras_3_resume(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64)
    strategy = phalanx.MirroredStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3, activation="softmax")]
        )
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    prefix = str(tmp_path / "ckpt_{epoch:04d}.weights.h5")
    checkpoint = phalanx.callbacks.ModelCheckpoint(filepath=prefix, save_weights_only=True)
    model.fit(x, y, epochs=2, batch_size=16, callbacks=[checkpoint], verbose=0)
    saved = model.get_weights()
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    with pytest.raises(phalanx.errors.WeightsFileError, match=r"got NoneType None.*latest_che"):
        model.load_weights(phalanx.checkpoint.latest_checkpoint(str(tmp_path / "none")))
    with pytest.raises(phalanx.errors.WeightsFileError, match=r"got int 3\."):
        model.load_weights(3)
    latest_checkpoint = sorted(pathlib.Path(tmp_path).glob("*"))[-1]
    assert latest_checkpoint.name == "ckpt_0002.weights.h5"
    model.load_weights(latest_checkpoint)
    for got, want in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(got, want)
