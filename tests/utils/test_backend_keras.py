"""``phalanx.backend`` and ``clear_session``: Keras 3's values, and names restarting as Keras's."""

from __future__ import annotations

import keras
import pytest

import phalanx as px


def test_settings_read_as_keras_defaults():
    assert px.backend.backend() == keras.backend.backend() == "jax"
    assert px.backend.floatx() == keras.backend.floatx()
    assert px.backend.epsilon() == keras.backend.epsilon()
    assert px.backend.image_data_format() == keras.backend.image_data_format()


def test_setters_take_what_phalanx_honours():
    px.backend.set_floatx("float32")
    px.backend.set_epsilon(1e-7)
    px.backend.set_image_data_format("channels_last")
    assert px.backend.floatx() == "float32" and px.backend.epsilon() == 1e-7


@pytest.mark.parametrize(
    "setter, value, match",
    [
        ("set_floatx", "float64", r"set_floatx\('float64'\).*mixed_precision.set_global_policy"),
        ("set_floatx", "bfloat16", r"set_floatx\('bfloat16'\).*mixed_bfloat16"),
        ("set_epsilon", 1e-5, r"set_epsilon\(1e-05\).*epsilon="),
        ("set_image_data_format", "channels_first", r"channels_first.*np.moveaxis"),
    ],
)
def test_setters_refuse_what_phalanx_does_not_honour(setter, value, match):
    with pytest.raises(px.errors.BackendSettingError, match=match) as info:
        getattr(px.backend, setter)(value)
    assert isinstance(info.value, ValueError)
    assert px.backend.floatx() == "float32" and px.backend.epsilon() == 1e-7


@pytest.mark.parametrize(
    "setter, value, match",
    [
        ("set_floatx", "int32", "Unknown `floatx` value: int32"),
        ("set_image_data_format", "nhwc", "The `data_format` argument must be one of"),
    ],
)
def test_unknown_settings_raise_keras_value_errors(setter, value, match):
    with pytest.raises(ValueError, match=match):
        getattr(keras.backend, setter)(value)
    with pytest.raises(px.errors.BackendSettingError, match=match):
        getattr(px.backend, setter)(value)


def test_is_keras_tensor():
    assert px.backend.is_keras_tensor(px.layers.Input((3,)))
    assert px.backend.is_keras_tensor(px.layers.Dense(2)(px.layers.Input((3,))))
    assert not px.backend.is_keras_tensor(1.0)
    assert keras.backend.is_keras_tensor(keras.Input((3,)))


def _names(module):
    module.backend.clear_session()
    for _ in range(3):
        module.optimizers.Adam()
    model = module.Sequential([module.layers.Dense(2), module.layers.Dense(2)])
    module.backend.clear_session()
    after = module.Sequential([module.layers.Dense(2), module.layers.Dense(3)])
    after.build((None, 4)) if module is keras else after.build((4,))
    return module.optimizers.Adam().name, [layer.name for layer in after.layers], model


def test_names_restart_after_clear_session_as_keras():
    ours = _names(px)
    theirs = _names(keras)
    assert ours[:2] == theirs[:2] == ("adam", ["dense", "dense_1"])


def test_clear_session_resets_the_global_policy_as_keras():
    for module in (keras, px):
        module.mixed_precision.set_global_policy("mixed_bfloat16")
        module.backend.clear_session()
        assert module.mixed_precision.global_policy().name == "float32"
    assert px.utils.clear_session is px.backend.clear_session


def test_clear_session_free_memory_false():
    px.utils.clear_session(free_memory=False)
    keras.backend.clear_session(free_memory=False)
