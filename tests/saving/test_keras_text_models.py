"""``.keras`` files of models holding a ``TextVectorization`` or a ``StringLookup``: the
adapted vocabulary travels in ``assets/`` as Keras 3 writes it (``save_assets``), the IDF
weights in ``model.weights.h5`` (``save_own_variables``).

Keras 3's lookup layers need TensorFlow (not a test dependency), so the Keras-written file
is Keras's own save of the numeric layers with the TextVectorization entry, its
``vocabulary.txt`` and its paths put in as Keras's saver writes them
(``saving_lib._save_state``: ``assets/layers/<key>/`` and again under ``_lookup_layer/``).
"""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")
pytest.importorskip("h5py")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import FitInputError, KerasFileError, LayerArgumentError  # noqa: E402

DOCS = ["the cat sat", "the dog sat", "the cat ran"]
TEXTS = np.array([["the cat"], ["a dog ran"], ["sat sat the"]])


def _text_model(mode="int"):
    vectorize = layers.TextVectorization(
        max_tokens=8, output_mode=mode, output_sequence_length=4 if mode == "int" else None
    )
    vectorize.adapt(DOCS)
    x = layers.Input(shape=(1,), dtype="string")
    ids = vectorize(x)
    if mode == "int":
        y = layers.Dense(2)(layers.GlobalAveragePooling1D()(layers.Embedding(8, 3)(ids)))
    else:
        y = layers.Dense(2)(ids)
    return phalanx.Model(x, y), vectorize


@pytest.mark.parametrize("mode", ["int", "tf_idf"])
def test_adapted_text_vectorization_round_trips(tmp_path, mode):
    model, vectorize = _text_model(mode)
    path = tmp_path / "m.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        vocabulary = archive.read("assets/layers/text_vectorization/vocabulary.txt")
        again = archive.read("assets/layers/text_vectorization/_lookup_layer/vocabulary.txt")
    # Keras's save_assets: the mask "" ("int" only) and the OOV token first, then adapt's
    # order (count, then token, descending).
    head = b"\n" if mode == "int" else b""
    assert vocabulary == again == head + b"[UNK]\nthe\nsat\ncat\nran\ndog"
    loaded = phalanx.models.load_model(path)
    text = loaded.layers[1]
    assert isinstance(text, layers.TextVectorization)
    assert text.get_vocabulary() == vectorize.get_vocabulary()
    np.testing.assert_array_equal(text(TEXTS), vectorize(TEXTS))
    if mode == "tf_idf":
        np.testing.assert_allclose(
            text._lookup_layer.idf_weights, vectorize._lookup_layer.idf_weights
        )
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises((LayerArgumentError, FitInputError)):
        loaded.predict(TEXTS, verbose=0)  # as before: the layer runs in the input pipeline


def test_adapted_string_lookup_with_oov_buckets_round_trips(tmp_path):
    lookup = layers.StringLookup(num_oov_indices=2, output_mode="multi_hot")
    lookup.adapt(np.array([["a", "b", "b"], ["c", "b", "a"]]))
    model = phalanx.Sequential([layers.Input(shape=(3,), dtype="string"), lookup, layers.Dense(1)])
    path = tmp_path / "s.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        assert archive.read("assets/layers/string_lookup/vocabulary.txt") == (
            b"[UNK]\n[UNK]\nb\na\nc"
        )
        config = json.loads(archive.read("config.json"))
    assert config["config"]["layers"][0]["config"]["dtype"] == "string"
    loaded = phalanx.models.load_model(path).layers[0]
    words = np.array([["a", "m", "z"], ["c", "z", "c"]])  # m, z: OOV buckets 0 and 1
    assert loaded(words).tolist() == lookup(words).tolist() == [[1, 1, 0, 1, 0], [0, 1, 0, 0, 1]]


def test_missing_vocabulary_is_named(tmp_path):
    model, _ = _text_model()
    path = tmp_path / "m.keras"
    model.save(path)
    stripped = tmp_path / "stripped.keras"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(stripped, "w") as dst:
        for name in src.namelist():
            if not name.startswith("assets/"):
                dst.writestr(name, src.read(name))
    with pytest.raises(KerasFileError, match="vocabulary.txt.*was adapted"):
        phalanx.models.load_model(stripped)


def test_keras_written_text_vectorization_model_loads(tmp_path):
    # Keras writes the model after the layer: ids of length 4 -> Embedding -> Dense.
    keras.utils.set_random_seed(0)
    head = keras.Sequential(
        [
            keras.Input(shape=(4,), dtype="int64"),
            keras.layers.Embedding(7, 3),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(2),
        ]
    )
    written = tmp_path / "keras.keras"
    head.save(written)
    # The TextVectorization entry as Keras 3's get_config writes an adapted layer, and
    # its vocabulary as Keras's save_assets (adapt's order: count, then token, descending).
    text = {
        "module": "keras.layers",
        "class_name": "TextVectorization",
        "config": {
            "name": "text_vectorization",
            "trainable": True,
            "dtype": {
                "module": "keras",
                "class_name": "DTypePolicy",
                "config": {"name": "float32"},
                "registered_name": None,
            },
            "max_tokens": 7,
            "standardize": "lower_and_strip_punctuation",
            "split": "whitespace",
            "ngrams": None,
            "output_mode": "int",
            "output_sequence_length": 4,
            "pad_to_max_tokens": False,
            "sparse": False,
            "ragged": False,
            "vocabulary": None,
            "idf_weights": None,
            "encoding": "utf-8",
            "vocabulary_size": 7,
        },
        "registered_name": None,
        "build_config": {"input_shape": [None, 1]},
    }
    vocabulary = "\n".join(["", "[UNK]", "the", "sat", "cat", "ran", "dog"])
    path = tmp_path / "text.keras"
    with zipfile.ZipFile(written) as src, zipfile.ZipFile(path, "w") as dst:
        config = json.loads(src.read("config.json"))
        entries = config["config"]["layers"]
        assert entries[0]["class_name"] == "InputLayer"
        entries[0]["config"].update(batch_shape=[None, 1], dtype="string")
        entries.insert(1, text)
        dst.writestr("config.json", json.dumps(config))
        for name in src.namelist():
            if name != "config.json":
                dst.writestr(name, src.read(name))
        for sub in ("", "_lookup_layer/"):
            dst.writestr(f"assets/layers/text_vectorization/{sub}vocabulary.txt", vocabulary)
    loaded = phalanx.models.load_model(path)
    ids = loaded.layers[0](np.array([["The cat, sat!"], ["a dog"]]))
    assert ids.tolist() == [[2, 4, 3, 0], [1, 6, 0, 0]]
    for got, want in zip(loaded.get_weights(), head.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    # The numeric layers compute Keras's outputs from the ids.
    tail = phalanx.Sequential([layers.Input(shape=(4,), dtype="int32"), *loaded.layers[1:]])
    np.testing.assert_allclose(
        tail.predict(ids, verbose=0), head.predict(ids, verbose=0), atol=1e-6
    )
