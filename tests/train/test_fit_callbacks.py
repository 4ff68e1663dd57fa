"""fit with callbacks that act during an epoch, and streamed input with partial batches."""

import numpy as np
import pytest

import phalanx
from phalanx import layers


def _model(spe=1):
    model = phalanx.Sequential(
        [layers.Input(shape=(3,)), layers.Dense(4, activation="relu"), layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=spe)
    return model


def _data(n=40):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("spe", [1, 2])
def test_weights_can_be_read_and_saved_during_an_epoch(tmp_path, spe):
    x, y = _data()
    model = _model(spe)
    seen = []
    cb = phalanx.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(model.get_weights()[0].copy())
    )
    ckpt = phalanx.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch}-{batch}.npz"), save_freq=2)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[cb, ckpt])
    assert len(seen) == 2 * -(-5 // spe)  # epochs x executions per epoch
    assert not np.allclose(seen[0], seen[-1])
    assert list(tmp_path.glob("w-*.npz"))
    model.get_weights()  # still usable after fit


def test_stop_training_at_a_batch_stops_right_there():
    x, y = _data()
    model = _model()
    batches = []

    def stop(batch, logs):
        batches.append(batch)
        model.stop_training = True

    model.fit(
        x,
        y,
        batch_size=8,
        epochs=3,
        verbose=0,
        callbacks=[phalanx.callbacks.LambdaCallback(on_train_batch_end=stop)],
    )
    assert batches == [0]
    assert int(model._state.step) == 1


def test_streamed_partial_batch_never_reaches_the_loss():
    import jax.numpy as jnp

    x = np.linspace(1, 2, 30, dtype=np.float32).reshape(10, 3)
    y = x.sum(axis=1, keepdims=True) + 1.0  # never 0; padding must not make it 0

    def mape(y_true, y_pred):
        return jnp.mean(jnp.abs(y_true - y_pred) / y_true, axis=-1)

    results = []
    for data in (
        dict(x=x, y=y, batch_size=4),
        dict(x=phalanx.data.Dataset.from_tensor_slices((x, y)).batch(4)),
    ):
        model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
        model.build()
        model.set_weights([np.full((3, 1), 0.1, np.float32), np.zeros(1, np.float32)])
        model.compile(optimizer="sgd", loss=mape)
        history = model.fit(epochs=2, verbose=0, shuffle=False, **data)
        results.append((history.history["loss"], model.get_weights()))
    (loss_a, w_a), (loss_b, w_b) = results
    assert np.all(np.isfinite(loss_b))
    np.testing.assert_allclose(loss_a, loss_b, rtol=1e-5)
    for a, b in zip(w_a, w_b, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dataset_epoch_order_depends_on_the_epoch_not_on_history():
    from phalanx.train.data_adapters import _adapter

    ds = phalanx.data.Dataset.range(12).shuffle(12, seed=3).batch(4)
    third_pass = [b.tolist() for b in ds._iter_epoch(2)]
    strategy = phalanx.OneDeviceStrategy()
    fresh = _adapter.IterableAdapter(ds, steps_per_execution=1, strategy=strategy)
    # A resumed run's first epoch is epoch 2: it must see the third pass's order.
    got = [np.asarray(b).tolist() for b in fresh._epoch_iterator(2)]
    assert got == third_pass
    assert got != [b.tolist() for b in ds._iter_epoch(0)]


def test_partial_batch_policies_are_refused_with_several_processes(monkeypatch):
    strategy = phalanx.MirroredStrategy()
    monkeypatch.setattr(strategy, "_num_processes", 2)
    ds = phalanx.data.Dataset.range(10).batch(4)
    with pytest.raises(ValueError, match="not supported with 2 processes.*drop_remainder=True"):
        strategy.experimental_distribute_dataset(ds, phalanx.InputOptions(partial_batch="drop"))


def test_only_callbacks_that_may_act_make_the_loop_synchronous(tmp_path):
    from phalanx.callbacks import CallbackList, LambdaCallback, ModelCheckpoint, TensorBoard
    from phalanx.train import _loop

    recording = CallbackList([TensorBoard(str(tmp_path))], add_history=True, add_progbar=True)
    assert not _loop.may_act_per_batch(recording, "train")
    for acting in (
        LambdaCallback(on_train_batch_end=lambda batch, logs: None),
        ModelCheckpoint(str(tmp_path / "w.npz"), save_freq=3),
    ):
        assert _loop.may_act_per_batch(CallbackList([acting]), "train")


# -- a callback's change to the model takes effect from the next step (issue 9, item 7) -------


@pytest.mark.parametrize("spe", [1, 2])
def test_learning_rate_set_to_zero_mid_epoch_freezes_the_weights_from_there(spe):
    x, y = _data()
    model = _model(spe)
    seen = []

    def on_batch_end(batch, logs):
        seen.append(model.get_weights())
        if len(seen) == 2:  # after the second execution of the first epoch
            model.optimizer.learning_rate = 0.0

    cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=on_batch_end)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[cb])
    assert model.optimizer.learning_rate == 0.0
    assert not np.allclose(seen[0][0], seen[1][0])  # training until then
    for later in [*seen[2:], model.get_weights()]:
        for a, b in zip(seen[1], later, strict=True):
            np.testing.assert_array_equal(a, b)


def test_learning_rate_set_at_a_batch_is_the_rate_of_the_next_step():
    # Both runs reach the same weights after step 0; SGD's step 1 from there moves them by
    # rate x gradient, so halving the rate at batch 0's end halves step 1's move.
    x, y = _data(16)
    moves = []
    for halve in (False, True):
        model = _model()
        model.optimizer.learning_rate = 0.01
        seen = [model.get_weights()]

        def on_batch_end(batch, logs, model=model, seen=seen, halve=halve):
            seen.append(model.get_weights())
            if halve and batch == 0:
                model.optimizer.learning_rate = 0.005

        cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=on_batch_end)
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[cb])
        moves.append(seen[2][-1] - seen[1][-1])  # the bias's move in the second step
    np.testing.assert_allclose(moves[1], moves[0] / 2, rtol=1e-5)


def test_set_weights_in_a_callback_is_what_training_continues_from():
    x, y = _data()
    model = _model()
    model.build((3,))
    w0 = model.get_weights()
    after_epoch = []

    def on_epoch_begin(epoch, logs):
        if epoch == 1:
            model.set_weights(w0)  # epoch 1 trains from the initial weights again

    cb = phalanx.callbacks.LambdaCallback(
        on_epoch_begin=on_epoch_begin,
        on_epoch_end=lambda epoch, logs: after_epoch.append(model.get_weights()),
    )
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    np.testing.assert_allclose(history.history["loss"][1], history.history["loss"][0], rtol=1e-6)
    for a, b in zip(after_epoch[0], after_epoch[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)

    # and from a batch-end hook: the next step starts from the weights set there
    model = _model()
    model.build((3,))
    zeros = [np.zeros_like(w) for w in model.get_weights()]
    seen = []

    def on_batch_end(batch, logs):
        if batch == 2:
            model.set_weights(zeros)
        seen.append(model.get_weights())

    cb = phalanx.callbacks.LambdaCallback(on_train_batch_end=on_batch_end)
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[cb])
    fresh = _model()
    fresh.build((3,))
    fresh.set_weights(zeros)
    fresh.fit(x[24:], y[24:], batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), fresh.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
