"""``phalanx.utils.PyDataset`` as Keras 3's ``keras.utils.PyDataset`` (JAX backend), side by side."""

import os

import numpy as np
import pytest

import phalanx
from phalanx import layers

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

RNG = np.random.default_rng(3)
X = RNG.normal(size=(20, 3)).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def _dataset_class(base):
    class Batches(base):
        """5 batches of 4, recording its epoch hooks."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.order = np.arange(5)
            self.calls = []

        def __len__(self):
            return 5

        def __getitem__(self, index):
            i = self.order[index]
            return X[i * 4 : (i + 1) * 4], Y[i * 4 : (i + 1) * 4]

        def on_epoch_begin(self):
            self.calls.append("begin")

        def on_epoch_end(self):
            self.calls.append("end")

    return Batches


@pytest.mark.parametrize("workers", [1, 2])
def test_fit_evaluate_predict_on_a_py_dataset_as_keras(workers):
    ours = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    theirs = keras.Sequential([keras.layers.Input(shape=(3,)), keras.layers.Dense(1)])
    theirs.set_weights([np.array(w) for w in ours.get_weights()])
    runs = []
    for lib, model in ((keras, theirs), (phalanx, ours)):
        model.compile(optimizer=lib.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
        data = _dataset_class(lib.utils.PyDataset)(workers=workers)
        if lib is keras:  # the reference: the same batches as arrays (Keras's own PyDataset
            # fit also reads batch 0 once more first, to build)
            history = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
            other = keras.Sequential([keras.layers.Input(shape=(3,)), keras.layers.Dense(1)])
            other.compile(optimizer="sgd", loss="mse")
            other.fit(data, epochs=2, shuffle=False, verbose=0)
        else:
            history = model.fit(data, epochs=2, shuffle=False, verbose=0).history
        fit_calls = list(data.calls)
        evaluated = model.evaluate(data, verbose=0, return_dict=True)
        predicted = model.predict(data, verbose=0)
        runs.append((history, fit_calls, evaluated, predicted))
    (kh, kcalls, ke, kp), (h, calls, e, p) = runs
    # one pass per epoch; Keras 3 makes one more pass first (begin, end) as fit starts
    assert calls == ["begin", "end", "begin", "end"] == kcalls[-4:]
    for key in kh:
        np.testing.assert_allclose(h[key], kh[key], rtol=1e-5, err_msg=key)
    for key in ke:
        np.testing.assert_allclose(e[key], ke[key], rtol=1e-5, err_msg=key)
    np.testing.assert_allclose(p, kp, rtol=1e-5)


def test_py_dataset_of_bare_inputs_predicts_as_keras():
    class Inputs(phalanx.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return X[index * 4 : (index + 1) * 4]

    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    assert model.predict(Inputs(), verbose=0).shape == (8, 1)
    assert Inputs().num_batches == 2
    assert Inputs().workers == 1 and keras.utils.PyDataset().workers == 1


def test_use_multiprocessing_is_refused_naming_itself():
    data = _dataset_class(phalanx.utils.PyDataset)(use_multiprocessing=True)
    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"use_multiprocessing=True\): phalanx reads"):
        model.fit(data, verbose=0)


def test_fit_shuffles_a_py_datasets_batches_each_epoch_as_keras():
    """Keras's PyDatasetAdapter shuffles the batches' order (fit's shuffle=True)."""
    seen = []

    class Indexed(phalanx.utils.PyDataset):
        def __len__(self):
            return 5

        def __getitem__(self, index):
            seen.append(index)
            return X[index * 4 : (index + 1) * 4], Y[index * 4 : (index + 1) * 4]

    model = phalanx.Sequential([layers.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(Indexed(), epochs=3, verbose=0)
    epochs = [seen[i : i + 5] for i in range(0, 15, 5)]
    assert all(sorted(e) == [0, 1, 2, 3, 4] for e in epochs)
    assert any(e != [0, 1, 2, 3, 4] for e in epochs)
    seen.clear()
    model.fit(Indexed(), epochs=1, shuffle=False, verbose=0)
    assert seen == [0, 1, 2, 3, 4]
