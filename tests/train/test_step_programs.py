"""The compiled programs of fit/evaluate/predict (issue 24).

At ``steps_per_execution=1`` an execution is the bare step: no ``while`` loop
and no ``conditional`` in the compiled HLO. At N the steps run in one loop
whose body is the step (no ``conditional`` either: a short last execution gets
a program of its own length), and a conv model's convolutions there keep the
canonical labels XLA:CPU runs on Eigen (``phalanx._cpu_conv``).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from tests_support import XLA_DEFAULT_OPTIONS

FEATURES, CLASSES = 6, 3


def _mlp(strategy, spe: int):
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(FEATURES,)),
                layers.Dense(8, activation="relu"),
                layers.Dense(CLASSES),
            ]
        )
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


def _data(n: int, shape=(FEATURES,)):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, *shape)).astype(np.float32)
    return x, rng.integers(0, CLASSES, n).astype(np.int32)


def _compiled_hlo(model, kind: str, x, y, batch_size: int) -> dict[int, str]:
    """The compiled HLO of ``kind``'s program for each count of real steps of one epoch."""
    adapter = model._adapter(
        x, y, None, batch_size=batch_size, steps=None, shuffle=False, class_weight=None
    )
    texts = {}
    for ex in model._prepared(adapter, 0, where=None):
        program = model._program(kind, ex.data is not None)
        lowered = program.lower(model._state, ex.data, ex.xs, ex.steps)
        texts[ex.steps] = lowered.compile(XLA_DEFAULT_OPTIONS).as_text()
    return texts


def _ops(hlo: str, op: str) -> int:
    return len(re.findall(rf" {op}\(", hlo))  # an instruction: `%w = (...) while(...)`


@pytest.mark.parametrize("kind", ["train", "eval", "predict"])
def test_one_step_per_execution_is_the_bare_step(kind):
    model = _mlp(phalanx.MirroredStrategy(jax.devices()[:2]), spe=1)
    x, y = _data(20)
    texts = _compiled_hlo(model, kind, x, y, batch_size=8)  # 3 steps, the last one short
    assert list(texts) == [1]
    assert _ops(texts[1], "while") == 0
    assert _ops(texts[1], "conditional") == 0


@pytest.mark.parametrize("kind", ["train", "eval"])
def test_fused_steps_loop_over_the_bare_step(kind):
    model = _mlp(phalanx.MirroredStrategy(jax.devices()[:2]), spe=4)
    x, y = _data(8 * 6 - 3)  # 6 steps: one execution of 4, then one of 2
    texts = _compiled_hlo(model, kind, x, y, batch_size=8)
    assert sorted(texts) == [2, 4]
    for hlo in texts.values():
        assert _ops(hlo, "while") == 1
        assert _ops(hlo, "conditional") == 0
    # the scan's trip count is the execution's real steps, not N
    assert re.search(r'"known_trip_count":\{"n":"2"\}', texts[2])


def test_fused_conv_steps_keep_canonical_convolutions():
    with phalanx.OneDeviceStrategy().scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(7, 7, 1)),
                layers.Conv2D(2, 3, activation="relu"),
                layers.Conv2D(2, 3, activation="relu"),
                layers.Flatten(),
                layers.Dense(CLASSES),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=3
        )
    x, y = _data(12, shape=(7, 7, 1))
    hlo = _compiled_hlo(model, "train", x, y, batch_size=4)[3]
    labels = re.findall(r"convolution\(.*?dim_labels=([\w>-]+)", hlo)
    assert len(labels) == 5  # 2 forward; the filter gradients, the second's input gradient
    assert set(labels) == {"b01f_01io->b01f"}, labels
    assert _ops(hlo, "conditional") == 0


def test_repeated_fits_train_on_the_arrays_as_they_are_now():
    """A second fit after the caller wrote into its arrays trains on the new values
    (programs are reused across fit calls; the data is not)."""
    x, y = _data(16)
    x2 = x[::-1] * 2.0
    models = [_mlp(phalanx.OneDeviceStrategy(), spe=2) for _ in range(2)]
    for m in models:
        m.set_weights(models[0].get_weights())
    fit = dict(batch_size=4, epochs=1, verbose=0, shuffle=False)
    models[0].fit(x, y, **fit)
    x[:] = x2  # in place: the same array object
    h0 = models[0].fit(x, y, **fit)
    models[1].fit(x2[::-1] / 2.0, y, **fit)
    h1 = models[1].fit(x2.copy(), y, **fit)
    np.testing.assert_allclose(h0.history["loss"], h1.history["loss"], rtol=1e-6)
    for a, b in zip(models[0].get_weights(), models[1].get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
