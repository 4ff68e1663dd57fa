"""The loss classes take Keras 3's arguments and give Keras 3's ``get_config`` (issue 26
item 6). Their other values (``ignore_class``, ``axis``, ``dtype``, the reductions) and the
refusals: tests/losses/test_keras_loss_arguments.py."""

import os

import numpy as np
import pytest

import phalanx as px

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

CASES = [
    ("SparseCategoricalCrossentropy", {}),
    ("SparseCategoricalCrossentropy", {"from_logits": True, "name": "sce"}),
    ("CategoricalCrossentropy", {"label_smoothing": 0.1, "axis": -1}),
    ("BinaryCrossentropy", {"from_logits": True, "reduction": "sum"}),
    ("MeanSquaredError", {"reduction": "none", "dtype": "float32"}),
    ("MeanAbsoluteError", {}),
    ("Huber", {"delta": 2.0}),
    ("Poisson", {"dtype": "float32"}),
]


@pytest.mark.parametrize(("cls", "kwargs"), CASES)
def test_config_as_keras_and_rebuilt(cls, kwargs):
    ours = getattr(px.losses, cls)(**kwargs)
    theirs = getattr(keras.losses, cls)(**kwargs)
    config = ours.get_config()
    for key, value in theirs.get_config().items():
        if key != "dtype":
            assert config[key] == value, key
    again = type(ours).from_config(config)
    assert again.get_config() == config
    rng = np.random.default_rng(0)
    y_pred = rng.random((4, 3), np.float32) + 0.1
    if cls == "SparseCategoricalCrossentropy":
        y_true = np.array([0, 2, 1, 1])
    else:
        y_true = rng.random((4, 3)).round().astype(np.float32)
    np.testing.assert_allclose(
        np.asarray(again(y_true, y_pred)), np.asarray(theirs(y_true, y_pred)), rtol=1e-5
    )
