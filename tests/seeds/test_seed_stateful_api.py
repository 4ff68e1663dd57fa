"""Seed 001's custom loop calls Keras's stateful methods (``training_loss.update_state``,
``optimizer.apply_gradients``, ``optimizer.iterations``); phalanx's metrics and optimizers are
pure, and the error says what to write instead (``StatefulAPIError``, an ``AttributeError``)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import phalanx as px
from phalanx.errors import StatefulAPIError


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.update_state(1.0),
        lambda m: m.reset_states(),
        lambda m: m.reset_state(),
    ],
)
def test_metric_stateful_methods_say_what_to_write(call):
    metric = px.metrics.Mean("training_loss", dtype="float32")
    with pytest.raises(StatefulAPIError, match=r"state = metric.init\(\).*metric.update\(state"):
        call(metric)
    accuracy = px.metrics.SparseCategoricalAccuracy("training_accuracy", dtype="float32")
    with pytest.raises(AttributeError, match=r"all_reduce\('sum', metric.increment"):
        call(accuracy)


@pytest.mark.parametrize("name", ["apply_gradients", "iterations", "minimize"])
def test_optimizer_stateful_members_say_what_to_write(name):
    with pytest.raises(StatefulAPIError, match=r"optimizer.update\(grads, opt_state, params\)"):
        getattr(px.optimizers.Adam(), name)


def test_other_missing_attributes_and_copies_are_unchanged():
    metric, optimizer = px.metrics.Mean(), px.optimizers.SGD(0.1)
    assert not hasattr(metric, "update_state") and not hasattr(optimizer, "iterations")
    with pytest.raises(AttributeError, match="object has no attribute 'nope'") as error:
        metric.nope  # noqa: B018
    assert not isinstance(error.value, StatefulAPIError)
    for obj in (metric, optimizer):
        assert type(copy.deepcopy(obj)) is type(obj)
        assert type(pickle.loads(pickle.dumps(obj))) is type(obj)
    state = metric.update(metric.init(), np.array([1.0, 3.0]))
    assert float(metric.result(state)) == 2.0


def test_the_compiled_models_optimizer_counts_iterations():
    model = px.Sequential([px.layers.Dense(2, input_shape=(3,))])
    model.compile(optimizer=px.optimizers.Adam(), loss="mse")
    model.fit(np.ones((8, 3)), np.ones((8, 2)), batch_size=4, verbose=0)
    assert int(model.optimizer.iterations) == 2
