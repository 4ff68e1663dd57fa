"""The real models and data the callback tests fit, and a scripted monitored value.

Every callback test drives the real ``Model.fit``/``evaluate``/``predict``.
Compiling dominates their cost, so the compiled models are built once per
``steps_per_execution`` and shared (``shared_model``): each is handed out with
its first weights put back, the learning rate at ``LEARNING_RATE`` and no
history, so nothing a test did reaches the next. Tests that need another
optimizer (a schedule) build their own with ``build_model``.
"""

from __future__ import annotations

import numpy as np

import phalanx
from phalanx import layers
from phalanx.callbacks import LambdaCallback

LEARNING_RATE = 0.1
BATCH = 8


def _data(n: int = 32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


#: 32 examples of 3 features and a binary label: 4 steps of ``BATCH`` per epoch.
X, Y = _data()
#: Validation data: 2 steps of ``BATCH``.
VAL = (X[:16], Y[:16])


def build_model(steps_per_execution: int = 1, optimizer=None) -> phalanx.Model:
    """A fresh compiled 3 -> 2 softmax classifier (SGD at ``LEARNING_RATE`` by default)."""
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(
        optimizer=optimizer or phalanx.optimizers.SGD(LEARNING_RATE),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    return model


_shared: dict[int, tuple[phalanx.Model, list[np.ndarray]]] = {}


def shared_model(steps_per_execution: int = 1) -> phalanx.Model:
    """The shared compiled model for ``steps_per_execution``, as if new (same first weights)."""
    if steps_per_execution not in _shared:
        model = build_model(steps_per_execution)
        _shared[steps_per_execution] = (model, model.get_weights())
    model, weights = _shared[steps_per_execution]
    model.set_weights(weights)
    model.optimizer.learning_rate = LEARNING_RATE
    model.stop_training = False
    model.history = None
    return model


def fit(model: phalanx.Model, callbacks=(), *, epochs: int = 1, validation: bool = False, **kwargs):
    """``model.fit(X, Y, ...)``: batch ``BATCH``, unshuffled, silent unless told otherwise.

    ``validation=True`` validates on ``VAL`` after every epoch. With
    ``steps_per_epoch``, ``X`` and ``Y`` are repeated (or cut) to that many
    batches, so every epoch is one pass of its steps (arrays that end sooner
    end the epoch there, with Keras 3's warning).
    """
    kwargs.setdefault("verbose", 0)
    kwargs.setdefault("shuffle", False)
    kwargs.setdefault("batch_size", BATCH)
    if validation:
        kwargs["validation_data"] = VAL
    x, y = X, Y
    steps = kwargs.get("steps_per_epoch")
    if steps is not None:
        rows = steps * kwargs["batch_size"]
        x, y = np.resize(X, (rows, *X.shape[1:])), np.resize(Y, (rows, *Y.shape[1:]))
    return model.fit(x, y, epochs=epochs, callbacks=list(callbacks), **kwargs)


def scripted(key: str, values) -> LambdaCallback:
    """A callback that sets ``logs[key] = values[epoch]`` at each epoch end.

    Placed before the callback under test, it makes the value that callback
    watches follow ``values`` (a real fit's loss cannot be made to follow a
    chosen sequence): it sees the real fit's logs with that one entry replaced.
    """

    def write(epoch: int, logs: dict) -> None:
        logs[key] = float(values[epoch])

    return LambdaCallback(on_epoch_end=write)
