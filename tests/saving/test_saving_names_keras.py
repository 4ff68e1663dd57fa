"""``phalanx.saving``'s Keras names (the registry, the scopes, save/load functions) and
``phalanx.models``' ``clone_model`` and ``model_from_json``, against Keras 3 (JAX)."""

import json
import os
import zipfile

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402
from phalanx import saving  # noqa: E402
from phalanx.errors import KerasFileError  # noqa: E402

X = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)


def _scale(lib, register=None):
    """The same layer of one's own for keras and phalanx, registered with ``register``."""

    class Scale(lib.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal")

        def call(self, x):
            return x * self.w * self.factor

    return Scale if register is None else register(Scale)


def _config_json(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("config.json"))


def test_registered_names_and_objects_match_keras():
    for lib in (keras, phalanx):
        cls = _scale(lib, lib.saving.register_keras_serializable())
        assert lib.saving.get_registered_name(cls) == "Custom>Scale"
        assert lib.saving.get_registered_object("Custom>Scale") is cls
        assert lib.saving.get_custom_objects()["Custom>Scale"] is cls
        named = _scale(lib, lib.saving.register_keras_serializable("pkg", "Other"))
        assert lib.saving.get_registered_name(named) == "pkg>Other"
        assert lib.saving.get_registered_object("pkg>Other") is named
        plain = _scale(lib)
        assert lib.saving.get_registered_name(plain) == "Scale"  # unregistered: __name__
        assert lib.saving.get_registered_object("nonesuch") is None
        assert lib.saving.get_registered_object("x", custom_objects={"x": plain}) is plain
    with pytest.raises(ValueError, match="get_config"):
        saving.register_keras_serializable()(type("NoConfig", (), {}))


def test_a_registered_layer_round_trips_and_is_written_as_keras_writes_it(tmp_path):
    ours = _scale(phalanx, saving.register_keras_serializable("px_test"))
    theirs = _scale(keras, keras.saving.register_keras_serializable("px_test"))
    model = phalanx.Sequential([phalanx.layers.Input((3,)), ours(3.0), phalanx.layers.Dense(2)])
    model.save(tmp_path / "p.keras")
    kmodel = keras.Sequential([keras.Input((3,)), theirs(3.0), keras.layers.Dense(2)])
    kmodel.save(tmp_path / "k.keras")
    written = _config_json(tmp_path / "p.keras")["config"]["layers"][1]
    keras_written = _config_json(tmp_path / "k.keras")["config"]["layers"][1]
    assert written["registered_name"] == keras_written["registered_name"] == "px_test>Scale"
    assert written["config"]["factor"] == keras_written["config"]["factor"] == 3.0
    assert written["config"]["dtype"] == keras_written["config"]["dtype"]
    loaded = phalanx.models.load_model(tmp_path / "p.keras")  # no custom_objects
    assert type(loaded.layers[0]) is ours and loaded.layers[0].factor == 3.0
    np.testing.assert_allclose(loaded(X), model(X), rtol=1e-6)
    # Keras reads phalanx's file, and phalanx Keras's, each with its own registered class
    np.testing.assert_allclose(keras.models.load_model(tmp_path / "p.keras")(X), model(X))
    from_keras = saving.load_model(tmp_path / "k.keras")
    np.testing.assert_allclose(from_keras(X), kmodel(X), rtol=1e-6)


def test_custom_object_scope_and_custom_objects_load_an_unregistered_layer(tmp_path):
    ours = _scale(phalanx)
    model = phalanx.Sequential([phalanx.layers.Input((3,)), ours(), phalanx.layers.Dense(2)])
    saving.save_model(model, tmp_path / "m.keras")
    assert _config_json(tmp_path / "m.keras")["config"]["layers"][1]["registered_name"] == ("Scale")
    with pytest.raises(KerasFileError, match="register_keras_serializable"):
        phalanx.models.load_model(tmp_path / "m.keras")
    with saving.custom_object_scope({"Scale": ours}) as scope:
        assert isinstance(scope, saving.CustomObjectScope)
        assert saving.get_registered_object("Scale") is ours
        with saving.custom_object_scope({}):  # an inner scope replaces, as Keras
            assert saving.get_registered_object("Scale") is None
        loaded = saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded(X), model(X), rtol=1e-6)
    assert saving.get_registered_object("Scale") is None  # undone after the block
    again = phalanx.models.load_model(tmp_path / "m.keras", custom_objects={"Scale": ours})
    np.testing.assert_allclose(again(X), model(X), rtol=1e-6)
    assert "Scale" not in saving.get_custom_objects()
    with pytest.raises(TypeError, match=r"expects a dict \{name: class or function\}, got list"):
        phalanx.models.load_model(tmp_path / "m.keras", custom_objects=[ours])


def test_save_and_load_weights_functions_match_keras_arguments(tmp_path):
    model = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    other = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    saving.save_weights(model, tmp_path / "m.weights.h5")
    saving.load_weights(other, tmp_path / "m.weights.h5")
    np.testing.assert_array_equal(other(X), model(X))
    saving.save_model(model, tmp_path / "m.keras")
    third = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    saving.load_weights(third, tmp_path / "m.keras")  # a .keras file's weights, as Keras
    np.testing.assert_array_equal(third(X), model(X))
    with pytest.raises(KerasFileError, match=r"\.weights\.h5"):
        saving.save_weights(model, tmp_path / "m.npz")
    with pytest.raises(KerasFileError, match="max_shard_size"):
        saving.save_weights(model, tmp_path / "n.weights.h5", max_shard_size=1)
    with pytest.raises(KerasFileError, match="zipped"):
        saving.save_model(model, tmp_path / "n.keras", zipped=False)
    with pytest.raises(KerasFileError, match="skip_mismatch"):
        saving.load_weights(other, tmp_path / "m.weights.h5", skip_mismatch=True)
    with pytest.raises(KerasFileError, match="by_name"):
        saving.load_weights(other, tmp_path / "m.weights.h5", by_name=True)
    assert saving.load_model is phalanx.models.load_model


