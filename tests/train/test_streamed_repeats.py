"""Streamed input gives one result, run after run (and under load).

A fit on a ``Dataset`` over several replicas once gave different weights in 2
runs of 5: JAX keeps, per numpy array object, the copy it converts to its
canonical dtype (int64 labels become int32), and phalanx refilled the same
host buffer object for every execution, so a step could train on the labels
of an earlier one. Each configuration here runs several times in one process
and must give bit-identical results, equal to one device's within float
tolerance. The data is what users pass: float64 features and int64 labels
straight from numpy.
"""

import threading

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers

FEATURES, CLASSES, N = 12, 4, 96
REPEATS = 3


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(CLASSES, FEATURES)) * 2
    y = rng.integers(0, CLASSES, N)  # int64, as numpy makes them
    x = centers[y] + rng.normal(size=(N, FEATURES))  # float64
    return x, y


@pytest.fixture(scope="module")
def weights0():
    model = phalanx.Sequential(
        [
            layers.Input(shape=(FEATURES,)),
            layers.Dense(16, activation="relu"),
            layers.Dense(CLASSES),
        ]
    )
    model.build()
    return model.get_weights()


def _strategy(devices: int):
    if devices == 1:
        return phalanx.OneDeviceStrategy(jax.devices()[0])
    return phalanx.MirroredStrategy(jax.devices()[:devices])


