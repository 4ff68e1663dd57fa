"""The distributed-training guides' checkpoint lines, ported with ``tf.train`` ->
``phalanx.checkpoint`` (README's name table), as TensorFlow 2.21 runs them.

TensorFlow's custom-training tutorial saves with ``checkpoint.save(checkpoint_prefix)``
and resumes with ``checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))``;
its checkpoint guide writes ``CheckpointManager(ckpt, directory=..., max_to_keep=3)``
and ``ckpt.restore(path).expect_partial()``. All three run as written.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import phalanx
from phalanx.errors import CheckpointError, CheckpointMismatchError


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


def test_checkpoint_manager_with_directory_by_keyword(tmp_path):
    model, _, _ = _trained_model()
    ckpt = phalanx.checkpoint.Checkpoint(model=model)
    manager = phalanx.checkpoint.CheckpointManager(
        ckpt, directory=str(tmp_path / "tf_ckpts"), max_to_keep=2
    )
    for _ in range(3):
        manager.save()
    assert len(manager.checkpoints) == 2


def test_restore_returns_a_status_with_expect_partial(tmp_path):
    model, _, _ = _trained_model()
    checkpoint = phalanx.checkpoint.Checkpoint(model=model)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    checkpoint.restore(path).expect_partial()
    checkpoint.restore(path).assert_consumed()


def test_assert_consumed_names_what_the_restore_left_unused(tmp_path):
    model, x, _ = _trained_model()
    iterator = iter(phalanx.data.Dataset.from_tensor_slices(x).batch(8))
    next(iterator)
    path = phalanx.checkpoint.Checkpoint(model=model, iterator=iterator).save(str(tmp_path / "c"))
    partial = phalanx.checkpoint.Checkpoint(model=model)
    with pytest.raises(CheckpointMismatchError, match="Nothing was restored yet"):
        partial.assert_consumed()
    partial.restore(path).expect_partial().assert_existing_objects_matched()
    with pytest.raises(CheckpointMismatchError, match=r"not restored: \['iterator'\]"):
        partial.assert_consumed()
    with pytest.raises(CheckpointError, match="got directory twice"):
        phalanx.checkpoint.CheckpointManager(partial, str(tmp_path), directory=str(tmp_path))
