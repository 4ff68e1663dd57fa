"""``model.summary()`` after ``fit`` as TensorFlow 2.21 (Keras 3) prints it: the optimizer's
variables in "Total params" and an "Optimizer params" line (phalanx printed neither).

Expected lines from TF 2.21 for the same model (a frozen ``Dense``, ``BatchNormalization``)
and optimizers; before ``fit`` there is no optimizer line, as Keras.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx

EXPECTED = {
    "adam": ("791 (3.09 KB)", "308 (1.21 KB)"),
    "sgd_momentum": ("638 (2.50 KB)", "155 (624.00 B)"),
    "sgd": ("485 (1.90 KB)", "2 (12.00 B)"),
    "rmsprop_centered": ("944 (3.69 KB)", "461 (1.80 KB)"),
    "adam_amsgrad": ("944 (3.69 KB)", "461 (1.80 KB)"),
}


def _optimizer(name):
    return {
        "adam": "adam",
        "sgd_momentum": phalanx.optimizers.SGD(0.1, momentum=0.9),
        "sgd": "sgd",
        "rmsprop_centered": phalanx.optimizers.RMSprop(momentum=0.5, centered=True),
        "adam_amsgrad": phalanx.optimizers.Adam(amsgrad=True),
    }[name]


def _summary_lines(model):
    lines = []
    model.summary(print_fn=lines.append)
    return [line.strip() for line in "\n".join(lines).split("\n") if "params:" in line]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_summary_counts_the_optimizer_after_fit(name):
    strategy = phalanx.MirroredStrategy()
    with strategy.scope():
        model = phalanx.Sequential(
            [
                phalanx.layers.Input(shape=(8,)),
                phalanx.layers.Dense(30, activation="relu"),
                phalanx.layers.BatchNormalization(),
                phalanx.layers.Dense(3, activation="softmax"),
            ]
        )
        model.layers[0].trainable = False
        model.compile(optimizer=_optimizer(name), loss="sparse_categorical_crossentropy")
    before = _summary_lines(model)
    assert before[0] == "Total params: 483 (1.89 KB)"
    assert not any(line.startswith("Optimizer params") for line in before)
    model.fit(np.ones((16, 8), np.float32), np.zeros(16), batch_size=8, verbose=0)
    total, optimizer = EXPECTED[name]
    assert _summary_lines(model)[:4] == [
        f"Total params: {total}",
        "Trainable params: 153 (612.00 B)",
        "Non-trainable params: 330 (1.29 KB)",
        f"Optimizer params: {optimizer}",
    ]
