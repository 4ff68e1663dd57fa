"""README's "Checkpoints and resuming" block, run twice in one directory as its comment invites
("Kill this script at any point and run it again"): the second run's ``manager.save()``, with
no number, writes the next checkpoint after the newest one there instead of refusing."""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px
from phalanx.errors import CheckpointError

X = np.random.default_rng(0).random((64, 6), dtype=np.float32)
Y = np.random.default_rng(1).integers(0, 3, 64)


def _script(directory):
    """The README block's manager part: a fresh process's model, Checkpoint and manager."""
    dataset = px.data.Dataset.from_tensor_slices((X, Y)).shuffle(64, seed=1).batch(16)
    model = px.Sequential([px.layers.Input(shape=(6,)), px.layers.Dense(3)])
    model.compile(optimizer="adam", loss=px.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset, epochs=1, verbose=0)
    checkpoint = px.checkpoint.Checkpoint(model=model, iterator=iter(dataset))
    manager = px.checkpoint.CheckpointManager(directory, max_to_keep=3, checkpoint=checkpoint)
    return model, manager, manager.save()


def test_running_the_readme_block_again_saves_the_next_checkpoint(tmp_path):
    _, _, first = _script(tmp_path / "checkpoints")
    model, manager, second = _script(tmp_path / "checkpoints")
    assert first.endswith("ckpt_1") and second.endswith("ckpt_2")
    assert manager.latest_checkpoint == second
    restored = px.Sequential([px.layers.Input(shape=(6,)), px.layers.Dense(3)])
    restored.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    px.checkpoint.Checkpoint(model=restored).restore(manager.latest_checkpoint)
    for a, b in zip(model.get_weights(), restored.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # A number given by the caller must still grow.
    with pytest.raises(CheckpointError, match=r"checkpoint_number 2 is not above the newest"):
        manager.save(checkpoint_number=2)
