"""``Hashing`` gives TensorFlow's bins.

Keras 3's ``Hashing`` needs TensorFlow (not a test dependency): the expected bins are
keras v3.15.1's ``keras/src/layers/preprocessing/hashing_test.py`` and the layer's
docstring, produced by TF's ``to_hash_bucket_fast`` / ``to_hash_bucket_strong``. The raw
64-bit hashes were recorded from pyfarmhash 0.5.1 (google/farmhash's C++
``Fingerprint64``) and siphashc 2.9.1 (SipHash-2-4, key packed as two little-endian
words: highwayhash's and TF's layout), on strings of every length class of the algorithms.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import phalanx
from phalanx import layers
from phalanx.errors import LayerArgumentError
from phalanx.layers import _hashes

WIRE = [["omar"], ["stringer"], ["marlo"], ["wire"], ["skywalker"]]
LETTERS = [["A"], ["B"], ["C"], ["D"], ["E"]]

# (bytes, Fingerprint64, SipHash-2-4 with key (133, 137))
RECORDED = [
    (b"", 11160318154034397263, 4928313950774450900),
    (b"a", 12917804110809363939, 7077939996121841354),
    (b"abc", 2640714258260161385, 6899845086433867945),
    (b"abcd", 1897425971756105985, 17031577272183015879),
    (b"hello wor", 568376189322566502, 8992645349318907399),
    (b"0123456789abcdefg", 12024047538191061578, 2112349501170619355),
    (b"x" * 33, 12270365409943098935, 7959349581776540777),
    (b"The quick brown fox jumps over the lazy dog", 12375473906752639284, 13323543744164014538),
    (bytes(range(65)), 14313328211205373374, 6990717496060839801),
    (bytes(range(200)), 525935771297148851, 5213309504701081365),
    ("café über".encode(), 5668927380141913926, 4628789100972346008),
]


@pytest.mark.parametrize("data, farm, sip", RECORDED, ids=[str(len(r[0])) for r in RECORDED])
def test_hashes_equal_the_reference_implementations(data, farm, sip):
    assert _hashes.fingerprint64(data) == farm
    assert _hashes.siphash64((133, 137), data) == sip


@pytest.mark.parametrize(
    "config, data, expected",
    [
        # the docstring's four examples
        (dict(num_bins=3), LETTERS, [[1], [0], [1], [1], [2]]),
        (
            dict(num_bins=3, mask_value=""),
            [["A"], ["B"], [""], ["C"], ["D"]],
            [[1], [1], [0], [2], [2]],
        ),
        (dict(num_bins=3, salt=[133, 137]), LETTERS, [[1], [2], [1], [0], [2]]),
        (dict(num_bins=3, salt=133), LETTERS, [[0], [0], [2], [1], [0]]),
        # hashing_test.py
        (dict(num_bins=1), np.asarray(LETTERS), [[0]] * 5),
        (dict(num_bins=2), np.asarray(WIRE), [[0], [0], [1], [0], [0]]),
        (dict(num_bins=3, mask_value=""), np.asarray(WIRE), [[1], [1], [2], [1], [1]]),
        (dict(num_bins=3, mask_value="omar"), np.asarray(WIRE), [[0], [1], [2], [1], [1]]),
        (dict(num_bins=2), WIRE, [[0], [0], [1], [0], [0]]),
        (dict(num_bins=2), [w[0] for w in WIRE], [0, 0, 1, 0, 0]),
        (dict(num_bins=3), np.asarray([[0], [1], [2], [3], [4]]), [[1], [0], [1], [0], [2]]),
        (dict(num_bins=2, salt=[133, 137]), np.asarray(WIRE), [[0], [1], [0], [1], [0]]),
        (dict(num_bins=2, salt=[211, 137]), np.asarray(WIRE), [[1], [0], [1], [0], [1]]),
        (
            dict(num_bins=3, salt=[133, 137]),
            np.asarray([[0], [1], [2], [3], [4]]),
            [[1], [1], [2], [0], [1]],
        ),
        (dict(num_bins=3), [0, 1, 2, 3, 4], [1, 0, 1, 0, 2]),  # test_tensor_like_inputs
        (dict(num_bins=3), (0, 1, 2, 3, 4), [1, 0, 1, 0, 2]),
        (dict(num_bins=2), [1, 2, 3], [1, 1, 1]),  # test_hash_list_input
        (dict(num_bins=2), [[1, 2], [2, 3], [3, 4]], [[1, 1], [1, 1], [1, 1]]),
        (
            dict(num_bins=2),
            [[[1], [2]], [[2], [3]], [[3], [4]]],
            [[[1], [1]], [[1], [1]], [[1], [1]]],
        ),
    ],
)
def test_bins_are_tensorflows(config, data, expected):
    out = layers.Hashing(**config)(data)
    assert out.tolist() == expected and out.dtype == np.int64


def test_bytes_floats_and_array_like_inputs():
    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.array([0, 1, 2, 3, 4])

    assert layers.Hashing(3)(ArrayLike()).tolist() == [1, 0, 1, 0, 2]
    assert layers.Hashing(3)(np.array([b"A", b"B"])).tolist() == [1, 0]
    assert layers.Hashing(3)(np.array([0.7, 1.2, 2.9])).tolist() == [1, 0, 1]  # int64 first
    assert layers.Hashing(3, mask_value=0)(np.array([0, 1, 2])).tolist() == [0, 2, 2]


def test_encoded_outputs_as_keras_tests():
    one_hot = layers.Hashing(3, output_mode="one_hot")(np.array([0, 1, 2, 3, 4]))
    expected = [[0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]]
    assert one_hot.tolist() == expected and one_hot.dtype == np.float32
    assert layers.Hashing(3, output_mode="one_hot")(np.array([[0], [4]])).shape == (2, 3)
    multi = layers.Hashing(3, output_mode="multi_hot")(np.array([[0, 1, 2, 3, 4]]))
    assert multi.tolist() == [[1.0, 1.0, 1.0]]
    assert layers.Hashing(3, output_mode="count")([0, 1, 2, 3, 4]).tolist() == [2.0, 2.0, 1.0]
    assert layers.Hashing(3, output_mode="count")([[0, 1, 2, 3, 4]]).tolist() == [[2.0, 2.0, 1.0]]
    assert layers.Hashing(3, dtype="int32")(["A"]).dtype == np.int32
    assert layers.Hashing(3, output_mode="one_hot", dtype="float64")(["A"]).dtype == np.float64
    for mode in ("int", "one_hot", "multi_hot", "count"):  # test_compute_output_shape
        layer = layers.Hashing(num_bins=5, output_mode=mode)
        expected = {(4,): (4,), (4, 1): (4, 1), (3, 4): (3, 4)} if mode == "int" else None
        for shape in ((4,), (4, 1), (3, 4)):
            want = expected[shape] if expected else (*shape[:-1], 5)
            assert layer.compute_output_shape(shape) == want


def test_invalid_arguments_as_keras():
    for bins in (None, -1, 0):
        with pytest.raises(LayerArgumentError, match="cannot be `None`"):
            layers.Hashing(num_bins=bins)
    for salt in ("string", [1], [133, 137, 177]):
        with pytest.raises(LayerArgumentError, match="can only be a tuple of size 2"):
            layers.Hashing(num_bins=2, salt=salt)
    with pytest.raises(LayerArgumentError, match="output_mode"):
        layers.Hashing(2, output_mode="tf_idf")
    with pytest.raises(LayerArgumentError, match="should be an integer type"):
        layers.Hashing(2, dtype="float32")
    with pytest.raises(LayerArgumentError, match="sparse=True"):
        layers.Hashing(2, output_mode="multi_hot", sparse=True)
    with pytest.raises(LayerArgumentError, match="strings or integers"):
        layers.Hashing(2)(np.array([1 + 2j]))
    with pytest.raises(LayerArgumentError, match="input pipeline"):
        jax.jit(lambda a: layers.Hashing(2)(a))(jnp.ones(2, jnp.int32))


def test_config_round_trip_with_keras_keys():
    layer = layers.Hashing(num_bins=8, salt=5, mask_value="", name="hashing")
    config = layer.get_config()
    # keras: Hashing(num_bins=8, salt=5, mask_value="").get_config(), less its dtype policy
    keras_keys = {
        "name",
        "trainable",
        "dtype",
        "num_bins",
        "salt",
        "mask_value",
        "output_mode",
        "sparse",
    }
    assert set(config) == keras_keys and config["salt"] == [5, 5] and config["dtype"] == "int64"
    again = layers.Hashing.from_config(config)
    assert again.get_config() == config and again.name == "hashing"
    data = np.asarray(WIRE)
    assert again(data).tolist() == layer(data).tolist()


def test_in_a_dataset_map_pipeline():
    data = phalanx.data.Dataset.from_tensor_slices(np.asarray(LETTERS)).batch(5)
    out = next(iter(data.map(layers.Hashing(num_bins=3))))  # keras: test_tf_data_compatibility
    assert np.asarray(out).tolist() == [[1], [0], [1], [1], [2]]