def _functional(lib):
    inputs = lib.layers.Input((3,), name="x")
    hidden = lib.layers.Dense(4, activation="relu", name="hidden")(inputs)
    out = lib.layers.Add(name="add")([lib.layers.Dense(4, name="skip")(inputs), hidden])
    return lib.Model(inputs, lib.layers.Dense(2, name="head")(out), name="net")


def _assert_new_weights(clone, model):
    assert clone.built
    assert [w.shape for w in clone.get_weights()] == [w.shape for w in model.get_weights()]
    kernels = [
        (a, b) for a, b in zip(clone.get_weights(), model.get_weights(), strict=True) if a.ndim == 2
    ]
    assert all(not np.allclose(a, b) for a, b in kernels)  # drawn anew, not copied (Keras)


def test_clone_model_of_sequential_and_functional_models_as_keras():
    seq = phalanx.Sequential(
        [phalanx.layers.Input((3,)), phalanx.layers.Dense(4), phalanx.layers.Dense(2)]
    )
    for model in (seq, _functional(phalanx)):
        clone = phalanx.models.clone_model(model)
        assert clone.get_config() == model.get_config()
        assert all(a is not b for a, b in zip(clone.layers, model.layers, strict=True))
        _assert_new_weights(clone, model)
        clone.set_weights(model.get_weights())
        np.testing.assert_allclose(clone(X), model(X), rtol=1e-6)
    kmodel = _functional(keras)  # Keras's clone of the same graph: the same layer configs
    kclone = keras.models.clone_model(kmodel)
    assert [type(a).__name__ for a in kclone.layers] == [
        type(a).__name__ for a in phalanx.models.clone_model(_functional(phalanx)).layers
    ]


def test_clone_function_call_function_and_input_tensors():
    def wider(layer):
        if isinstance(layer, phalanx.layers.Dense) and layer.name != "head":
            return phalanx.layers.Dense(8, name=layer.name)
        return layer.__class__.from_config(layer.get_config())

    clone = phalanx.models.clone_model(_functional(phalanx), clone_function=wider)
    assert clone.get_layer("hidden").units == 8 and clone(X).shape == (4, 2)
    calls = []

    def traced(layer, *args, **kwargs):
        calls.append(layer.name)
        return layer(*args, **kwargs)

    phalanx.models.clone_model(_functional(phalanx), call_function=traced)
    assert sorted(calls) == ["add", "head", "hidden", "skip"]
    given = phalanx.layers.Input((3,), name="given")
    clone = phalanx.models.clone_model(_functional(phalanx), input_tensors=given)
    assert clone.get_config()["layers"][0]["name"] == "given"
    seq = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    assert phalanx.models.clone_model(seq, clone_function=wider).layers[0].units == 8


def test_clone_model_refuses_what_keras_refuses_naming_it():
    seq = phalanx.Sequential([phalanx.layers.Input((3,)), phalanx.layers.Dense(2)])
    with pytest.raises(TypeError, match="call_function"):
        phalanx.models.clone_model(seq, call_function=lambda layer, x: layer(x))
    with pytest.raises(TypeError, match="cache"):
        phalanx.models.clone_model(seq, cache={})

    class Sub(phalanx.Model):
        def __init__(self):
            super().__init__()
            self.dense = phalanx.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    with pytest.raises(TypeError, match="subclassed"):
        phalanx.models.clone_model(Sub())
    with pytest.raises(TypeError, match="clone_function returned"):
        phalanx.models.clone_model(seq, clone_function=lambda layer: None)


def test_model_from_json_round_trips_and_reads_keras_json():
    for model in (
        phalanx.Sequential(
            [phalanx.layers.Input((3,)), phalanx.layers.Dense(2, activation="relu")]
        ),
        _functional(phalanx),
    ):
        text = model.to_json()
        assert json.loads(text)["config"] == model.get_config()
        again = phalanx.models.model_from_json(text)
        assert again.get_config() == model.get_config() and again.built
    # Keras's JSON, a compiled functional model's: built, and compiled from compile_config
    kmodel = _functional(keras)
    kmodel.compile(optimizer="adam", loss="mse")
    ours = phalanx.models.model_from_json(kmodel.to_json())
    assert [layer.name for layer in ours.layers] == [layer.name for layer in kmodel.layers]
    assert ours(X).shape == (4, 2) and ours.get_compile_config()["loss"] == "mse"
    # and Keras reads phalanx's
    theirs = keras.models.model_from_json(_functional(phalanx).to_json())
    assert [layer.name for layer in theirs.layers] == [layer.name for layer in kmodel.layers]
    scale = _scale(phalanx)
    model = phalanx.Sequential([phalanx.layers.Input((3,)), scale(4.0)])
    again = phalanx.models.model_from_json(model.to_json(), custom_objects={"Scale": scale})
    assert again.layers[0].factor == 4.0
    with pytest.raises(KerasFileError, match="model.to_json"):
        phalanx.models.model_from_json("not json")
