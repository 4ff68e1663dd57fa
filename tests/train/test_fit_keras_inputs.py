"""fit/evaluate/predict read their inputs as Keras does (issue 9): what they are given, or a clear error."""

import jax
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import LabelOutOfRangeError, MissingTargetsError


def _data(n=60, features=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def _model(strategy=None, *, loss="mse", lr=0.0):
    strategy = strategy or phalanx.get_strategy()
    with strategy.scope():
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer=phalanx.optimizers.SGD(lr), loss=loss)
    return model


# (60, 4, 8): batches of 15 on 8 replicas, each padded to 16 with a masked row.
@pytest.mark.parametrize(
    ("n", "steps", "replicas"), [(60, 4, 1), (60, 3, 1), (64, 2, 8), (60, 4, 8)]
)
def test_steps_per_epoch_without_batch_size_covers_the_arrays_once(n, steps, replicas):
    # Keras: batch_size = ceil(N / steps_per_epoch) for arrays, so one epoch sees every example.
    x, y = _data(n)
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:replicas])
    model = _model(strategy)  # learning rate 0: the epoch's loss is the loss over what it saw
    seen = []
    cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    history = model.fit(x, y, steps_per_epoch=steps, shuffle=False, verbose=0, callbacks=[cb])
    assert seen == list(range(steps))
    np.testing.assert_allclose(history.history["loss"][0], model.evaluate(x, y, verbose=0), 1e-5)


# -- training without targets: raise, naming what is missing ---------------------------------


def _x_only_dataset(x):
    return phalanx.data.Dataset.from_tensor_slices(x).batch(10)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, y: m.fit(x, verbose=0),
        lambda m, x, y: m.fit(x, batch_size=10, verbose=0),
        lambda m, x, y: m.fit(_x_only_dataset(x), verbose=0),
        lambda m, x, y: m.fit(phalanx.data.Dataset.from_tensor_slices((x,)).batch(10), verbose=0),
        lambda m, x, y: m.evaluate(x, verbose=0),
        lambda m, x, y: m.evaluate(_x_only_dataset(x), verbose=0),
        lambda m, x, y: m.train_on_batch(x),
    ],
    ids=[
        "fit-x",
        "fit-x-batch",
        "fit-dataset-x",
        "fit-dataset-x-tuple",
        "evaluate-x",
        "evaluate-dataset-x",
        "train_on_batch-x",
    ],
)
def test_a_loss_without_targets_raises_naming_what_is_missing(call):
    x, y = _data(20)
    model = _model(lr=0.1)
    before = None
    with pytest.raises(MissingTargetsError, match=r"no targets \(y\).*the loss 'mse'"):
        call(model, x, y)
    if model.built:
        before = model.get_weights()
        model.fit(x, y, batch_size=10, verbose=0)  # still usable
        assert not np.allclose(before[0], model.get_weights()[0])


def test_validation_data_without_targets_raises_before_training():
    x, y = _data(20)
    model = _model(lr=0.1)
    epochs = []
    cb = phalanx.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: epochs.append(e))
    with pytest.raises(MissingTargetsError, match=r"validation_data.*no targets"):
        model.fit(x, y, batch_size=10, validation_data=(x,), callbacks=[cb], verbose=0)
    assert epochs == []
    with pytest.raises(MissingTargetsError, match=r"validation_data.*no targets"):
        model.fit(x, y, batch_size=10, validation_data=_x_only_dataset(x), verbose=0)


def test_a_dataset_that_drops_its_targets_midway_raises():
    x, y = _data(20)
    batches = [(x[:10], y[:10]), (x[10:],)]
    model = _model(lr=0.1)
    with pytest.raises(MissingTargetsError, match="batch 1"):
        model.fit(iter(batches), verbose=0)


def test_predict_needs_no_targets():
    x, _ = _data(20)
    model = _model()
    assert model.predict(x, verbose=0).shape == (20, 1)
    assert model.predict(_x_only_dataset(x), verbose=0).shape == (20, 1)


