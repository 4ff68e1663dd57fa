"""A global batch that does not split over the replicas: Keras's default 32 on 3 replicas.

Each global batch is padded at its end to a multiple of the replicas (33 rows, 11 per
replica) with masked rows, as a short last batch is. The padding counts nowhere, so
``predict``, ``evaluate`` and ``fit`` on 3 replicas give what one device gives on the same
global batches (TF 2.21 predicts; its ``evaluate`` and ``fit`` fail in ``AddN``).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import phalanx

N = 100  # 3 batches of 32 and one of 4


def _data():
    rng = np.random.default_rng(0)
    x = rng.random((N, 8), dtype=np.float32)
    y = rng.integers(0, 3, N)
    sw = rng.random(N, dtype=np.float32) + 0.5
    return x, y, sw


def _build(steps_per_execution: int):
    model = phalanx.Sequential(
        [
            phalanx.layers.Input(shape=(8,)),
            phalanx.layers.Dense(16, activation="relu"),
            phalanx.layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    return model


def _pair(steps_per_execution: int):
    """The same model on 3 replicas and on one device, from the same weights."""
    with phalanx.distribute.MirroredStrategy(devices=jax.devices()[:3]).scope():
        three = _build(steps_per_execution)
    one = _build(steps_per_execution)
    one.set_weights(three.get_weights())
    return three, one


def _generator(*arrays, batch=32):
    def batches():
        for start in range(0, N, batch):
            part = tuple(a[start : start + batch] for a in arrays)
            yield part if len(part) > 1 else part[0]

    return batches()


def _inputs(kind: str, *arrays):
    """``(x, y, sample_weight)`` keywords for ``kind``: arrays (Keras's default batch of 32),
    a Dataset batched by 32 (read as indices into arrays placed once), or a generator
    (batches stacked on the host)."""
    if kind == "arrays":
        return dict(zip(("x", "y", "sample_weight"), arrays, strict=False))
    if kind == "dataset":
        data = arrays if len(arrays) > 1 else arrays[0]
        return {"x": phalanx.data.Dataset.from_tensor_slices(data).batch(32)}
    return {"x": _generator(*arrays)}


@pytest.mark.parametrize("steps_per_execution", [1, 3])
@pytest.mark.parametrize("kind", ["arrays", "dataset", "generator"])
def test_predict_and_evaluate_on_three_replicas_equal_one_device(kind, steps_per_execution):
    x, y, sw = _data()
    three, one = _pair(steps_per_execution)

    got = three.predict(**_inputs(kind, x), verbose=0)
    assert got.shape == (N, 3)
    np.testing.assert_allclose(got, one.predict(x, verbose=0), atol=1e-6)

    got = three.evaluate(**_inputs(kind, x, y, sw), verbose=0)
    want = one.evaluate(x, y, sample_weight=sw, verbose=0)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_predict_with_batch_sizes_below_and_above_the_replicas():
    x, _, _ = _data()
    three, one = _pair(1)
    want = one.predict(x, verbose=0)
    for batch_size in (1, 2, 4, 10, 31, 64, 99, 101):
        got = three.predict(x, batch_size=batch_size, verbose=0)
        assert got.shape == (N, 3), batch_size
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"batch_size={batch_size}")


@pytest.mark.parametrize("steps_per_execution", [1, 3])
@pytest.mark.parametrize("kind", ["arrays", "dataset"])
def test_fit_on_three_replicas_equals_one_device(kind, steps_per_execution):
    x, y, sw = _data()
    three, one = _pair(steps_per_execution)
    args = dict(epochs=3, shuffle=False, verbose=0)
    got = three.fit(**_inputs(kind, x, y, sw), **args).history
    want = one.fit(x, y, sample_weight=sw, **args).history
    assert set(got) == {"loss", "accuracy"}
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=name)
    for a, b in zip(three.get_weights(), one.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
