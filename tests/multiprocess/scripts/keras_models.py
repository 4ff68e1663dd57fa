"""Child script: a functional and a subclassed model trained with fit; ``keras_models.py OUT``.

``train(strategy)`` is also the one-process reference of
``tests/multiprocess/test_mp_keras_models.py``.
"""

import os
import sys

import jax
import numpy as np

import phalanx
from phalanx import layers


class Subclassed(phalanx.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(8, activation="relu")
        self.dropout = layers.Dropout(0.25)
        self.out = layers.Dense(3, activation="softmax")

    def call(self, inputs, training=False):
        return self.out(self.dropout(self.hidden(inputs), training=training))


def functional():
    a, b = phalanx.Input(shape=(4,), name="a"), phalanx.Input(shape=(2,), name="b")
    shared = layers.Dense(6, activation="relu")
    joined = layers.Concatenate()([shared(a), layers.Dense(6)(b)])
    joined = layers.Dropout(0.25)(layers.Add()([joined, joined]))
    return phalanx.Model([a, b], layers.Dense(3, activation="softmax")(joined))


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    return x, rng.integers(0, 3, 64)


def train(strategy) -> dict[str, np.ndarray]:
    x, y = data()
    out = {}
    for kind in ("functional", "subclassed"):
        with strategy.scope():
            model = functional() if kind == "functional" else Subclassed()
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        inputs = [x[:, :4], x[:, 4:]] if kind == "functional" else x
        history = model.fit(inputs, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        out[f"{kind}/loss"] = np.asarray(history.history["loss"])
        for i, w in enumerate(model.get_weights()):
            out[f"{kind}/w{i}"] = np.asarray(w)
    return out


def main(out_dir: str) -> None:
    result = train(phalanx.MultiWorkerMirroredStrategy())
    np.savez(os.path.join(out_dir, f"{jax.process_index()}.npz"), **result)


if __name__ == "__main__":
    main(sys.argv[1])