# -- sparse labels out of range: raise, as TensorFlow, from a flag the compiled step keeps ----


def _classifier(spe=1, replicas=1):
    strategy = phalanx.MirroredStrategy(devices=jax.devices()[:replicas])
    with strategy.scope():
        model = phalanx.Sequential(
            [layers.Input(shape=(3,)), layers.Dense(4, activation="softmax")]
        )
        model.compile(
            optimizer="sgd",
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=spe,
        )
    return model


@pytest.mark.parametrize(("bad", "spe", "replicas"), [(-1, 1, 1), (4, 1, 8), (7, 2, 2)])
def test_sparse_label_out_of_range_raises_with_the_value_and_the_batch(bad, spe, replicas):
    x, _ = _data(48)
    y = np.arange(48, dtype=np.int32) % 4
    y[29] = bad  # batch 3 of 8-example batches, unshuffled
    model = _classifier(spe, replicas)
    pattern = rf"label value of {bad} .*\[0, 4\).*batch 3"
    with pytest.raises(LabelOutOfRangeError, match=pattern):
        model.fit(x, y, batch_size=8, shuffle=False, verbose=0)
    with pytest.raises(LabelOutOfRangeError, match=pattern):
        model.evaluate(x, y, batch_size=8, verbose=0)
    y[29] = 3
    model.evaluate(x, y, batch_size=8, verbose=0)  # in range: no error


def test_padding_and_zero_weight_rows_are_not_checked():
    x, _ = _data(20)
    y = np.arange(20, dtype=np.int32) % 4
    model = _classifier()
    model.fit(x, y, batch_size=8, verbose=0)  # the short last batch is padded
    stream = phalanx.data.Dataset.from_tensor_slices((x, y)).batch(8)
    model.evaluate(stream, verbose=0)


# -- TPUStrategy's batch advice reaches fit, the seeds' main path --------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_tpu_strategy_advises_a_per_replica_batch_multiple_of_128_in_fit(stream):
    import warnings

    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    x, y = _data(64)
    model = _model(strategy)
    data = (
        dict(x=phalanx.data.Dataset.from_tensor_slices((x, y)).batch(32))
        if stream
        else dict(x=x, y=y, batch_size=32)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(epochs=2, verbose=0, **data)
        model.evaluate(verbose=0, **data)
    messages = [str(w.message) for w in caught if "multiple of 128" in str(w.message)]
    assert len(messages) == 1, messages
    assert "per-replica batch is 4, not a multiple of 128" in messages[0]


# -- names the seeds use (item 16) -----------------------------------------------------------


def test_fit_given_an_input_function_says_to_call_it():
    x, y = _data(16)

    def train_input_fn():
        return phalanx.data.Dataset.from_tensor_slices((x, y)).batch(8)

    model = _model()
    with pytest.raises(TypeError, match=r"function train_input_fn.*fit\(train_input_fn\(\)"):
        model.fit(train_input_fn, verbose=0)
    with pytest.raises(TypeError, match=r"function train_input_fn.*evaluate\(train_input_fn\(\)"):
        model.evaluate(train_input_fn, verbose=0)
    model.fit(train_input_fn(), verbose=0)


def test_to_categorical_as_keras():
    y = np.array([0, 2, 1, 2])
    one_hot = phalanx.utils.to_categorical(y, 3)
    np.testing.assert_array_equal(one_hot, np.eye(3, dtype=np.float32)[y])
    assert one_hot.dtype == np.float32
    assert phalanx.utils.to_categorical(y).shape == (4, 3)  # classes from the labels
    assert phalanx.utils.to_categorical(y.reshape(4, 1), 5).shape == (4, 5)  # [n, 1] squeezed
    with pytest.raises(ValueError, match=r"label 3 .*num_classes=3"):
        phalanx.utils.to_categorical(np.array([3]), 3)


def test_optimizer_iterations_counts_the_steps_taken():
    x, y = _data(40)
    model = _model(lr=0.1)
    assert int(model.optimizer.iterations) == 0
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert int(model.optimizer.iterations) == 10
