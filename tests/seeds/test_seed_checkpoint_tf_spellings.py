"""The distributed-training guides' checkpoint lines, ported with ``tf.train`` ->
``phalanx.checkpoint`` (README's name table), as TensorFlow 2.21 runs them.

TensorFlow's custom-training tutorial saves with ``checkpoint.save(checkpoint_prefix)``
and resumes with ``checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))``;
its checkpoint guide writes ``CheckpointManager(ckpt, directory=..., max_to_keep=3)``
and ``ckpt.restore(path).expect_partial()``. The three are marked xfail: the fixes
live in ``src/phalanx/checkpoint/`` (``_manager.py``, ``_checkpoint.py``), which
another engineer is editing.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import phalanx


def _trained_model():
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64)
    strategy = phalanx.distribute.MirroredStrategy()
    with strategy.scope():
        model = phalanx.Sequential([phalanx.layers.Input(shape=(8,)), phalanx.layers.Dense(3)])
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    return model, x, y


@pytest.mark.xfail(
    strict=True,
    reason="latest_checkpoint(dir) finds CheckpointManager's ckpt_N only, not "
    "Checkpoint.save(prefix)'s prefix-N (TensorFlow reads both); src/phalanx/checkpoint/"
    "_manager.py is being edited by another engineer",
)
def test_latest_checkpoint_finds_what_checkpoint_save_wrote(tmp_path):
    model, x, y = _trained_model()
    checkpoint_dir = str(tmp_path / "training_checkpoints")
    checkpoint_prefix = os.path.join(checkpoint_dir, "ckpt")
    checkpoint = phalanx.checkpoint.Checkpoint(optimizer=model.optimizer, model=model)
    checkpoint.save(checkpoint_prefix)
    second = checkpoint.save(checkpoint_prefix)
    assert os.path.basename(second) == "ckpt-2"
    saved = model.get_weights()
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert phalanx.checkpoint.latest_checkpoint(checkpoint_dir) == second
    checkpoint.restore(phalanx.checkpoint.latest_checkpoint(checkpoint_dir))
    for got, want in zip(model.get_weights(), saved, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.xfail(
    strict=True,
    reason="CheckpointManager(checkpoint, directory=..., max_to_keep=...) raises TypeError "
    "(TensorFlow's order with directory by keyword); src/phalanx/checkpoint/_manager.py is "
    "being edited by another engineer",
)
def test_checkpoint_manager_with_directory_by_keyword(tmp_path):
    model, _, _ = _trained_model()
    ckpt = phalanx.checkpoint.Checkpoint(model=model)
    manager = phalanx.checkpoint.CheckpointManager(
        ckpt, directory=str(tmp_path / "tf_ckpts"), max_to_keep=2
    )
    for _ in range(3):
        manager.save()
    assert len(manager.checkpoints) == 2


@pytest.mark.xfail(
    strict=True,
    reason="Checkpoint.restore returns the Checkpoint, without TensorFlow's load status "
    "(expect_partial, assert_consumed); src/phalanx/checkpoint/_checkpoint.py is being "
    "edited by another engineer",
)
def test_restore_returns_a_status_with_expect_partial(tmp_path):
    model, _, _ = _trained_model()
    checkpoint = phalanx.checkpoint.Checkpoint(model=model)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    checkpoint.restore(path).expect_partial()
    checkpoint.restore(path).assert_consumed()
