"""Keras 3 files with real Keras (JAX backend): .weights.h5 both ways, .keras models read in."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import KerasFileError  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 8, 6)).astype(np.float32)


def _keras_functional():
    rows = keras.Input((8, 6), name="rows")
    h = keras.layers.Conv1D(6, 3, padding="same", activation="relu")(rows)
    att = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)
    h = keras.layers.LayerNormalization()(keras.layers.Add()([h, att]))
    pooled = keras.layers.GlobalAveragePooling1D()(h)
    hidden = keras.layers.Dense(8, activation="relu")(pooled)
    hidden = keras.layers.BatchNormalization()(keras.layers.Dropout(0.2)(hidden))
    out = keras.layers.Dense(3, activation="softmax")(hidden)
    return keras.Model(rows, out)


def _phalanx_functional():
    rows = phalanx.Input(shape=(8, 6), name="rows")
    h = layers.Conv1D(6, 3, padding="same", activation="relu")(rows)
    att = layers.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)
    h = layers.LayerNormalization()(layers.Add()([h, att]))
    pooled = layers.GlobalAveragePooling1D()(h)
    hidden = layers.Dense(8, activation="relu")(pooled)
    hidden = layers.BatchNormalization()(layers.Dropout(0.2)(hidden))
    out = layers.Dense(3, activation="softmax")(hidden)
    return phalanx.Model(rows, out)


def _trained_keras(model):
    """Random weights everywhere (moving statistics included; variances positive)."""
    model.set_weights([np.abs(RNG.normal(size=w.shape)) * 0.5 + 0.1 for w in model.weights])
    return model


def test_keras_weights_h5_into_phalanx_and_back(tmp_path):
    theirs = _trained_keras(_keras_functional())
    path = str(tmp_path / "m.weights.h5")
    theirs.save_weights(path)
    ours = _phalanx_functional()
    ours.load_weights(path)
    expected = np.asarray(theirs.predict(X, verbose=0))
    np.testing.assert_allclose(ours.predict(X, verbose=0), expected, atol=1e-6)
    # and back: phalanx writes, Keras reads
    ours.get_layer("dense").set_weights([w * 0.5 for w in ours.get_layer("dense").get_weights()])
    back = str(tmp_path / "back.weights.h5")
    ours.save_weights(back)
    fresh = _keras_functional()
    fresh.load_weights(back)
    np.testing.assert_allclose(
        np.asarray(fresh.predict(X, verbose=0)), ours.predict(X, verbose=0), atol=1e-6
    )


def test_sequential_weights_both_ways(tmp_path):
    def keras_model():
        return keras.Sequential(
            [keras.Input((6,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)]
        )

    ours = phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(4, activation="relu"), layers.Dense(2)]
    )
    ours.compile(optimizer="sgd", loss="mse")
    ours.fit(X[:, 0], RNG.normal(size=(16, 2)), batch_size=8, verbose=0)
    path = str(tmp_path / "s.weights.h5")
    ours.save_weights(path)
    theirs = keras_model()
    theirs.load_weights(path)
    np.testing.assert_allclose(
        np.asarray(theirs.predict(X[:, 0], verbose=0)),
        ours.predict(X[:, 0], verbose=0),
        atol=1e-6,
    )


def test_load_a_keras_file(tmp_path):
    theirs = _trained_keras(_keras_functional())
    path = str(tmp_path / "m.keras")
    theirs.save(path)
    model = phalanx.models.load_model(path)
    assert isinstance(model, phalanx.Model)
    np.testing.assert_allclose(
        model.predict(X, verbose=0), np.asarray(theirs.predict(X, verbose=0)), atol=1e-6
    )
    assert [layer.name for layer in model.layers] == [layer.name for layer in theirs.layers]
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    history = model.fit(X, RNG.integers(0, 3, 16), batch_size=8, verbose=0)  # trains in phalanx
    assert np.isfinite(history.history["loss"]).all()

    seq = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, activation="tanh")])
    seq_path = str(tmp_path / "s.keras")
    seq.save(seq_path)
    loaded = phalanx.models.load_model(seq_path)
    assert isinstance(loaded, phalanx.Sequential)
    np.testing.assert_allclose(
        loaded.predict(X[:, 0], verbose=0), np.asarray(seq.predict(X[:, 0], verbose=0)), atol=1e-6
    )


def test_a_lambda_layer_is_refused_and_nothing_runs(tmp_path):
    inputs = keras.Input((3,))
    out = keras.layers.Lambda(lambda t: t * 2.0)(inputs)
    path = str(tmp_path / "lambda.keras")
    keras.Model(inputs, out).save(path)
    with pytest.raises(
        KerasFileError, match="Lambda layer: it runs Python code stored in the file"
    ):
        phalanx.models.load_model(path)


def test_errors_say_what_to_do(tmp_path):
    path = tmp_path / "bad.keras"
    path.write_bytes(b"not a zip")
    with pytest.raises(KerasFileError, match="not a Keras 3 .keras file"):
        phalanx.models.load_model(str(path))
    with pytest.raises(FileNotFoundError):
        phalanx.models.load_model(str(tmp_path / "missing.keras"))
    other = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5)])
    wpath = str(tmp_path / "other.weights.h5")
    other.save_weights(wpath)
    ours = phalanx.Sequential([layers.Input(shape=(6,)), layers.Dense(4)])
    with pytest.raises(KerasFileError, match="layer 'dense'.*shape"):
        ours.load_weights(wpath)
    strided = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2, lora_rank=2)])
    spath = str(tmp_path / "lora.keras")
    strided.save(spath)
    with pytest.raises(KerasFileError, match="lora_rank=2.*does not implement"):
        phalanx.models.load_model(spath)


def test_phalanx_writes_a_keras_file_keras_loads(tmp_path):
    ours = _phalanx_functional()
    ours.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    ours.fit(X, RNG.integers(0, 3, 16), batch_size=8, epochs=2, verbose=0)
    path = str(tmp_path / "ours.keras")
    ours.save(path)
    theirs = keras.models.load_model(path)
    np.testing.assert_allclose(
        np.asarray(theirs.predict(X, verbose=0)), ours.predict(X, verbose=0), atol=1e-6
    )
    back = phalanx.models.load_model(path)  # and phalanx reads its own file back
    np.testing.assert_allclose(back.predict(X, verbose=0), ours.predict(X, verbose=0), atol=1e-6)
    seq = phalanx.Sequential(
        [layers.Input(shape=(6,)), layers.Dense(4, activation="relu"), layers.Dense(2)]
    )
    seq.save(str(tmp_path / "seq.keras"))
    loaded = keras.models.load_model(str(tmp_path / "seq.keras"))
    np.testing.assert_allclose(
        np.asarray(loaded.predict(X[:, 0], verbose=0)), seq.predict(X[:, 0], verbose=0), atol=1e-6
    )
    with pytest.raises(KerasFileError, match="writes Keras 3 .keras files"):
        seq.save(str(tmp_path / "seq.h5"))


def test_a_subclassed_model_is_not_written_as_a_keras_file(tmp_path):
    class Net(phalanx.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

    model = Net()
    model.build((3,))
    with pytest.raises(KerasFileError, match="subclassed model's class is code") as info:
        model.save(str(tmp_path / "net.keras"))
    assert "is a subclassed model (class Net): a .keras file" in str(info.value)
    assert "NetModule" not in str(info.value)  # was "is a Net over NetModule"
    model.save_weights(str(tmp_path / "net.weights.h5"))  # its weights do go to Keras's format
    assert os.path.getsize(tmp_path / "net.weights.h5") > 0
