"""The seeds' ``fit`` calls with the mistakes their readers make: phalanx errors that say what
to do (``FitInputError``, a ``ValueError`` as before)."""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px

X = np.random.default_rng(0).random((96, 6), dtype=np.float32)
Y = np.random.default_rng(1).integers(0, 3, 96)


def _model():
    model = px.Sequential([px.layers.Dense(3, activation="softmax", input_shape=(6,))])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def _finite():
    return px.data.Dataset.from_tensor_slices((X, Y)).batch(32)  # 3 batches, no repeat()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"x": X, "y": Y, "batch_size": 0}, r"batch_size must be a positive int .*got 0"),
        ({"x": X, "y": Y, "steps_per_epoch": 0}, r"steps_per_epoch must be a positive int"),
        ({"x": X, "y": Y, "validation_split": 1.5}, r"validation_split must be a fraction"),
        ({"x": _finite(), "validation_split": 0.1}, r"validation_split works with array"),
        ({"x": _finite(), "y": Y}, r"pass y and sample_weight inside its batches"),
    ],
)
def test_fit_refuses_with_a_phalanx_error(kwargs, match):
    with pytest.raises(px.errors.FitInputError, match=match):
        _model().fit(**kwargs, verbose=0)
