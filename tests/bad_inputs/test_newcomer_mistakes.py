"""The mistakes everyone makes on day one get an error that says what to do, before any
step is traced (issue 30 items 1-3): a dataset never batched, an endless dataset without a
step count, a Keras-file checkpoint without h5py."""

import sys

import numpy as np
import pytest

import phalanx as px
from phalanx.errors import FitInputError, KerasFileError

X = np.random.default_rng(0).random((64, 5), np.float32)
Y = np.random.default_rng(1).integers(0, 3, 64)


def _model():
    model = px.Sequential([px.layers.Input(shape=(5,)), px.layers.Dense(3)])
    model.compile("adam", px.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _ds():
    return px.data.Dataset.from_tensor_slices((X, Y))


@pytest.mark.parametrize("entry", ["fit", "evaluate", "predict"])
def test_an_unbatched_dataset_says_batch_it(entry):
    model = _model()
    data = _ds().shuffle(64) if entry != "predict" else _ds().map(lambda x, y: y)
    with pytest.raises(FitInputError, match=r"a single example, not a batch.*\.batch\(32\)"):
        getattr(model, entry)(data, verbose=0)


def test_an_unbatched_validation_dataset_says_batch_it():
    with pytest.raises(FitInputError, match=r"a single example, not a batch"):
        _model().fit(_ds().batch(8), validation_data=_ds(), verbose=0)


@pytest.mark.parametrize(
    "entry, argument",
    [("fit", "steps_per_epoch"), ("evaluate", "steps"), ("predict", "steps")],
)
def test_an_endless_dataset_asks_for_a_step_count(entry, argument):
    model = _model()
    data = _ds().repeat().batch(16)
    if entry == "predict":
        data = data.map(lambda x, y: x)
    with pytest.raises(FitInputError, match=rf"repeats forever.*pass {argument}=N"):
        getattr(model, entry)(data, verbose=0)


def test_an_endless_validation_dataset_asks_for_validation_steps():
    endless = _ds().repeat().batch(16)
    with pytest.raises(FitInputError, match=r"pass validation_steps=N"):
        _model().fit(_ds().batch(16), validation_data=endless, verbose=0)


def test_an_endless_dataset_with_a_step_count_trains():
    history = _model().fit(_ds().repeat().batch(16), steps_per_epoch=2, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


@pytest.mark.parametrize("name", ["best.keras", "w.weights.h5"])
def test_a_keras_file_checkpoint_without_h5py_fails_at_construction(monkeypatch, name):
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py raises ImportError
    with pytest.raises(KerasFileError, match=rf"ModelCheckpoint\('{name}'\).*pip install h5py"):
        px.callbacks.ModelCheckpoint(name)
    px.callbacks.ModelCheckpoint("w.npz")  # phalanx's own format needs no h5py
