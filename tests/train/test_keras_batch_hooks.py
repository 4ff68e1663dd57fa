"""Batch hooks through fused steps, and stop_evaluating/stop_predicting, as Keras 3 (JAX).

Keras 3's ``EpochIterator`` gives an execution of ``steps_per_execution`` steps
the indices ``begin`` and ``begin + steps_per_execution - 1``, also the last,
shorter one (7 batches by 3: ends 2, 5, 8); a callback that overrides a
batch-end hook (``on_batch_end`` too) gets each execution's begin and end in
turn. Each case runs in Keras 3 alongside.
"""

import itertools
import os

import numpy as np
import pytest

import phalanx

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

X = np.linspace(-1, 1, 300, dtype=np.float32).reshape(100, 3)
Y = X[:, :1] * 2.0


def _recorder(lib, hooks):
    def hook(name):
        return lambda self, batch, logs=None: self.calls.append((name, batch))

    body = {name: hook(name) for name in hooks}
    body["calls"] = None
    cls = type("Recorder", (lib.callbacks.Callback,), body)
    cb = cls()
    cb.calls = []
    return cb


def _model(lib, spe):
    model = lib.Sequential([lib.layers.Input(shape=(3,)), lib.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=spe)
    return model


ALL_HOOKS = [
    f"on_{kind}_batch_{end}" for kind in ("train", "test", "predict") for end in ("begin", "end")
]


def _calls(lib, spe, hooks):
    model = _model(lib, spe)
    cb = _recorder(lib, hooks)
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[cb])
    model.evaluate(X, Y, batch_size=16, verbose=0, callbacks=[cb])
    model.predict(X, batch_size=16, verbose=0, callbacks=[cb])
    return cb.calls


@pytest.mark.parametrize("spe", [3, 101])
@pytest.mark.parametrize(
    "hooks", [ALL_HOOKS, ["on_train_batch_begin", "on_batch_end"]], ids=["all", "on_batch_end"]
)
def test_batch_hook_indices_and_order_as_keras(spe, hooks):
    ours = _calls(phalanx, spe, hooks)
    assert ours == _calls(keras, spe, hooks)
    if spe == 3:
        assert ours[:6] == [
            (hooks[0], 0),
            (hooks[1], 2),
            (hooks[0], 3),
            (hooks[1], 5),
            (hooks[0], 6),
            (hooks[1], 8),
        ]


def test_step_counting_callbacks_count_real_steps_of_a_short_execution(tmp_path):
    """Epochs of 7 steps run by 3 end at index 8: ModelCheckpoint(save_freq=8) saves after the
    8th real step (epoch 2's first execution, index 2), not after epoch 1's 7 ({batch} is the
    index + 1, as Keras)."""
    model = _model(phalanx, 3)
    path = str(tmp_path / "w-{epoch}-{batch}.weights.h5")
    cb = phalanx.callbacks.ModelCheckpoint(path, save_freq=8, save_weights_only=True)
    model.fit(X, Y, batch_size=16, epochs=2, verbose=0, callbacks=[cb])
    assert sorted(os.listdir(tmp_path)) == ["w-2-3.weights.h5"]


def _endless():
    for _ in itertools.count():
        yield X[:8], Y[:8]


def _stopper(lib, flag, hook, after):
    def end(self, batch, logs=None):
        self.batches.append(batch)
        if batch >= after:
            setattr(self.model, flag, True)

    cls = type("Stopper", (lib.callbacks.Callback,), {hook: end})
    cb = cls()
    cb.batches = []
    return cb


@pytest.mark.parametrize("spe", [1, 2])
def test_stop_evaluating_ends_evaluate_on_an_endless_generator_as_keras(spe):
    results = []
    for lib in (phalanx, keras):
        model = _model(lib, spe)
        cb = _stopper(lib, "stop_evaluating", "on_test_batch_end", 3)
        model.evaluate(_endless(), verbose=0, callbacks=[cb])
        results.append((cb.batches, model.stop_evaluating))
    (ours, our_flag), (theirs, their_flag) = results
    assert ours == theirs == ([0, 1, 2, 3] if spe == 1 else [1, 3])
    assert our_flag is their_flag is True
    # the next evaluate starts anew (stop_evaluating reset), also fit's validation
    model = _model(phalanx, spe)
    model.stop_evaluating = True
    first = model.evaluate(X, Y, batch_size=16, verbose=0)
    assert model.stop_evaluating is False
    assert first == model.evaluate(X, Y, batch_size=16, verbose=0)
    one_batch = model.evaluate(X[:16], Y[:16], verbose=0)
    assert first != pytest.approx(one_batch)


@pytest.mark.parametrize("spe", [1, 2])
def test_stop_predicting_ends_predict_on_an_endless_generator_as_keras(spe):
    results = []
    for lib in (phalanx, keras):
        model = _model(lib, spe)
        cb = _stopper(lib, "stop_predicting", "on_predict_batch_end", 2)
        out = model.predict(((x,) for x, _ in _endless()), verbose=0, callbacks=[cb])
        results.append((cb.batches, out.shape))
    assert results[0] == results[1]
    assert results[0][1] == ((3 if spe == 1 else 4) * 8, 1)
