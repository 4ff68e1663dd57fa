"""Bad inputs to models' constructors and to ``fit``/``evaluate``/``compile``'s plain
arguments (the second sweep, h11): each raises a phalanx error naming the argument and value,
and what Keras 3 accepts stays accepted, with Keras 3's results (NaN weights give a NaN loss)."""

import math

import jax
import numpy as np
import pytest
from catalog import Case, run

import phalanx
from phalanx import layers
from phalanx.errors import (
    CompileArgumentError,
    FitInputError,
    LayerArgumentError,
    ModelArgumentError,
    ModelStructureError,
    NotCompiledError,
)

X = np.random.default_rng(0).random((8, 3), np.float32)
Y = np.random.default_rng(1).random((8, 1), np.float32)


def _model(compiled=True):
    with phalanx.OneDeviceStrategy(jax.devices()[0]).scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        if compiled:
            model.compile(optimizer="sgd", loss="mse")
    return model


def _compile(**kwargs):
    return lambda: _model(compiled=False).compile(optimizer="sgd", loss="mse", **kwargs)


CASES = [
    Case(
        "fit verbose a str",
        lambda: _model().fit(X, Y, verbose="x"),
        FitInputError,
        r"verbose must be 'auto', 0 \(silent\), 1 .* or 2 .*got 'x' \(str\)",
    ),
    Case(
        "evaluate verbose 3",
        lambda: _model().evaluate(X, Y, verbose=3),
        FitInputError,
        r"verbose must be 'auto', 0 .*got 3 \(int\)",
    ),
    Case(
        "predict verbose a float",
        lambda: _model().predict(X, verbose=1.0),
        FitInputError,
        r"verbose must be .*got 1.0 \(float\)",
    ),
    Case(
        # a negative one runs from that epoch, as Keras 3 (tests/train/test_fit_arrays_steps_keras3)
        "fit initial_epoch a float",
        lambda: _model().fit(X, Y, verbose=0, initial_epoch=1.5),
        FitInputError,
        r"fit's initial_epoch must be an int, got float 1.5",
    ),
    Case(
        "fit before compile",
        lambda: _model(compiled=False).fit(X, Y, verbose=0),
        NotCompiledError,
        r"You must call compile\(\) before fit\(\)",
    ),
    Case(
        "evaluate before compile",
        lambda: _model(compiled=False).evaluate(X, Y, verbose=0),
        NotCompiledError,
        r"You must call compile\(\) before evaluate\(\)",
    ),
    Case(
        "compile jit_compile a str",
        _compile(jit_compile="yes"),
        CompileArgumentError,
        r"jit_compile must be True, False or 'auto' \(as Keras\), got 'yes' \(str\)",
    ),
    Case(
        "compile seed a str",
        _compile(seed="a"),
        CompileArgumentError,
        r"compile's seed must be an int .*got 'a' \(str\)",
    ),
    Case(
        "compile seed a float",
        _compile(seed=1.5),
        CompileArgumentError,
        r"compile's seed must be an int .*got 1.5 \(float\)",
    ),
    Case(
        "compile seed past 64 bits",
        _compile(seed=2**64),
        CompileArgumentError,
        r"compile's seed must fit in 64 bits",
    ),
    Case(
        "Sequential of an int",
        lambda: phalanx.Sequential(3),
        ModelArgumentError,
        r"Sequential takes a list of layers, got 3 \(int\)",
    ),
    Case(
        "Sequential of a str",
        lambda: phalanx.Sequential("dense"),
        ModelArgumentError,
        r"Sequential takes a list of layers, got 'dense' \(str\)",
    ),
    Case(
        "Sequential of a list holding an int",
        lambda: phalanx.Sequential([3]),
        ModelArgumentError,
        r"Sequential.add takes phalanx layers .*got 3 \(int\)",
    ),
    Case(
        "Sequential.add of a str",
        lambda: phalanx.Sequential([layers.Dense(2)]).add("x"),
        ModelArgumentError,
        r"Sequential.add takes phalanx layers .*got 'x' \(str\)",
    ),
    Case(
        "a layer's dtype unknown",
        lambda: layers.Dense(2, dtype="foo"),
        LayerArgumentError,
        r"Dense: dtype must be a float dtype .*got 'foo' \(str\)",
    ),
    Case(
        "Model of ints",
        lambda: phalanx.Model(inputs=3, outputs=4),
        ModelStructureError,
        r"Model\(inputs=...\) takes the symbolic tensors of phalanx.Input.*got int",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_model_argument(case):
    run(case)


def test_errors_are_caught_as_keras_users_catch_them():
    # Keras 3 raises ValueError before compile; phalanx raised RuntimeError: both still catch.
    assert issubclass(NotCompiledError, ValueError) and issubclass(NotCompiledError, RuntimeError)
    assert issubclass(ModelArgumentError, ValueError) and issubclass(ModelArgumentError, TypeError)


def test_what_keras_accepts_stays_accepted(caplog):
    """predict before compile, jit_compile True/False/'auto', verbose as bool or numpy int,
    initial_epoch >= epochs (no epoch runs, an empty History), a policy name as dtype."""
    assert _model(compiled=False).predict(X, verbose=0).shape == (8, 1)
    for jit in (True, "auto", np.bool_(True)):
        _compile(jit_compile=jit)()
    _compile(
        jit_compile=False
    )()  # the steps run un-jitted (tests/train/test_keras_compile_forms.py)
    model = _model()
    model.fit(X, Y, verbose=False, batch_size=8)
    model.fit(X, Y, verbose=np.int64(0), batch_size=8)
    assert model.fit(X, Y, verbose=0, initial_epoch=3, epochs=2).history == {}
    assert str(layers.Dense(2, dtype="mixed_bfloat16").dtype) == "bfloat16"
    _compile(seed=np.int64(-3))()


def _per_example_mse(model):
    return ((model.predict(X, verbose=0) - Y) ** 2)[:, 0]


def test_nan_sample_weight_gives_a_nan_loss_as_keras():
    """Keras 3 (jax backend) reports nan for fit and evaluate; phalanx dropped the row (0.0)."""
    weights = np.ones(8, np.float32)
    weights[0] = np.nan
    history = _model().fit(X, Y, sample_weight=weights, batch_size=4, epochs=2, verbose=0)
    assert all(math.isnan(v) for v in history.history["loss"])
    assert math.isnan(_model().evaluate(X, Y, sample_weight=weights, batch_size=4, verbose=0))


def test_every_sample_weight_counts_as_keras():
    """Keras 3: sum(w * loss) / examples, negative and zero weights included (checked with
    keras 3, jax backend); phalanx dropped the rows with weight <= 0."""
    model = _model()
    weights = np.array([0, 1, 2, -1, 1, 1, 0.5, 1], np.float32)
    expected = np.sum(weights * _per_example_mse(model)) / 8
    got = model.evaluate(X, Y, sample_weight=weights, batch_size=8, verbose=0)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_nan_in_x_trains_and_reports_nan_as_keras():
    x = X.copy()
    x[0, 0] = np.nan
    model = _model()
    history = model.fit(x, Y, batch_size=8, epochs=2, verbose=0)
    assert all(math.isnan(v) for v in history.history["loss"])
    assert np.isnan(model.predict(X, verbose=0)).all()  # the NaN gradient reached every weight
