"""``layers.TextVectorization`` (and ``StringLookup``'s ``tf_idf``) against Keras 3.

Keras 3's TextVectorization and StringLookup need TensorFlow (not a test dependency):
the cases are keras/src/layers/preprocessing/text_vectorization_test.py (v3.15)
translated one by one, with Keras's expected values; the TF-IDF weights of ``adapt``
are Keras's formula ``log(1 + documents / (1 + document frequency))``, worked by hand.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import LayerArgumentError

TextVectorization = layers.TextVectorization
DATA = [["foo qux bar"], ["qux baz"]]
EXPECTED = [[4, 1, 3, 0], [1, 2, 0, 0]]


def test_config():
    layer = TextVectorization(
        output_mode="int", vocabulary=["one", "two"], output_sequence_length=5
    )
    config = layer.get_config()
    assert config["vocabulary"] == ["one", "two"] and config["vocabulary_size"] == 4
    again = TextVectorization.from_config(config)
    assert again.get_config() == config
    assert (
        again(["one three two"]).tolist() == layer(["one three two"]).tolist() == [[2, 1, 3, 0, 0]]
    )
    ngrams = TextVectorization(ngrams=(1, 2), vocabulary=["a"])
    assert TextVectorization.from_config(ngrams.get_config()).ngrams == (1, 2)


def test_adapt_flow_and_fixed_and_set_vocabulary():
    adapted = TextVectorization(max_tokens=5000, output_mode="int", output_sequence_length=4)
    adapted.adapt(["foo bar", "bar baz", "baz bada boom"])
    assert adapted(DATA).tolist() == EXPECTED
    assert "foo" in adapted.get_vocabulary()
    fixed = TextVectorization(
        max_tokens=5000, output_sequence_length=4, vocabulary=["baz", "bar", "foo"]
    )
    assert fixed(DATA).tolist() == EXPECTED
    later = TextVectorization(max_tokens=5000, output_sequence_length=4)
    later.set_vocabulary(["baz", "bar", "foo"])
    out = later(DATA)
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.tolist() == EXPECTED


def test_adapt_with_generators_steps_and_datasets():
    def text_gen():
        yield ["hello world", "foo bar"]
        yield ["baz qux", "hello foo"]

    layer = TextVectorization()
    layer.adapt(text_gen())
    assert {"hello", "foo"} <= set(layer.get_vocabulary())

    def forever():
        while True:
            yield ["hello world", "foo bar"]

    layer = TextVectorization()
    layer.adapt(forever(), steps=3)
    assert "hello" in layer.get_vocabulary()
    # Keras's tf.data cases, with a phalanx Dataset.
    ds = phalanx.data.Dataset.from_tensor_slices(["foo bar", "bar baz", "baz foo"]).batch(2)
    layer = TextVectorization(output_mode="int")
    layer.adapt(ds)
    assert {"foo", "bar", "baz"} <= set(layer.get_vocabulary())
    ds = phalanx.data.Dataset.from_tensor_slices(["foo bar", "bar baz", "unique_word"]).batch(1)
    layer = TextVectorization(output_mode="int")
    layer.adapt(ds, steps=2)
    assert "bar" in layer.get_vocabulary() and "unique_word" not in layer.get_vocabulary()


def test_dataset_map_compatibility():
    layer = TextVectorization(
        max_tokens=5000, output_sequence_length=4, vocabulary=["baz", "bar", "foo"]
    )
    ds = phalanx.data.Dataset.from_tensor_slices(DATA).batch(2).map(layer)
    assert next(iter(ds)).tolist() == EXPECTED
    adapted = TextVectorization(max_tokens=5000, output_sequence_length=4)
    adapted.adapt(DATA)
    for split, data in (("whitespace", DATA), (None, [["foo"], ["baz"]])):
        static = TextVectorization(
            output_sequence_length=4, split=split, vocabulary=["baz", "bar", "foo"]
        )
        (batch,) = phalanx.data.Dataset.from_tensor_slices(data).batch(2).map(static)
        assert batch.shape == (2, 4)
    assert static([["foo"], ["baz"]]).tolist() == [[4, 0, 0, 0], [2, 0, 0, 0]]


def test_ragged_output_is_phalanx_ragged_tensor():
    # Keras 3 makes a tf.RaggedTensor on TensorFlow (and refuses ragged=True on JAX).
    layer = TextVectorization(vocabulary=["baz", "bar", "foo"], ragged=True)
    out = layer([["foo qux bar"], ["qux baz"], ["foo"]])
    assert isinstance(out, phalanx.io.RaggedTensor) and out.shape == (3, None)
    assert out.to_list() == [[4, 1, 3], [1, 2], [4]]
    cut = TextVectorization(vocabulary=["baz", "bar", "foo"], ragged=True, output_sequence_length=2)
    assert cut([["foo qux bar"], ["qux baz"], ["foo"]]).to_list() == [[4, 1], [1, 2], [4]]
    with pytest.raises(LayerArgumentError, match="`ragged` must not be true"):
        TextVectorization(output_mode="count", ragged=True)


def test_multi_hot_count_and_tf_idf_outputs():
    multi = TextVectorization(output_mode="multi_hot", vocabulary=["foo", "bar", "baz"])
    assert multi([["foo bar"], ["baz foo foo"]]).tolist() == [[0, 1, 1, 0], [0, 1, 0, 1]]
    count = TextVectorization(output_mode="count", vocabulary=["foo", "bar", "baz"])
    out = count(["foo bar", "baz foo foo"])
    assert out.dtype == np.float32 and out.tolist() == [[0, 1, 1, 0], [0, 2, 0, 1]]
    tf_idf = TextVectorization(
        output_mode="tf_idf", vocabulary=["foo", "bar", "baz"], idf_weights=[0.3, 0.5, 0.2]
    )
    np.testing.assert_allclose(
        tf_idf(["foo bar", "baz foo foo"]), [[0.0, 0.3, 0.5, 0.0], [0.0, 0.6, 0.0, 0.2]]
    )
    with pytest.raises(LayerArgumentError, match="`idf_weights` argument must also be provided"):
        TextVectorization(output_mode="tf_idf", vocabulary=["foo"])


def test_adapted_tf_idf_weights_are_keras_formula():
    layer = TextVectorization(output_mode="tf_idf")
    layer.adapt(np.array(["foo bar", "bar baz", "baz bada boom"]))
    assert layer.get_vocabulary() == ["[UNK]", "baz", "bar", "foo", "boom", "bada"]
    idf = [np.log(2.0)] * 2 + [np.log(2.5)] * 3
    weights = layer._lookup_layer.idf_weights
    np.testing.assert_allclose(weights, [np.mean(idf), *idf], rtol=1e-6)
    np.testing.assert_allclose(layer(["bar foo foo"]), [[0, 0, np.log(2.0), 2 * np.log(2.5), 0, 0]])
    padded = TextVectorization(output_mode="tf_idf", max_tokens=8, pad_to_max_tokens=True)
    padded.adapt(["foo bar", "bar baz", "baz bada boom"])
    assert padded(["foo"]).shape == (1, 8)


def test_standardizations():
    lower_strip = TextVectorization(vocabulary=["hello", "world", "this", "is", "nice", "test"])
    out = lower_strip(["Hello, World!. This is just a nice test!"])
    assert len(out[0]) == 8 and out.tolist() == [[2, 3, 4, 5, 1, 1, 6, 7]]
    lower = TextVectorization(
        standardize="lower",
        vocabulary=["hello,", "hello", "world", "this", "is", "nice", "test"],
    )
    assert lower(["Hello, World!. This is just a nice test!"]).tolist() == [
        [2, 1, 5, 6, 1, 1, 7, 1]
    ]
    strip = TextVectorization(
        standardize="strip_punctuation", vocabulary=["Hello", "World", "Test"]
    )
    assert strip(["Hello, World! Test."]).tolist() == [[2, 3, 4]]
    raw = TextVectorization(standardize=None, vocabulary=["Hello", "world"])
    assert raw(["Hello hello"]).tolist() == [[2, 1]]
    # tf.strings.lower lowercases ASCII only.
    assert TextVectorization(standardize="lower", vocabulary=["école"])(
        ["École école"]
    ).tolist() == [[1, 2]]


def test_custom_standardize_and_split_callables():
    dashes = TextVectorization(
        standardize=lambda t: np.char.replace(t, "-", " "), vocabulary=["foo", "bar"]
    )
    assert dashes(["foo-bar"]).tolist() == [[2, 3]]
    seen = []

    def np_standardize(text):
        seen.append((type(text), text.dtype.kind))
        return np.char.replace(np.char.lower(text), ",", "")

    layer = TextVectorization(standardize=np_standardize)
    layer.adapt(["Hello, world."])
    assert seen and all(s == (np.ndarray, "U") for s in seen)
    assert {"hello", "world."} <= set(layer.get_vocabulary())
    pipes = TextVectorization(
        split=lambda t: np.char.split(t, "|"), vocabulary=["foo", "bar", "foobar"]
    )
    # Keras's case: standardize strips the "|" first, so "foobar" is one token.
    assert pipes(["foo|bar"]).tolist() == [[4]]
    kept = TextVectorization(
        standardize=None, split=lambda t: [s.split("|") for s in t], vocabulary=["foo", "bar"]
    )
    assert kept(["foo|bar|x"]).tolist() == [[2, 3, 1]]


def test_char_and_no_splitting():
    chars = TextVectorization(split="character", vocabulary=list("abcde"))
    assert chars(["abcf"]).tolist() == [[2, 3, 4, 1]]
    whole = TextVectorization(split=None, vocabulary=["foo", "bar", "baz"])
    assert whole([["foo"], ["bar"], ["unknown"]]).tolist() == [[2], [3], [1]]
    with pytest.raises(LayerArgumentError, match="the last shape dimension must be 1"):
        whole.split = "whitespace"
        whole([["a", "b"]])


def test_ngrams_max_tokens_and_padding():
    bigrams = TextVectorization(ngrams=2)
    bigrams.adapt(["foo bar baz"])
    assert {"foo bar", "bar baz"} <= set(bigrams.get_vocabulary())
    widths = TextVectorization(ngrams=(1, 3))
    widths.adapt(["foo bar baz"])
    vocab = widths.get_vocabulary()
    assert "foo" in vocab and "foo bar baz" in vocab and "foo bar" not in vocab
    # tf.strings.ngrams: all the 1-grams, then the 2-grams.
    ordered = TextVectorization(ngrams=2, vocabulary=["a", "b", "a b"])
    assert ordered(["a b"]).tolist() == [[2, 3, 4]]
    # TF's string_ngrams_op_test test_multi_ngram_ordering: widths in the order given.
    grams = ["aa bb", "bb cc", "cc dd", "aa bb cc", "bb cc dd"]
    tf_case = TextVectorization(ngrams=(3, 2), vocabulary=grams)
    assert tf_case(["aa bb cc dd", "ee ff"]).tolist() == [[5, 6, 2, 3, 4], [1, 0, 0, 0, 0]]
    limited = TextVectorization(max_tokens=5)
    limited.adapt(["a b c d e f g h i j"])
    assert len(limited.get_vocabulary()) == 5
    padded = TextVectorization(
        output_mode="multi_hot", vocabulary=["foo", "bar"], max_tokens=8, pad_to_max_tokens=True
    )
    assert padded(["foo bar"]).shape[-1] == 8


def test_vocabulary_accessors_and_file():
    layer = TextVectorization(vocabulary=["foo", "bar", "baz"])
    vocab = layer.get_vocabulary()
    assert vocab[:2] == ["", "[UNK]"] and {"foo", "bar", "baz"} <= set(vocab)
    assert layer.get_vocabulary(include_special_tokens=False) == ["foo", "bar", "baz"]
    assert layer.vocabulary_size() == 5
    with phalanx.io.gfile.GFile("memory://textvec/vocab.txt", "wb") as f:
        f.write(b"foo\nbar\nbaz\n")
    from_file = TextVectorization(vocabulary="memory://textvec/vocab.txt")
    assert from_file(["foo bar baz unknown"]).tolist() == [[2, 3, 4, 1]]
    assert from_file.get_config()["vocabulary"] is None  # Keras keeps a file's tokens as an asset
    with pytest.raises(LayerArgumentError, match="does not exist"):
        TextVectorization(vocabulary="memory://textvec/none.txt")


def test_unsupported_and_invalid_arguments():
    with pytest.raises(LayerArgumentError, match="ngrams"):
        TextVectorization(ngrams="invalid")
    with pytest.raises(
        LayerArgumentError, match="`output_sequence_length` must not be set if `output_mode` is not"
    ):
        TextVectorization(output_mode="multi_hot", output_sequence_length=5)
    with pytest.raises(LayerArgumentError, match="sparse=True"):
        TextVectorization(output_mode="multi_hot", vocabulary=["foo"], sparse=True)
    with pytest.raises(LayerArgumentError, match="one_hot"):
        TextVectorization(output_mode="one_hot")
    with pytest.raises(LayerArgumentError, match="standardize"):
        TextVectorization(standardize="upper")
    with pytest.raises(LayerArgumentError, match="static vocabulary"):
        TextVectorization(vocabulary=["a"]).adapt(["a b"])
    with pytest.raises(LayerArgumentError, match="input pipeline"):
        jax.jit(lambda a: TextVectorization(vocabulary=["a"])(a))(jnp.ones(2))
    with pytest.raises(LayerArgumentError, match='dtype float32. Give it Input.*dtype="string"'):
        TextVectorization(vocabulary=["a"])(phalanx.Input((1,)))
    with pytest.raises(LayerArgumentError, match="IntegerLookup takes integers"):
        layers.IntegerLookup(vocabulary=[1])(phalanx.Input((1,), dtype="string"))
    ids = TextVectorization(vocabulary=["a"], output_sequence_length=3)(
        phalanx.Input((1,), dtype="string")
    )
    assert ids.shape == (None, 3) and ids.dtype == np.int64  # Keras's compute_output_spec


def test_string_lookup_tf_idf_and_pad_to_max_tokens():
    # The same mechanism: StringLookup(output_mode="tf_idf") as Keras's StringLookup docs.
    lookup = layers.StringLookup(
        output_mode="tf_idf", vocabulary=["a", "b", "c", "d"], idf_weights=[0.25, 0.75, 0.6, 0.4]
    )
    data = np.array([["a", "c", "d", "d"], ["d", "z", "b", "z"]])
    np.testing.assert_allclose(
        lookup(data), [[0, 0.25, 0, 0.6, 0.8], [1.0, 0, 0.75, 0, 0.4]], rtol=1e-6
    )
    padded = layers.StringLookup(
        output_mode="multi_hot", vocabulary=["a", "b"], max_tokens=6, pad_to_max_tokens=True
    )
    assert padded(np.array([["a", "z"]])).tolist() == [[1, 1, 0, 0, 0, 0]]
    masked = layers.StringLookup(vocabulary=["a", "b"], mask_token="", output_mode="count")
    assert masked.get_vocabulary() == ["[UNK]", "a", "b"]  # Keras: no mask index outside "int"
    assert masked(np.array([["a", "", "a"]])).tolist() == [[0, 2, 0]]


def test_keras_saving_hooks_write_keras_vocabulary_asset(tmp_path):
    # Keras's IndexLookup.save_assets: "\n".join of the vocabulary, special tokens first,
    # at <layer>/vocabulary.txt; the tf_idf weights as the variable "idf_weights".
    layer = TextVectorization(output_mode="tf_idf", max_tokens=10)
    layer.adapt(["foo bar", "bar baz", "baz bada boom"])
    store: dict = {}
    layer.save_own_variables(store)
    layer.save_assets(str(tmp_path / "tv"))
    text = (tmp_path / "tv" / "vocabulary.txt").read_text()
    assert text == "\n".join(["[UNK]", "baz", "bar", "foo", "boom", "bada"])
    np.testing.assert_allclose(store["idf_weights"], layer._lookup_layer.idf_weights)
    again = TextVectorization.from_config(layer.get_config())
    again.load_own_variables(store)
    again.load_assets(str(tmp_path / "tv"))
    data = ["foo bar bar qux", "boom"]
    np.testing.assert_allclose(again(data), layer(data))
    ints = TextVectorization(output_sequence_length=3)
    ints.adapt(["a b b", "c"])
    ints.save_assets("memory://textvec/assets")
    restored = TextVectorization.from_config(ints.get_config())
    restored.load_assets("memory://textvec/assets")
    assert restored.get_vocabulary() == ints.get_vocabulary() == ["", "[UNK]", "b", "c", "a"]
    given = TextVectorization(vocabulary=["x"])  # a given list lives in the config
    given.save_assets(str(tmp_path / "given"))
    assert not (tmp_path / "given").exists()


def test_a_model_holding_the_layer_names_the_input_pipeline():
    # Keras 3 on JAX cannot run it inside a model either (its test is TensorFlow-only).
    vectorize = TextVectorization(vocabulary=["baz", "bar", "foo"], output_sequence_length=3)
    model = phalanx.Sequential([vectorize, layers.Embedding(5, 4)])
    with pytest.raises(LayerArgumentError, match=r"dataset.map\(layer\)"):
        model(np.array([["foo qux bar"], ["qux baz"]]))


def test_keras_configs_of_the_lookups_are_read():
    # Keras 3.15's StringLookup/IntegerLookup get_config keys (index_lookup.py), as a
    # Keras-written .keras file holds them.
    keras_string = {
        "name": "string_lookup", "trainable": True, "dtype": None, "invert": False,
        "max_tokens": None, "num_oov_indices": 1, "oov_token": "[UNK]", "mask_token": None,
        "output_mode": "int", "sparse": False, "pad_to_max_tokens": False,
        "idf_weights": None, "vocabulary": ["a", "b"], "vocabulary_size": 3,
        "oov_method": "floormod", "salt": None, "encoding": "utf-8",
    }  # fmt: skip
    lookup = layers.StringLookup.from_config(keras_string)
    assert lookup(np.array(["b", "q"])).tolist() == [2, 0]
    assert set(keras_string) <= set(lookup.get_config())
    keras_int = dict(keras_string, vocabulary=[7, 9], oov_token=-1, vocabulary_dtype="int64")
    del keras_int["encoding"]
    ints = layers.IntegerLookup.from_config(keras_int)
    assert ints(np.array([9, 1])).tolist() == [2, 0]
    with pytest.raises(LayerArgumentError, match="`salt` can only be used"):
        layers.IntegerLookup(salt=3)
    config = TextVectorization(vocabulary=["a"]).get_config()
    keras_keys = {
        "name", "trainable", "dtype", "max_tokens", "standardize", "split", "ngrams",
        "output_mode", "output_sequence_length", "pad_to_max_tokens", "sparse", "ragged",
        "vocabulary", "idf_weights", "encoding", "vocabulary_size",
    }  # fmt: skip
    assert set(config) == keras_keys


def test_fit_on_a_dataset_mapped_through_the_layer():
    # keras-io's text classification shape: vectorize in the pipeline, the model sees ids.
    texts = ["good movie", "bad movie", "great film", "awful film"] * 2
    labels = np.array([1, 0, 1, 0] * 2, np.float32)
    vectorize = TextVectorization(max_tokens=20, output_sequence_length=3)
    vectorize.adapt(texts)
    ds = phalanx.data.Dataset.from_tensor_slices((texts, labels)).batch(4)
    ds = ds.map(lambda x, y: (vectorize(x), y))
    ids, _ = next(iter(ds))
    assert ids.tolist() == [[5, 2, 0], [6, 2, 0], [4, 3, 0], [7, 3, 0]]
    model = phalanx.Sequential(
        [
            layers.Input((3,)),
            layers.Embedding(20, 4),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1),
        ]
    )
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(ds, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_one_string_gives_one_row_as_unbatched_tf_data():
    # text_ds.map(vectorize) before batch: each element is one string (Keras: 1-D output).
    layer = TextVectorization(vocabulary=["baz", "bar", "foo"], output_sequence_length=4)
    assert layer("foo qux bar").tolist() == [4, 1, 3, 0]
    (first, second) = phalanx.data.Dataset.from_tensor_slices(["foo qux bar", "baz"]).map(layer)
    assert first.tolist() == [4, 1, 3, 0] and second.tolist() == [2, 0, 0, 0]
    counts = TextVectorization(vocabulary=["baz", "bar", "foo"], output_mode="count")
    assert counts("foo foo baz").tolist() == [0, 1, 0, 2]
    ragged = TextVectorization(vocabulary=["baz", "bar", "foo"], ragged=True)
    assert ragged("foo qux").tolist() == [4, 1]


def test_string_lookup_on_a_ragged_tensor():
    # Keras's StringLookup maps a RaggedTensor's values (tf.ragged.map_flat_values).
    ragged = phalanx.io.RaggedTensor.from_row_lengths(np.array([b"a", b"q", b"b"]), [2, 0, 1])
    lookup = layers.StringLookup(vocabulary=["a", "b"])
    out = lookup(ragged)
    assert isinstance(out, phalanx.io.RaggedTensor) and out.to_list() == [[1, 0], [], [2]]
    counts = layers.StringLookup(vocabulary=["a", "b"], output_mode="count")
    assert counts(ragged).tolist() == [[1, 1, 0], [0, 0, 0], [0, 0, 1]]
    inverse = layers.StringLookup(vocabulary=["a", "b"], invert=True)
    assert inverse(out).to_list() == [[b"a", b"[UNK]"], [], [b"b"]]