def _model(strategy, weights0, spe: int):
    with strategy.scope():
        model = phalanx.Sequential(
            [
                layers.Input(shape=(FEATURES,)),
                layers.Dense(16, activation="relu"),
                layers.Dense(CLASSES),
            ]
        )
        model.build()
        model.set_weights(weights0)
        model.compile(
            optimizer="adam",
            loss=phalanx.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


def _generator(x, y, batch):
    def gen():
        for i in range(0, len(x), batch):
            yield x[i : i + batch], y[i : i + batch]

    return gen


def _fit(devices, spe, weights0, data, source="dataset"):
    x, y = data
    strategy = _strategy(devices)
    model = _model(strategy, weights0, spe)
    if source in ("dataset", "distributed"):
        inputs = phalanx.data.Dataset.from_tensor_slices((x, y)).shuffle(N, seed=1).batch(16)
        if source == "distributed":
            inputs = strategy.experimental_distribute_dataset(inputs)
    else:
        inputs = phalanx.data.Dataset.from_generator(
            _generator(x, y, 16),
            output_signature=(
                phalanx.data.TensorSpec((None, FEATURES), np.float64),
                phalanx.data.TensorSpec((None,), np.int64),
            ),
        ).repeat()
    kwargs = {"steps_per_epoch": N // 16} if source == "generator" else {}
    history = model.fit(inputs, epochs=3, verbose=0, **kwargs)
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(24)
    evaluated = model.evaluate(ds, verbose=0)
    predicted = model.predict(phalanx.data.Dataset.from_tensor_slices(x).batch(24), verbose=0)
    return {
        "loss": np.array(history.history["loss"]),
        "accuracy": np.array(history.history["accuracy"]),
        "weights": model.get_weights(),
        "evaluate": np.array(evaluated),
        "predict": predicted,
    }


def _assert_identical(runs):
    first = runs[0]
    for k, run in enumerate(runs[1:], start=1):
        for key in first:
            a, b = first[key], run[key]
            pairs = zip(a, b, strict=True) if isinstance(a, list) else [(a, b)]
            for u, v in pairs:
                assert np.array_equal(u, v), f"{key} differs between run 0 and run {k}"


def _assert_close(run, ref):
    np.testing.assert_allclose(run["loss"], ref["loss"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run["accuracy"], ref["accuracy"], atol=1e-6)
    for a, b in zip(run["weights"], ref["weights"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run["predict"], ref["predict"], rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def reference(data, weights0):
    return _fit(1, 1, weights0, data)


@pytest.mark.parametrize("devices", [1, 2, 8])
@pytest.mark.parametrize("spe", [1, 4])
def test_fit_on_a_dataset_gives_one_result(devices, spe, data, weights0, reference):
    runs = [_fit(devices, spe, weights0, data) for _ in range(REPEATS)]
    _assert_identical(runs)
    _assert_close(runs[0], reference)


@pytest.mark.parametrize("devices,spe", [(2, 1), (8, 3)])
def test_fit_on_a_generator_gives_one_result(devices, spe, data, weights0):
    runs = [_fit(devices, spe, weights0, data, source="generator") for _ in range(REPEATS)]
    _assert_identical(runs)
    _assert_close(runs[0], _fit(1, 1, weights0, data, source="generator"))


@pytest.mark.parametrize("devices,spe", [(2, 1), (8, 3)])
def test_fit_on_a_distributed_dataset_gives_one_result(devices, spe, data, weights0, reference):
    runs = [_fit(devices, spe, weights0, data, source="distributed") for _ in range(REPEATS)]
    _assert_identical(runs)
    _assert_close(runs[0], reference)


def _busy(stop: threading.Event) -> None:
    a = np.random.default_rng(0).random((256, 256))
    while not stop.is_set():
        a = np.tanh(a @ a)


@pytest.mark.parametrize("devices,spe", [(8, 1), (2, 4)])
def test_streamed_fit_under_load_gives_one_result(devices, spe, data, weights0, reference):
    stop = threading.Event()
    worker = threading.Thread(target=_busy, args=(stop,), daemon=True)
    worker.start()
    try:
        runs = [_fit(devices, spe, weights0, data) for _ in range(REPEATS)]
    finally:
        stop.set()
        worker.join(timeout=10)
    _assert_identical(runs)
    _assert_close(runs[0], reference)


def _custom_loop(devices, data, weights0, stacked: int):
    """A custom training loop over a distributed dataset, ``stacked(n)`` steps per run."""
    import optax

    x, y = data
    strategy = _strategy(devices)
    w = strategy.replicate(np.asarray(weights0[0], np.float32))
    tx = optax.sgd(0.1)
    opt = strategy.replicate(tx.init(w))
    ds = phalanx.data.Dataset.from_tensor_slices((x, y)).repeat(2).batch(16, drop_remainder=True)
    dist = strategy.experimental_distribute_dataset(ds)
    if stacked > 1:
        dist = dist.stacked(stacked)

    def step(w, opt, xb, yb):
        def loss_fn(w):
            logits = xb.astype(np.float32) @ w
            per_example = optax.softmax_cross_entropy_with_integer_labels(logits[:, :CLASSES], yb)
            return phalanx.compute_average_loss(per_example, global_batch_size=16)

        loss, g = jax.value_and_grad(loss_fn)(w)
        updates, opt = tx.update(g, opt, w)
        return optax.apply_updates(w, updates), opt, loss

    def steps(w, opt, xb, yb):
        if stacked == 1:
            return step(w, opt, xb, yb)

        def body(carry, batch):
            w, opt, loss = step(*carry, *batch)
            return (w, opt), loss

        (w, opt), losses = jax.lax.scan(body, (w, opt), (xb, yb))
        return w, opt, losses[-1]

    losses = []
    for xb, yb in dist:
        w, opt, loss = strategy.run(steps, args=(w, opt, xb, yb))
        losses.append(strategy.reduce("sum", loss, axis=None))
    return np.asarray(jax.device_get(w)), np.array(jax.device_get(losses))


@pytest.mark.parametrize("devices,stacked", [(2, 1), (8, 1), (8, 3)])
def test_custom_loop_on_a_distributed_dataset_gives_one_result(devices, stacked, data, weights0):
    runs = [_custom_loop(devices, data, weights0, stacked) for _ in range(REPEATS)]
    for w, losses in runs[1:]:
        assert np.array_equal(w, runs[0][0])
        assert np.array_equal(losses, runs[0][1])


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_a_numpy_buffer_refilled_in_place_places_its_new_contents(dtype):
    """A custom loop that refills one numpy batch buffer: each ``run`` sees the new rows."""
    strategy = _strategy(8)
    buffer = np.zeros((16, 3), dtype)
    sums = []
    for k in range(1, 6):
        buffer[...] = k
        out = strategy.run(lambda b: b.sum(), args=(strategy.shard_batch(buffer),))
        buffer[...] = -1  # written again before anything reads the result
        sums.append(float(strategy.reduce("sum", out, axis=None)))
    assert sums == [16 * 3 * k for k in range(1, 6)]


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.int32])
def test_placed_batches_do_not_share_memory_with_the_users_buffer(dtype):
    """What ``shard_batch`` (and so ``run``) placed keeps its value when the buffer changes."""
    strategy = _strategy(8)
    buffer = np.full((8, 4096), 7, dtype)  # one aligned row per device: CPU aliases it
    placed = strategy.shard_batch(buffer)
    buffer[...] = -1
    assert np.all(np.asarray(placed) == 7)
