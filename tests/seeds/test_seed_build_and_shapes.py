"""Keras's ``model.build(batch_shape)`` and ``model.input_shape``/``output_shape``, as the
guides' readers write them around the seeds' models (checked against TensorFlow 2.21).

Keras's ``build`` takes the batch shape, ``(None, 28, 28, 1)``; phalanx read it as the
shape of one example (a rank-5 input to seed 001's ``Conv2D``: LayerShapeError).
Keras's ``input_shape``/``output_shape`` carry a None batch axis; phalanx had neither.
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx


def _seed_001_model():
    """Seed 001's create_model, smaller, without the input_shape argument."""
    regularizer = phalanx.regularizers.L2(1e-5)
    return phalanx.Sequential(
        [
            phalanx.layers.Conv2D(4, 3, activation="relu", kernel_regularizer=regularizer),
            phalanx.layers.Flatten(),
            phalanx.layers.Dense(10, kernel_regularizer=regularizer),
        ]
    )


def test_build_takes_keras_batch_shape_and_trains():
    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    with strategy.scope():
        model = _seed_001_model()
        model.build((None, 28, 28, 1))
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["sparse_categorical_accuracy"],
        )
    # TensorFlow 2.21: [(3, 3, 1, 4), (4,), (2704, 10), (10,)], (None, 28, 28, 1), (None, 10)
    assert [w.shape for w in model.get_weights()] == [(3, 3, 1, 4), (4,), (2704, 10), (10,)]
    assert model.input_shape == (None, 28, 28, 1)
    assert model.output_shape == (None, 10)
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, 64)
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert sorted(history.history) == ["loss", "sparse_categorical_accuracy"]


@pytest.mark.parametrize("shape", [(None, 5), [None, 5], (5,)])
def test_build_batch_shape_or_example_shape(shape):
    model = phalanx.Sequential([phalanx.layers.Dense(3)])
    model.build(input_shape=shape)
    assert model.input_shape == (None, 5)
    assert [w.shape for w in model.get_weights()] == [(5, 3), (3,)]


def test_input_and_output_shapes_as_keras():
    seed_000 = phalanx.models.Sequential(
        [
            phalanx.layers.Dense(16, activation="relu", input_shape=(784,)),
            phalanx.layers.Dense(10, activation="softmax"),
        ]
    )
    assert (seed_000.input_shape, seed_000.output_shape) == ((None, 784), (None, 10))
    a = phalanx.Input(shape=(4,), name="a")
    b = phalanx.Input(shape=(2,), name="b")
    out = phalanx.layers.Dense(1)(phalanx.layers.Concatenate()([a, b]))
    # TensorFlow 2.21 (Keras 3): a list for several inputs or outputs, dict inputs too.
    two_in = phalanx.Model(inputs={"a": a, "b": b}, outputs=out)
    assert two_in.input_shape == [(None, 4), (None, 2)]
    assert two_in.output_shape == (None, 1)
    two_out = phalanx.Model(inputs=[a, b], outputs=[out, out])
    assert two_out.output_shape == [(None, 1), (None, 1)]
    with pytest.raises(AttributeError, match=r"no defined input shape yet.*layers.Input"):
        _ = phalanx.Sequential([phalanx.layers.Dense(3)]).input_shape
