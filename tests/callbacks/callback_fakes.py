"""Fakes for the callback tests: a model with the callback protocol, a scripted fit, an event reader.

``fit`` calls the hooks as ``Model.fit`` does (see ``phalanx.callbacks``'s
docstring): one ``on_train_batch_begin/end`` pair per execution of
``steps_per_execution`` steps, 0-based step indices within the epoch, logs of
Python floats, validation through the test hooks, ``stop_training`` checked
after each execution and each epoch.
"""

from __future__ import annotations

import glob
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import masked_crc32c

from phalanx.callbacks import CallbackList


class FakeOptimizer:
    """An optimizer whose learning rate is a float, or a schedule (then unreadable, as phalanx's)."""

    def __init__(self, learning_rate: float | Callable[[int], float] = 0.1) -> None:
        self._lr = learning_rate

    @property
    def learning_rate(self) -> float:
        if callable(self._lr):
            raise TypeError("the learning rate is a schedule, not a float; it cannot be read")
        return self._lr

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        if callable(self._lr):
            raise TypeError("the learning rate is a schedule, not a float; it cannot be set")
        self._lr = float(value)


class FakeModel:
    """The model side of the callback protocol; its weights encode the last epoch trained."""

    def __init__(self, learning_rate: float | Callable[[int], float] = 0.1) -> None:
        self.stop_training = False
        self.optimizer = FakeOptimizer(learning_rate)
        self.history = None
        self.weights = [np.zeros(2, np.float32), np.zeros((2, 3), np.float32)]
        self.saved: list[str] = []
        self.epochs_trained: list[int] = []

    def get_weights(self) -> list[np.ndarray]:
        return [w.copy() for w in self.weights]

    def set_weights(self, weights: Sequence[np.ndarray]) -> None:
        self.weights = [np.asarray(w).copy() for w in weights]

    def save_weights(self, filepath: str) -> None:
        self.saved.append(filepath)
        with open(filepath, "wb") as f:
            np.savez(f, *self.weights)

    def train_epoch(self, epoch: int) -> None:
        self.epochs_trained.append(epoch)
        self.weights = [np.full_like(w, epoch + 1) for w in self.weights]


def fit(
    model: FakeModel,
    callbacks: Any = None,
    *,
    train_logs: Sequence[dict[str, float]],
    val_logs: Sequence[dict[str, float] | None] | None = None,
    steps: int = 4,
    steps_per_execution: int = 1,
    verbose: int = 0,
    steps_known: bool = True,
    initial_epoch: int = 0,
    batch_logs: Callable[[int, int], dict[str, Any]] | None = None,
    progbar_kwargs: dict[str, Any] | None = None,
) -> CallbackList:
    """Runs ``len(train_logs)`` epochs through the hooks; epoch ``e`` ends with ``train_logs[e]``.

    ``batch_logs(epoch, last_step)`` gives the logs of an execution (default:
    the epoch's final values). ``val_logs[e]`` (or ``None``: no validation
    that epoch) are the validation results. Returns the callback list.
    """
    epochs = len(train_logs)
    cbs = CallbackList(
        callbacks,
        add_history=True,
        add_progbar=verbose != 0,
        model=model,
        epochs=epochs,
        steps=steps if steps_known else None,
        verbose=verbose,
    )
    model.stop_training = False
    cbs.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        cbs.on_epoch_begin(epoch)
        for first in range(0, steps, steps_per_execution):
            last = min(first + steps_per_execution, steps) - 1
            cbs.on_train_batch_begin(first)
            logs = batch_logs(epoch, last) if batch_logs else dict(train_logs[epoch])
            cbs.on_train_batch_end(last, logs)
            if model.stop_training:
                break
        model.train_epoch(epoch)
        epoch_logs = dict(train_logs[epoch])
        val = val_logs[epoch] if val_logs else None
        if val is not None:
            cbs.on_test_begin()
            cbs.on_test_batch_begin(0)
            cbs.on_test_batch_end(0, val)
            cbs.on_test_end(val)
            epoch_logs.update({f"val_{k}": v for k, v in val.items()})
        cbs.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    cbs.on_train_end()
    return cbs


def read_events(directory: str) -> list[event_pb2.Event]:
    """Every event of the event files in ``directory``, checking the TFRecord framing and CRCs."""
    events = []
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        while offset < len(data):
            header = data[offset : offset + 8]
            (length,) = struct.unpack("<Q", header)
            (header_crc,) = struct.unpack("<I", data[offset + 8 : offset + 12])
            assert header_crc == masked_crc32c(header), f"{path}: bad length CRC at {offset}"
            record = data[offset + 12 : offset + 12 + length]
            (data_crc,) = struct.unpack("<I", data[offset + 12 + length : offset + 16 + length])
            assert data_crc == masked_crc32c(record), f"{path}: bad data CRC at {offset}"
            events.append(event_pb2.Event.FromString(record))
            offset += 16 + length
    return events


def read_scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the scalars in ``directory``'s event files."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    for event in read_events(directory):
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars
