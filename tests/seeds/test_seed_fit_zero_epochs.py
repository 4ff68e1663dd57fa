"""``fit(epochs=0)`` and ``fit(initial_epoch >= epochs)`` train no epoch and return an empty
``History``, as TensorFlow 2.21 (Keras 3) does: ``history.history == {}``, ``history.epoch ==
[]``, the weights untouched, ``on_train_begin``/``on_train_end`` still called. A negative or
non-int count is a ``FitInputError`` (Keras: a raw ``TypeError``, or silently nothing)."""

from __future__ import annotations

import numpy as np
import pytest

import phalanx
from phalanx.errors import FitInputError


def _model_and_data():
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 4), dtype=np.float32), rng.random((32, 1), dtype=np.float32)
    model = phalanx.Sequential([phalanx.layers.Input(shape=(4,)), phalanx.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model, x, y


def _recorder(calls):
    return phalanx.callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(epoch),
        on_train_end=lambda logs: calls.append(("end", dict(logs or {}))),
    )


@pytest.mark.parametrize(("epochs", "initial_epoch"), [(0, 0), (2, 2), (2, 5)])
def test_no_epoch_gives_an_empty_history(epochs, initial_epoch):
    model, x, y = _model_and_data()
    before = [np.asarray(w) for w in model.get_weights()]
    calls = []
    history = model.fit(
        x,
        y,
        batch_size=8,
        epochs=epochs,
        initial_epoch=initial_epoch,
        verbose=0,
        callbacks=[_recorder(calls)],
    )
    assert history.history == {}
    assert history.epoch == []
    assert calls == ["begin", ("end", {})]
    for w0, w1 in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(w0, np.asarray(w1))
    # the model trains afterwards as usual
    assert list(model.fit(x, y, batch_size=8, epochs=1, verbose=0).history) == ["loss"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epochs": -1}, r"epochs must be an int >= 0.*int -1"),
        ({"epochs": 1.5}, r"epochs must be an int >= 0.*float 1.5"),
        ({"epochs": "2"}, r"epochs must be an int >= 0.*str '2'"),
        ({"epochs": 2, "initial_epoch": 0.5}, r"initial_epoch must be an int, got float"),
    ],
)
def test_bad_epoch_counts_are_fit_input_errors(kwargs, match):
    model, x, y = _model_and_data()
    with pytest.raises(FitInputError, match=match):
        model.fit(x, y, batch_size=8, verbose=0, **kwargs)
