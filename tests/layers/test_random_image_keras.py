"""The random image augmentation layers against Keras 3 (JAX backend).

Random draws cannot equal Keras's (its SeedGenerator is not JAX's key stream), so:
a transformation Keras draws (``get_random_transformation``) given to phalanx's
``transform_images`` gives Keras's pixels; inference is the identity with Keras's
dtypes; the draws have the distribution Keras's arguments describe; the raising
cases of keras/src/layers/preprocessing/image_preprocessing/*_test.py raise; and the
layers run in a ``Dataset.map`` pipeline and inside ``fit`` on 8 replicas.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import layers  # noqa: E402
from phalanx.errors import LayerArgumentError  # noqa: E402

RNG = np.random.default_rng(0)
IMAGES = RNG.uniform(0, 255, size=(4, 7, 9, 3)).astype(np.float32)

CASES = [
    ("RandomFlip", {}),
    ("RandomFlip", dict(mode="horizontal")),
    ("RandomFlip", dict(mode="vertical")),
    ("RandomRotation", dict(factor=0.3)),
    ("RandomRotation", dict(factor=(-0.2, 0.4), fill_mode="constant", fill_value=7.0)),
    ("RandomRotation", dict(factor=0.5, fill_mode="wrap", interpolation="nearest")),
    ("RandomRotation", dict(factor=0.25, fill_mode="nearest")),
    ("RandomZoom", dict(height_factor=0.4)),
    ("RandomZoom", dict(height_factor=(-0.5, -0.2), width_factor=(0.1, 0.6), fill_mode="wrap")),
    ("RandomZoom", dict(height_factor=0.3, interpolation="nearest", fill_mode="constant")),
    ("RandomTranslation", dict(height_factor=0.3, width_factor=0.2)),
    ("RandomTranslation", dict(height_factor=(-0.4, 0.1), width_factor=0.5, fill_mode="constant")),
    ("RandomTranslation", dict(height_factor=0.2, width_factor=0.2, fill_mode="nearest")),
    ("RandomCrop", dict(height=4, width=5)),
    ("RandomCrop", dict(height=7, width=5)),  # one axis equal: Keras's centre crop
    ("RandomCrop", dict(height=10, width=6)),  # taller than the input: crop and resize
    ("RandomContrast", dict(factor=0.5)),
    ("RandomContrast", dict(factor=(0.2, 0.9), value_range=(0, 255))),
    ("RandomBrightness", dict(factor=0.3)),
    ("RandomBrightness", dict(factor=(-0.5, 0.2), value_range=(0, 255))),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _pair(name, config):
    return getattr(layers, name)(**config), getattr(keras.layers, name)(**config)


def _to_jax(transformation):
    return jax.tree.map(lambda v: jnp.asarray(v) if hasattr(v, "shape") else v, transformation)


def _keras_pixels_match(ours, theirs, x, seeds):
    for seed in seeds:
        drawn = theirs.get_random_transformation(
            x, training=True, seed=keras.random.SeedGenerator(seed)
        )
        expected = np.asarray(theirs.transform_images(x, drawn, training=True))
        got = np.asarray(ours.transform_images(x, _to_jax(drawn), training=True))
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, atol=2e-3, rtol=1e-5)


@pytest.mark.parametrize("name, config", CASES, ids=IDS)
def test_keras_transformation_gives_keras_pixels(name, config):
    ours, theirs = _pair(name, config)
    _keras_pixels_match(ours, theirs, IMAGES, seeds=range(3))
    # one image (HWC): each layer draws its own unbatched transformation, and RandomCrop's
    # three paths (crop, centre crop, resize) each take it; the other configs of a layer
    # share the batched path checked above
    if name == "RandomCrop" or (name, config) == next(c for c in CASES if c[0] == name):
        _keras_pixels_match(ours, theirs, IMAGES[0], seeds=range(2))


@pytest.mark.parametrize("name, config", CASES, ids=IDS)
def test_own_transformation_has_keras_keys_and_pixels(name, config):
    # phalanx's draw, applied by Keras, gives phalanx's pixels: the two use one format
    ours, theirs = _pair(name, config)
    drawn = ours.get_random_transformation(IMAGES, training=True, seed=jax.random.key(1))
    keras_drawn = theirs.get_random_transformation(IMAGES, training=True)
    if isinstance(drawn, dict):
        assert set(drawn) == set(keras_drawn)
    expected = np.asarray(theirs.transform_images(IMAGES, drawn, training=True))
    np.testing.assert_allclose(
        np.asarray(ours.transform_images(IMAGES, drawn)), expected, atol=2e-3, rtol=1e-5
    )


# Dtypes follow the layer class (its casts) and RandomCrop's path (a resized crop is
# float), not the other arguments: one config per class, every RandomCrop config.
DTYPE_CASES = [c for i, c in enumerate(CASES) if c[0] == "RandomCrop" or c[0] not in
               {name for name, _ in CASES[:i]}]  # fmt: skip
DTYPE_IDS = [IDS[CASES.index(c)] for c in DTYPE_CASES]


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int32", "float64"])
@pytest.mark.parametrize("name, config", DTYPE_CASES, ids=DTYPE_IDS)
def test_inference_and_training_shapes_and_dtypes_are_keras(name, config, dtype):
    ours, theirs = _pair(name, config)
    x = IMAGES.astype(dtype)
    for training in (False, True):
        got, expected = ours(x, training=training), theirs(x, training=training)
        if name != "RandomCrop" or training:
            assert got.shape == expected.shape and got.dtype == expected.dtype, training
        else:  # Keras 3.15 returns the input uncropped; phalanx crops the centre
            assert got.shape == (4, config["height"], config["width"], 3)
            resized = config["height"] > 7  # a resized crop is float, as in training
            assert got.dtype == ("float32" if resized else expected.dtype)
    if name != "RandomCrop":  # inference is the identity
        np.testing.assert_array_equal(np.asarray(ours(x, training=False)), x.astype(got.dtype))
    assert ours(x[0]).shape == theirs(x[0]).shape  # one image


def test_random_crop_inference_centre_crops_as_keras_inference_branch():
    ours, theirs = _pair("RandomCrop", dict(height=4, width=5))
    centre = theirs.get_random_transformation(IMAGES, training=False)
    expected = theirs.transform_images(IMAGES, centre, training=True)
    np.testing.assert_allclose(np.asarray(ours(IMAGES, training=False)), np.asarray(expected))
    same = np.asarray(layers.RandomCrop(7, 9)(IMAGES, training=False))
    np.testing.assert_array_equal(same, IMAGES)  # keras: test_random_crop_full


def test_rotation_and_translation_numerics_of_keras_tests():
    image = np.arange(25).reshape(1, 5, 5, 1)
    half_turn = layers.RandomRotation(factor=(0.5, 0.5))(image)
    np.testing.assert_allclose(np.asarray(half_turn), image[:, ::-1, ::-1], atol=1e-4)
    assert np.array_equal(layers.RandomRotation((0.5, 0.5))(image, training=False), image)
    quarter = layers.RandomRotation((0.25, 0.25), interpolation="nearest")(image)
    np.testing.assert_array_equal(np.asarray(quarter)[0, :, :, 0], np.rot90(image[0, :, :, 0]))
    # keras random_translation_test: up by 20% with reflect
    up = layers.RandomTranslation((-0.2, -0.2), 0.0)(image.astype(np.float32))
    expected = [[5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 19],
                [20, 21, 22, 23, 24], [20, 21, 22, 23, 24]]  # fmt: skip
    np.testing.assert_allclose(np.asarray(up)[0, :, :, 0], expected, atol=1e-4)
    down = layers.RandomTranslation((0.2, 0.2), 0.0, fill_mode="constant")(image.astype("f"))
    expected = [[0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14],
                [15, 16, 17, 18, 19]]  # fmt: skip
    np.testing.assert_allclose(np.asarray(down)[0, :, :, 0], expected, atol=1e-4)


def test_flip_statistics():
    x = np.tile(np.arange(4.0).reshape(1, 1, 4, 1), (4000, 2, 1, 1))
    x[:, 1] += 10  # rows differ, so a vertical flip shows
    for mode in ("horizontal", "vertical", "horizontal_and_vertical"):
        out = np.asarray(layers.RandomFlip(mode, seed=3)(x))
        h = out[:, 0, 0, 0] % 10 == 3
        v = out[:, 0, 0, 0] >= 10
        flipped = {"horizontal": h, "vertical": v, "horizontal_and_vertical": h}[mode]
        assert 0.46 < flipped.mean() < 0.54, mode
        if mode == "horizontal_and_vertical":
            assert np.array_equal(h, v)  # one draw flips both axes, as Keras
        else:
            assert not ({"horizontal": v, "vertical": h}[mode]).any()


def test_draws_cover_the_factor_ranges():
    key = jax.random.key(0)
    x = np.zeros((5000, 6, 8, 1), np.float32)
    angle = layers.RandomRotation((-0.1, 0.3)).get_random_transformation(x, seed=key)["angle"]
    assert -36.0 <= float(angle.min()) < -35.0 and 107.0 < float(angle.max()) <= 108.0
    zoom = layers.RandomZoom(0.2, (-0.5, 0.1)).get_random_transformation(x, seed=key)
    h, w = np.asarray(zoom["height_zoom"]), np.asarray(zoom["width_zoom"])
    assert 0.8 <= h.min() < 0.81 and 1.19 < h.max() <= 1.2 and abs(h.mean() - 1) < 0.01
    assert 0.5 <= w.min() < 0.51 and 1.09 < w.max() <= 1.1
    assert abs(np.corrcoef(h[:, 0], w[:, 0])[0, 1]) < 0.05  # independent draws
    same = layers.RandomZoom(0.2).get_random_transformation(x, seed=key)
    assert np.array_equal(same["height_zoom"], same["width_zoom"])
    moves = layers.RandomTranslation(0.5, 0.25).get_random_transformation(x, seed=key)
    t = np.asarray(moves["translations"])  # pixels: (dx, dy)
    assert -2.0 <= t[:, 0].min() < -1.95 and 1.95 < t[:, 0].max() <= 2.0
    assert -3.0 <= t[:, 1].min() < -2.95 and 2.95 < t[:, 1].max() <= 3.0
    contrast = layers.RandomContrast(0.5).get_random_transformation(x, seed=key)
    c = np.asarray(contrast["contrast_factor"])  # Keras 3: factor 0.5 is (0, 0.5): [1, 1.5]
    assert 1.0 <= c.min() < 1.01 and 1.49 < c.max() <= 1.5
    bright = layers.RandomBrightness(0.2, value_range=(0, 1)).get_random_transformation(x, seed=key)
    d = np.asarray(bright["rgb_delta"])
    assert -0.2 <= d.min() < -0.19 and 0.19 < d.max() <= 0.2 and abs(d.mean()) < 0.01
    crop = layers.RandomCrop(3, 4)
    starts = {tuple(int(v) for v in crop.get_random_transformation(x, seed=jax.random.key(i)))
              for i in range(300)}  # fmt: skip
    assert starts == {(top, left) for top in range(4) for left in range(5)}


def test_factors_as_keras():
    assert layers.RandomContrast(0.5).factor == keras.layers.RandomContrast(0.5).factor
    assert layers.RandomBrightness((-1.1, 0.0)).factor == (-1.1, 0.0)  # Keras accepts it
    assert layers.RandomRotation(0.2).factor == (-0.2, 0.2)
    zoom = layers.RandomZoom((0.3, -0.2))
    assert (zoom.height_lower, zoom.height_upper) == (-0.2, 0.3)


BAD = [
    # random_translation_test.test_random_translation_with_bad_factor
    ("RandomTranslation", dict(height_factor=[0.1, 0.2, 0.3], width_factor=0.0), "factor"),
    ("RandomTranslation", dict(height_factor={"dummy": 0.3}, width_factor=0.0), "factor"),
    ("RandomTranslation", dict(height_factor=-1.1, width_factor=0.0), "factor"),
    ("RandomTranslation", dict(height_factor=(-1.1, 0.0), width_factor=0.0), "factor"),
    # random_brightness_test
    ("RandomBrightness", dict(factor=0.1, value_range="incorrect_type"), "value_range"),
    ("RandomBrightness", dict(factor=0.1, value_range=[10]), "value_range"),
    ("RandomBrightness", dict(factor=[0.1]), "The `factor` argument should be a number"),
    ("RandomBrightness", dict(factor="invalid_type"), "The `factor` argument should be"),
    ("RandomBrightness", dict(factor=-1.1), "The `factor` argument should be a number"),
    ("RandomBrightness", dict(factor=1.1), "The `factor` argument should be a number"),
    ("RandomContrast", dict(factor=1.5), r"range \[0, 1\]"),
    ("RandomContrast", dict(factor=-0.1), r"range \[0, 1\]"),
    ("RandomRotation", dict(factor=(0.3, -2)), r"range \[-1, 1\]"),
    ("RandomZoom", dict(height_factor=-1.0), r"\(-1.0, 1.0\]"),
    ("RandomZoom", dict(height_factor=0.2, width_factor=1.5), "width_factor"),
    ("RandomRotation", dict(factor=0.1, fill_mode="mirror_x"), "fill_mode"),
    ("RandomZoom", dict(height_factor=0.1, interpolation="bicubic"), "interpolation"),
    ("RandomTranslation", dict(height_factor=0.1, width_factor=0.1, fill_value="x"), "fill_value"),
    ("RandomFlip", dict(mode="diagonal"), "mode"),
    ("RandomCrop", dict(height=0, width=3), "height"),
    ("RandomFlip", dict(data_format="channels_first"), "channels_last"),
    ("RandomFlip", dict(bounding_box_format="xyxy"), "bounding_box_format"),
    ("RandomFlip", dict(seed=1.5), "seed"),
]


@pytest.mark.parametrize("name, config, match", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_arguments_raise_as_keras(name, config, match):
    with pytest.raises(LayerArgumentError, match=match):
        getattr(layers, name)(**config)
    keras_config = {k: v for k, v in config.items() if k not in ("seed", "fill_value")}
    # Keras refuses the same (phalanx alone refuses channels_first, boxes, modes, seeds)
    ours_only = {"bounding_box_format", "data_format"} & set(config) or name == "RandomCrop"
    if not ours_only and keras_config == config and config.get("mode") != "diagonal":
        with pytest.raises((ValueError, NotImplementedError)):
            getattr(keras.layers, name)(**config)


def test_bad_inputs_raise():
    # random_brightness_test.test_randomly_adjust_brightness_input_incorrect_rank
    with pytest.raises(ValueError, match="rank 3 or 4"):
        layers.RandomBrightness(0.1)(np.random.rand(10, 10), training=True)
    with pytest.raises(ValueError, match="rank 3 or 4"):
        layers.RandomFlip()(np.zeros((2, 3, 4, 5, 1)))
    with pytest.raises(LayerArgumentError, match="dict inputs"):
        layers.RandomFlip()({"images": IMAGES})
    with pytest.raises(ValueError, match="without a key"):
        jax.jit(lambda a: layers.RandomFlip()(a, training=True))(IMAGES)


@pytest.mark.parametrize("name, config", CASES, ids=IDS)
def test_config_as_keras_and_back(name, config):
    ours, theirs = _pair(name, config)
    mine, keras_config = ours.get_config(), theirs.get_config()
    assert set(mine) == set(keras_config) | ({"seed"} if name == "RandomCrop" else set())
    for key, value in keras_config.items():
        if key not in ("name", "dtype", "seed"):
            assert mine[key] == (list(value) if isinstance(value, list) else value), key
    again = type(ours).from_config(mine)
    assert again.get_config() == mine
    from_keras = type(ours).from_config({k: v for k, v in keras_config.items() if k != "dtype"})
    assert {k: v for k, v in from_keras.get_config().items() if k not in ("name", "seed")} == {
        k: v for k, v in mine.items() if k not in ("name", "seed")
    }


def test_seeded_layers_repeat_their_draws_and_fold_the_seed_into_a_given_key():
    a, b = layers.RandomRotation(0.3, seed=5), layers.RandomRotation(0.3, seed=5)
    first = [np.asarray(a(IMAGES)) for _ in range(2)]
    assert not np.allclose(first[0], first[1])  # the generator advances per call
    np.testing.assert_array_equal(np.asarray(b(IMAGES)), first[0])
    key = jax.random.key(9)
    c, d = layers.RandomRotation(0.3, seed=1), layers.RandomRotation(0.3, seed=2)
    assert not np.allclose(c(IMAGES, rngs=key), d(IMAGES, rngs=key))
    np.testing.assert_array_equal(np.asarray(c(IMAGES, rngs=key)), np.asarray(c(IMAGES, rngs=key)))
    # jit with a key: random in training
    jitted = jax.jit(lambda x, k: layers.RandomFlip(seed=0)(x, training=True, rngs=k))
    assert jitted(IMAGES, key).shape == IMAGES.shape


def test_in_a_dataset_map_pipeline():
    data = phalanx.data.Dataset.from_tensor_slices(IMAGES).batch(2)
    augment = layers.RandomRotation(0.2, seed=0)
    first = [np.asarray(b) for b in data.map(augment)]
    second = [np.asarray(b) for b in data.map(augment)]
    assert [b.shape for b in first] == [(2, 7, 9, 3)] * 2
    assert not np.allclose(first[0], second[0])  # each pass draws anew (training=True)
    crop = layers.RandomCrop(5, 5)
    singles = [np.asarray(x) for x in phalanx.data.Dataset.from_tensor_slices(IMAGES).map(crop)]
    assert [s.shape for s in singles] == [(5, 5, 3)] * 4 and singles[0].dtype == np.float32
    labelled = phalanx.data.Dataset.from_tensor_slices((IMAGES, np.arange(4))).batch(4)
    x, y = next(iter(labelled.map(lambda x, y: (layers.RandomFlip()(x), y))))
    assert np.asarray(x).shape == (4, 7, 9, 3) and np.asarray(y).tolist() == [0, 1, 2, 3]


def _fit(devices, augmentation, x, y, epochs=2):
    with phalanx.MirroredStrategy(devices=devices).scope():
        phalanx.utils.set_random_seed(0)
        model = phalanx.Sequential(
            [layers.Input((4, 4, 2)), *augmentation, layers.Flatten(), layers.Dense(1)]
        )
        model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=epochs, shuffle=False, verbose=0)
    return model, history.history["loss"]


def test_fit_on_eight_replicas_trains_with_the_augmentation_and_predicts_without():
    x = RNG.uniform(0, 1, size=(32, 4, 4, 2)).astype(np.float32)
    y = RNG.normal(size=(32, 1)).astype(np.float32)
    # a fixed draw (factor (0.5, 0.5)): 8 replicas equal one device, and equal training
    # on the brightened images without the layer
    shift = [layers.RandomBrightness((0.5, 0.5), value_range=(0, 1))]
    one, loss_one = _fit(jax.devices()[:1], shift, x, y)
    eight, loss_eight = _fit(jax.devices(), shift, x, y)
    plain, loss_plain = _fit(jax.devices(), [], np.clip(x + 0.5, 0, 1), y)
    np.testing.assert_allclose(loss_eight, loss_one, rtol=1e-5)
    np.testing.assert_allclose(loss_eight, loss_plain, rtol=1e-5)
    for a, b in zip(eight.get_weights(), one.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    for a, b in zip(eight.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # predict: the identity
    np.testing.assert_allclose(eight.predict(x, verbose=0), plain.predict(x, verbose=0), atol=1e-6)
    # random flips inside the compiled step: training differs from training without them,
    # and two runs from the same seed are equal
    flips, _ = _fit(jax.devices(), [layers.RandomFlip()], x, y)
    again, _ = _fit(jax.devices(), [layers.RandomFlip()], x, y)
    none, _ = _fit(jax.devices(), [], x, y)
    assert not np.allclose(flips.get_weights()[0], none.get_weights()[0], atol=1e-4)
    for a, b in zip(flips.get_weights(), again.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_keras_files_round_trip(tmp_path):
    x = RNG.uniform(0, 1, size=(2, 8, 8, 3)).astype(np.float32)
    keras_model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.RandomFlip("horizontal", seed=1),
            keras.layers.RandomRotation(0.1, fill_mode="constant"),
            keras.layers.RandomZoom(0.2, 0.3),
            keras.layers.RandomTranslation(0.1, 0.2),
            keras.layers.RandomContrast(0.3, value_range=(0, 1)),
            keras.layers.RandomBrightness(0.1, value_range=(0, 1)),
            keras.layers.RandomCrop(8, 8, seed=3),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )
    keras_model.save(tmp_path / "theirs.keras")
    ours = phalanx.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(
        ours.predict(x, verbose=0), keras_model.predict(x, verbose=0), atol=1e-5
    )
    assert ours.layers[1].fill_mode == "constant" and ours.layers[0].seed == 1
    ours.save(tmp_path / "ours.keras")
    back = keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(
        back.predict(x, verbose=0), keras_model.predict(x, verbose=0), atol=1e-5
    )
