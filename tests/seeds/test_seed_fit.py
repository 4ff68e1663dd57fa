"""The seeds' Keras programs, ported with ``tf`` -> ``phalanx``, on a simulated TPU.

Each test is one seed's ``compile``/``fit`` as its guide writes it (smaller
data and models, so that it runs in seconds on 8 simulated CPU devices): seed
000 (numpy arrays, ``batch_size=1024``), seed 001 ("Use TPUs": a finite test
dataset as ``validation_data`` with ``validation_steps``, then again with
``steps_per_execution``), seed 003 (a repeated ``drop_remainder`` pipeline with
``steps_per_epoch``, ``metrics=['acc']``), seed 004 (``model.add``,
one-hot labels, ``steps_per_epoch`` over numpy arrays, ``validation_freq``).
"""

from __future__ import annotations

import numpy as np
import pytest

import phalanx as px


@pytest.fixture
def strategy():
    return px.TPUStrategy(experimental_simulate_on_cpu=True)


def test_seed_000_fit_on_arrays(strategy):
    with strategy.scope():
        model = px.models.Sequential(
            [
                px.layers.Dense(16, activation="relu", input_shape=(784,)),
                px.layers.Dense(10, activation="softmax"),
            ]
        )
        model.compile(
            optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
        )
    x_train, y_train = (np.random.rand(2500, 784), np.random.randint(0, 10, 2500))
    history = model.fit(x_train, y_train, epochs=2, batch_size=1024, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]
    assert len(history.history["loss"]) == 2


def _mnist_like(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28, 1), dtype=np.uint8), rng.integers(0, 10, n)


def _get_dataset(batch_size, is_training=True):
    dataset = px.data.Dataset.from_tensor_slices(_mnist_like(800 if is_training else 400, 0))

    def scale(image, label):
        image = image.astype(np.float32)
        image /= 255.0
        return image, label

    dataset = dataset.map(scale)
    if is_training:
        dataset = dataset.shuffle(10000, seed=0)
        dataset = dataset.repeat()
    return dataset.batch(batch_size)


def _create_model():
    regularizer = px.regularizers.L2(1e-5)
    return px.Sequential(
        [
            px.layers.Conv2D(
                4, 3, input_shape=(28, 28, 1), activation="relu", kernel_regularizer=regularizer
            ),
            px.layers.Flatten(),
            px.layers.Dense(16, activation="relu", kernel_regularizer=regularizer),
            px.layers.Dense(10, kernel_regularizer=regularizer),
        ]
    )


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_seed_001_fit_validates_on_the_test_set_every_epoch(strategy, steps_per_execution):
    """The test dataset is finite (no repeat) and ``validation_steps`` is its length: each
    epoch validates on all of it, as TensorFlow does (a fresh pass per epoch)."""
    with strategy.scope():
        model = _create_model()
        model.compile(
            optimizer="adam",
            steps_per_execution=steps_per_execution,
            loss=px.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["sparse_categorical_accuracy"],
        )
    batch_size = 200
    test_dataset = _get_dataset(batch_size, is_training=False)
    history = model.fit(
        _get_dataset(batch_size, is_training=True),
        epochs=3,
        steps_per_epoch=800 // batch_size,
        validation_data=test_dataset,
        validation_steps=400 // batch_size,
        verbose=0,
    )
    val_loss = history.history["val_loss"]
    assert len(val_loss) == 3
    # The last epoch's validation is evaluate() on the whole test set.
    loss, _ = model.evaluate(test_dataset, verbose=0)
    np.testing.assert_allclose(val_loss[-1], loss, rtol=1e-5)


