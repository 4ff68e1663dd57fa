"""``Model.get_compile_config`` and ``compile_from_config`` as Keras 3's
(``keras/src/trainers/trainer.py``): ``{}`` before ``compile``, a config that compiles
another model the same way, Keras-written configs read, a custom ``compile`` left alone."""

import keras
import numpy as np
import pytest

import phalanx as px
from phalanx.errors import KerasFileError, UnknownNameError


def _model():
    return px.models.Sequential([px.layers.Input((3,)), px.layers.Dense(2)])


def test_empty_until_compiled_then_the_arguments_as_keras_serializes_them():
    model = _model()
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert model.get_compile_config() == reference.get_compile_config() == {}
    for m in (model, reference):
        m.compile(optimizer="adam", loss="mse", metrics=["mae"], steps_per_execution=2)
    ours, theirs = model.get_compile_config(), reference.get_compile_config()
    for key in ("loss", "loss_weights", "metrics", "weighted_metrics"):
        assert ours[key] == theirs[key], key
    # Keras serializes the optimizer it made of the name; phalanx keeps the name (docs/names.md)
    assert (ours["optimizer"], theirs["optimizer"]["class_name"]) == ("adam", "Adam")
    assert ours["steps_per_execution"] == theirs["steps_per_execution"] == 2


def test_compile_from_config_compiles_as_the_config_says():
    source = _model()
    source.compile(optimizer=px.optimizers.SGD(0.5), loss="mse", metrics=["mae"])
    model = _model()
    model.compile_from_config(source.get_compile_config())
    assert model.get_compile_config() == source.get_compile_config()
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    assert set(model.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "mae"}


def test_a_keras_written_config_compiles_a_phalanx_model():
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    reference.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model = _model()
    model.compile_from_config(reference.get_compile_config())
    assert model.get_compile_config()["optimizer"]["class_name"] == "Adam"
    assert model.get_compile_config()["optimizer"]["config"]["learning_rate"] == pytest.approx(0.01)


def test_unknown_names_raise_naming_them():
    with pytest.raises(UnknownNameError, match="nonesuch"):
        _model().compile_from_config({"optimizer": "adam", "loss": "nonesuch"})
    entry = {"module": "keras.losses", "class_name": "Nonesuch", "config": {}}
    with pytest.raises(KerasFileError, match="Nonesuch"):
        _model().compile_from_config({"optimizer": "adam", "loss": entry})


def test_a_custom_compile_is_not_called_and_keras_warning_says_so():
    class Custom(px.models.Model):
        def compile(self, *args, **kwargs):
            raise AssertionError("not called")

    model = Custom(px.models.Sequential([px.layers.Dense(1)]).module)
    with pytest.warns(UserWarning, match="custom"):
        model.compile_from_config({"optimizer": "sgd", "loss": "mse"})
