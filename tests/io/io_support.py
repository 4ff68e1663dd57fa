"""Helpers of the phalanx.io tests: a small real model, event-file scalars read through phalanx."""

from __future__ import annotations

import numpy as np

import phalanx
from phalanx import layers
from phalanx.data import TFRecordDataset
from phalanx.io import gfile


def model() -> phalanx.Model:
    """A compiled 3 -> 2 softmax classifier (SGD 0.1, accuracy)."""
    net = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    net.compile(
        optimizer=phalanx.optimizers.SGD(0.1),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return net


def data(n: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """``n`` examples of 3 features, labelled by the sign of their sum."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


def scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the event files in ``directory`` (any file system).

    Event files are TFRecord files of ``Event`` protos: read with phalanx's own reader.
    """
    from tensorboardX.proto import event_pb2

    out: dict[str, list[tuple[int, float]]] = {}
    for path in gfile.glob(gfile.join(directory, "events.out.tfevents.*")):
        for record in TFRecordDataset(path):
            event = event_pb2.Event.FromString(record.item())
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out
