"""The seeds' models saved and loaded as a reader does after training: ``model.save``,
then ``load_model(path).evaluate(x_test, y_test)``, as in TensorFlow 2.21.

Keras 3 writes ``compile``'s arguments into the ``.keras`` file and ``load_model``
compiles the model it returns, so evaluate and fit run at once; a model that was
never compiled loads uncompiled, and evaluate then asks for ``compile`` (also after a
``predict``, which needs no compile, as Keras).
"""

from __future__ import annotations

import json
import zipfile

import jax
import numpy as np
import pytest

import phalanx as px

# What TensorFlow 2.21 wrote for compile(optimizer=SGD(0.1, momentum=0.9),
# loss=SparseCategoricalCrossentropy(from_logits=True),
# metrics=["accuracy", SparseCategoricalAccuracy("acc2")]).
KERAS_COMPILE_CONFIG = json.loads(
    '{"optimizer": {"module": "keras.optimizers", "class_name": "SGD", "config": {"name": '
    '"sgd", "learning_rate": 0.10000000149011612, "weight_decay": null, "clipnorm": null, '
    '"global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99, '
    '"ema_overwrite_frequency": null, "loss_scale_factor": null, '
    '"gradient_accumulation_steps": null, "momentum": 0.9, "nesterov": false}, '
    '"registered_name": null}, "loss": {"module": "keras.losses", "class_name": '
    '"SparseCategoricalCrossentropy", "config": {"name": "sparse_categorical_crossentropy", '
    '"reduction": "sum_over_batch_size", "from_logits": true, "ignore_class": null}, '
    '"registered_name": null}, "loss_weights": null, "metrics": ["accuracy", {"module": '
    '"keras.metrics", "class_name": "SparseCategoricalAccuracy", "config": {"name": "acc2", '
    '"dtype": "float32"}, "registered_name": null}], "weighted_metrics": null, '
    '"run_eagerly": false, "steps_per_execution": 1, "jit_compile": false}'
)


def _data():
    rng = np.random.default_rng(0)
    return rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64)


def _model():
    return px.models.Sequential(
        [px.layers.Input(shape=(8,)), px.layers.Dense(3, activation="softmax")]
    )


@pytest.mark.parametrize("devices", [1, 8])
def test_a_loaded_model_evaluates_as_the_saved_one(tmp_path, devices):
    x, y = _data()
    strategy = px.distribute.MirroredStrategy(devices=jax.devices()[:devices])
    with strategy.scope():
        model = _model()
        model.compile(
            optimizer=px.optimizers.Adam(0.01),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    model.save(tmp_path / "model.keras")
    with strategy.scope():
        loaded = px.models.load_model(tmp_path / "model.keras")
    want = model.evaluate(x, y, verbose=0, return_dict=True)
    got = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(got) == ["accuracy", "loss"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5)
    np.testing.assert_allclose(float(loaded.optimizer.learning_rate), 0.01)
    history = loaded.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss"]


def test_a_keras_written_compile_config_compiles_the_loaded_model(tmp_path):
    x, y = _data()
    model = _model()
    model.save(tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    config["compile_config"] = KERAS_COMPILE_CONFIG
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "keras.keras", "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    loaded = px.models.load_model(tmp_path / "keras.keras")
    logs = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(logs) == ["acc2", "accuracy", "loss"]
    np.testing.assert_allclose(float(loaded.optimizer.learning_rate), 0.1)
    # The loss is read with from_logits=True: the same value as compiling by hand.
    model.compile(
        optimizer="sgd",
        loss=px.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    np.testing.assert_allclose(logs["loss"], model.evaluate(x, y, verbose=0)[0], rtol=1e-6)


def test_compile_false_and_an_uncompiled_model_load_uncompiled(tmp_path):
    x, y = _data()
    model = _model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.save(tmp_path / "compiled.keras")
    loaded = px.models.load_model(tmp_path / "compiled.keras", compile=False)
    with pytest.raises(RuntimeError, match=r"You must call compile\(\) before evaluate"):
        loaded.evaluate(x, y, verbose=0)
    _model().save(tmp_path / "plain.keras")
    loaded = px.models.load_model(tmp_path / "plain.keras")
    assert loaded.predict(x, verbose=0).shape == (64, 3)  # predict needs no compile, as Keras
    with pytest.raises(RuntimeError, match=r"You must call compile\(\) before evaluate"):
        loaded.evaluate(x, y, verbose=0)
    with pytest.raises(RuntimeError, match=r"You must call compile\(\) before fit"):
        loaded.fit(x, y, verbose=0)


def test_an_optax_optimizer_is_not_written_and_unused_custom_objects_are_unused(tmp_path):
    import optax

    model = _model()
    model.compile(optimizer=optax.sgd(0.1), loss="sparse_categorical_crossentropy")
    model.save(tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as archive:
        assert json.loads(archive.read("config.json"))["compile_config"] is None
    # custom_objects name classes of one's own (phalanx.saving); an entry no layer names is
    # not used, as Keras
    loaded = px.models.load_model(tmp_path / "model.keras", custom_objects={"f": len})
    assert [type(layer) for layer in loaded.layers] == [type(layer) for layer in model.layers]