def test_fit_on_a_finite_dataset_with_steps_per_epoch_equal_to_its_length():
    """Keras (2 and 3) start a new pass when ``steps_per_epoch`` used up a finite dataset."""
    rng = np.random.default_rng(0)
    x, y = rng.random((400, 8), dtype=np.float32), rng.integers(0, 3, 400)
    train = px.data.Dataset.from_tensor_slices((x, y)).shuffle(400, seed=0).batch(50)
    model = px.Sequential([px.layers.Dense(3, input_shape=(8,))])
    model.compile(optimizer="adam", loss=px.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(train, epochs=3, steps_per_epoch=8, verbose=0)
    assert len(history.history["loss"]) == 3


def test_seed_003_repeated_pipeline_with_steps_per_epoch(strategy):
    rng = np.random.default_rng(0)
    x_train = rng.random((2048, 784), dtype=np.float32)
    y_train = px.utils.to_categorical(rng.integers(0, 10, 2048), 10)

    def train_input_fn(batch_size=1024):
        dataset = px.data.Dataset.from_tensor_slices((x_train, y_train))
        dataset = dataset.cache()
        dataset = dataset.shuffle(1000, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
        return dataset.batch(batch_size, drop_remainder=True)

    with strategy.scope():
        model = px.Sequential(
            [
                px.layers.Dense(16, activation="relu", input_shape=(784,)),
                px.layers.Dense(10, activation="softmax"),
            ]
        )
        model.compile(
            optimizer=px.optimizers.Adam(1e-3), loss="categorical_crossentropy", metrics=["acc"]
        )
    history = model.fit(train_input_fn(), steps_per_epoch=3, epochs=2, verbose=0)
    assert sorted(history.history) == ["acc", "loss"]
    with pytest.raises(px.errors.FitInputError, match=r"Call it: fit\(train_input_fn\(\)\)"):
        model.fit(train_input_fn, steps_per_epoch=60, epochs=10)


def test_seed_004_model_add_one_hot_and_validation_freq(strategy):
    rng = np.random.default_rng(0)
    x_train = rng.integers(0, 256, (3000, 28, 28), dtype=np.uint8).reshape([3000, 784]) / 255
    x_test = rng.integers(0, 256, (500, 28, 28), dtype=np.uint8).reshape([500, 784]) / 255
    y_train = px.utils.to_categorical(rng.integers(0, 10, 3000), 10)
    y_test = px.utils.to_categorical(rng.integers(0, 10, 500), 10)
    with strategy.scope():
        model = px.models.Sequential()
        model.add(px.layers.Dense(32, input_shape=(784,)))
        model.add(px.layers.Activation("relu"))
        model.add(px.layers.Dropout(0.2))
        model.add(px.layers.Dense(10))
        model.add(px.layers.Activation("softmax"))
        model.compile(
            loss="categorical_crossentropy",
            optimizer=px.optimizers.Adam(),
            metrics=["accuracy"],
        )
    history = model.fit(
        x_train.astype(np.float32),
        y_train.astype(np.float32),
        epochs=2,
        steps_per_epoch=3,  # no batch_size: ceil(3000 / 3) = 1000 examples a step, as Keras
        validation_data=(x_test.astype(np.float32), y_test.astype(np.float32)),
        validation_freq=2,
        verbose=0,
    )
    assert len(history.history["loss"]) == 2
    assert len(history.history["val_loss"]) == 1


def test_tpu_batch_advice_names_the_users_line(strategy):
    """Seed 004's batch (60000 / 50 steps = 1200, 150 per core) draws TPUStrategy's advice;
    the warning points at the user's ``fit`` call, not at phalanx's internals."""
    with strategy.scope():
        model = px.Sequential([px.layers.Dense(10, input_shape=(4,))])
        model.compile(optimizer="adam", loss="mse", steps_per_execution=2)
    with pytest.warns(UserWarning, match="per-replica batch is 150") as record:
        model.fit(np.ones((1200, 4)), np.ones((1200, 10)), steps_per_epoch=1, verbose=0)
    assert [w.filename for w in record] == [__file__]
    with pytest.warns(UserWarning, match="per-replica batch is 1,") as record:
        px.TPUStrategy(experimental_simulate_on_cpu=True).shard_batch(np.ones((8, 2)))
    assert [w.filename for w in record] == [__file__]


class _Interrupt(Exception):
    pass


class _StopAt(px.callbacks.Callback):
    """Ends fit (as a crash would) once ``steps`` steps are done."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def on_train_batch_end(self, batch, logs=None):
        if self.model.optimizer.iterations >= self.steps:
            raise _Interrupt


@pytest.mark.parametrize("stop_at", [4, 5])
def test_resumed_fit_starts_the_next_pass_where_the_uninterrupted_one_did(tmp_path, stop_at):
    """4 batches, 2 steps an epoch: every second epoch starts a new pass; a run resumed
    from BackupAndRestore at the end of a pass (4) or inside one (5) ends as the whole run."""
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 6), dtype=np.float32), rng.integers(0, 3, 64)
    ds = px.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16)

    def make():
        model = px.Sequential([px.layers.Input(shape=(6,)), px.layers.Dense(3)])
        model.compile(
            optimizer="adam", loss=px.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        return model

    reference = make()
    reference.fit(ds, epochs=4, steps_per_epoch=2, verbose=0)
    backup = px.callbacks.BackupAndRestore(tmp_path / "backup", save_freq=1)
    with pytest.raises(_Interrupt):
        make().fit(ds, epochs=4, steps_per_epoch=2, callbacks=[backup, _StopAt(stop_at)], verbose=0)
    resumed = make()
    resumed.fit(ds, epochs=4, steps_per_epoch=2, callbacks=[backup], verbose=0)
    for got, want in zip(resumed.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
