"""``StringLookup``/``IntegerLookup`` with several OOV indices, against Keras 3.

Keras 3's lookup layers need TensorFlow (not a test dependency): the buckets are the
values of Keras's docstrings and tests (``string_lookup.py``, ``integer_lookup.py``,
``integer_lookup_test.py``: ``tf.strings.to_hash_bucket_fast`` computed by TensorFlow),
and the other modes follow Keras's index layout from them.
"""

from __future__ import annotations

import numpy as np
import pytest

from phalanx import layers
from phalanx.errors import LayerArgumentError

VOCAB = ["a", "b", "c", "d"]


def test_string_buckets_as_keras_docs():
    # keras.layers.StringLookup's docstring: "m" hashes to OOV index 0, "z" to 1.
    layer = layers.StringLookup(vocabulary=VOCAB, num_oov_indices=2)
    assert layer([["a", "c", "d"], ["m", "z", "b"]]).tolist() == [[2, 4, 5], [0, 1, 3]]
    assert layer.get_vocabulary() == ["[UNK]", "[UNK]", "a", "b", "c", "d"]
    assert layer.get_vocabulary(include_special_tokens=False) == VOCAB
    assert layer.vocabulary_size() == 6
    masked = layers.StringLookup(vocabulary=VOCAB, num_oov_indices=2, mask_token="")
    assert masked([["", "m", "z", "a"]]).tolist() == [[0, 1, 2, 3]]  # OOV after the mask
    assert masked.get_vocabulary()[:3] == ["", "[UNK]", "[UNK]"]


def test_integer_buckets_as_keras():
    # IntegerLookup's docstring (floormod: 37 % 2, 1000 % 2) and its farmhash cases.
    floormod = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], num_oov_indices=2)
    data = np.array([[12, 1138, 42], [37, 1000, 36]])
    assert floormod(data).tolist() == [[2, 4, 5], [1, 0, 3]]
    farm = layers.IntegerLookup(vocabulary=[10, 20, 30], num_oov_indices=4, oov_method="farmhash")
    assert farm(np.array([100, 300, 700, 1100, 1700, 2000])).tolist() == [3, 3, 2, 2, 0, 1]
    assert farm(np.array([100, 200, 300, 400])).tolist() == [3, 1, 3, 1]
    floor4 = layers.IntegerLookup(vocabulary=[10, 20, 30], num_oov_indices=4)
    assert floor4(np.array([100, 300, 700, 1100, 1700, 2000])).tolist() == [0] * 6
    assert floor4(np.array([-1, -3])).tolist() == [3, 1]  # tf.math.floormod's sign


def test_salt_gives_siphash_buckets():
    salted = layers.IntegerLookup(
        vocabulary=[10, 20, 30], num_oov_indices=4, oov_method="farmhash", salt=[137, 42]
    )
    plain = layers.IntegerLookup(vocabulary=[10, 20, 30], num_oov_indices=4, oov_method="farmhash")
    oov = np.array([100, 300, 700, 1100, 1700, 2000])
    assert salted(oov).tolist() != plain(oov).tolist()  # Keras's test_salt_siphash
    words = ["x", "y", "z", "w", "v", "u"]
    s_salted = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=4, salt=[137, 42])
    s_plain = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=4)
    assert s_salted(words).tolist() != s_plain(words).tolist()
    # One int s is the key (s, s), the Hashing layer's SipHash (checked there against Keras).
    single = layers.StringLookup(vocabulary=["q"], num_oov_indices=3, salt=133)
    hashed = layers.Hashing(num_bins=3, salt=133)(np.array(["A", "B", "C", "D", "E"]))
    assert single(["A", "B", "C", "D", "E"]).tolist() == hashed.tolist() == [0, 0, 2, 1, 0]
    with pytest.raises(LayerArgumentError, match="oov_method='farmhash'"):
        layers.IntegerLookup(num_oov_indices=2, salt=1)
    with pytest.raises(LayerArgumentError, match="greater than or equal to 0"):
        layers.StringLookup(num_oov_indices=-1)


def test_encoded_modes_count_each_bucket():
    words = [["a", "m", "z", "z"], ["d", "m", "b", "c"]]  # m -> 0, z -> 1 (above)
    kwargs = {"vocabulary": VOCAB, "num_oov_indices": 2}
    one_hot = layers.StringLookup(output_mode="one_hot", **kwargs)(["a", "m", "z"])
    assert one_hot.tolist() == np.eye(6)[[2, 0, 1]].tolist()
    multi = layers.StringLookup(output_mode="multi_hot", **kwargs)(words)
    assert multi.tolist() == [[1, 1, 1, 0, 0, 0], [1, 0, 0, 1, 1, 1]]
    count = layers.StringLookup(output_mode="count", **kwargs)(words)
    assert count.tolist() == [[1, 2, 1, 0, 0, 0], [1, 0, 0, 1, 1, 1]]
    idf = [0.5, 1.0, 1.5, 2.0]
    tf_idf = layers.StringLookup(output_mode="tf_idf", idf_weights=idf, **kwargs)
    # Keras: the OOV slots take the mean of the given weights.
    np.testing.assert_allclose(tf_idf.idf_weights, [1.25, 1.25, *idf])
    np.testing.assert_allclose(tf_idf(words), [[1.25, 2.5, 0.5, 0, 0, 0], [1.25, 0, 0, 1, 1.5, 2]])
    padded = layers.StringLookup(
        output_mode="multi_hot", max_tokens=8, pad_to_max_tokens=True, **kwargs
    )(words)
    assert padded.shape == (2, 8) and padded[:, 6:].sum() == 0
    ints = layers.IntegerLookup(vocabulary=[12, 36], num_oov_indices=3, output_mode="count")
    # 9 % 3, 7 % 3, 5 % 3 and 8 % 3: OOV indices 0, 1, 2, 2.
    assert ints(np.array([[12, 9, 7, 5, 8]])).tolist() == [[1, 1, 2, 1, 0]]


def test_adapt_keeps_room_for_the_buckets_and_invert():
    layer = layers.StringLookup(num_oov_indices=3, max_tokens=5)
    layer.adapt(np.array([["a", "a", "b", "b", "b", "c"]]))
    assert layer.get_vocabulary() == ["[UNK]"] * 3 + ["b", "a"]
    adapted = layers.StringLookup(num_oov_indices=2, output_mode="tf_idf")
    adapted.adapt([["a", "b"], ["a", "a"]])
    weights = np.log(1 + 2 / (1 + np.array([2.0, 1.0])))  # a in 2 documents, b in 1
    np.testing.assert_allclose(adapted.idf_weights, [weights.mean()] * 2 + weights.tolist(), 1e-6)
    inverse = layers.StringLookup(vocabulary=VOCAB, num_oov_indices=2, invert=True)
    assert inverse(np.array([[0, 1, 2, 5, 9]])).tolist() == [
        [b"[UNK]", b"[UNK]", b"a", b"d", b"[UNK]"]
    ]
    int_inverse = layers.IntegerLookup(vocabulary=[12, 36], num_oov_indices=2, invert=True)
    assert int_inverse(np.array([0, 1, 2, 3, 4])).tolist() == [-1, -1, 12, 36, -1]
    # The vocabulary given with its special tokens at the head (get_vocabulary's).
    again = layers.StringLookup(num_oov_indices=2, vocabulary=inverse.get_vocabulary())
    assert again.get_vocabulary() == inverse.get_vocabulary()


def test_config_round_trip_keeps_buckets():
    layer = layers.IntegerLookup(
        vocabulary=[1, 2, 3], num_oov_indices=2, oov_method="farmhash", salt=[137, 42], name="ids"
    )
    config = layer.get_config()
    assert config["num_oov_indices"] == 2 and config["salt"] == [137, 42]
    assert config["oov_method"] == "farmhash" and config["vocabulary_size"] == 5
    again = layers.IntegerLookup.from_config(config)
    data = np.array([1, 100, 200, 300, 400, 3])
    assert again(data).tolist() == layer(data).tolist()
    assert again.get_config() == config
    strings = layers.StringLookup(vocabulary=VOCAB, num_oov_indices=2, mask_token="")
    from_config = layers.StringLookup.from_config(strings.get_config())
    assert from_config([["m", "z", ""]]).tolist() == strings([["m", "z", ""]]).tolist()
