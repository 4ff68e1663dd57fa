"""``model.export(path)``: the inference pass as a ``jax.export`` artifact, what replaces
TensorFlow's SavedModel for serving (issue 27 item 10)."""

import os
import subprocess
import sys
import uuid

import jax
import numpy as np
import pytest

import phalanx as px
from phalanx.errors import ExportError
from phalanx.io import gfile
from phalanx.models import _export

_rng = np.random.default_rng(0)
X = _rng.normal(size=(16, 3)).astype(np.float32)
Y = _rng.normal(size=(16, 2)).astype(np.float32)


@pytest.fixture(scope="module")
def trained():
    """One trained model for every test here (a fit is the slow part)."""
    model = px.Sequential(
        [
            px.Input((3,)),
            px.layers.Dense(4, activation="relu"),
            px.layers.BatchNormalization(),
            px.layers.Dropout(0.5),
            px.layers.Dense(2),
        ]
    )
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    return model


def test_the_exported_pass_is_predict_for_any_batch_size(trained):
    model = trained
    exported = _export.exported(model)  # dropout off, moving statistics: inference
    assert str(exported.in_avals[0].shape) == "(b, 3)"
    for rows in (5, 16):
        np.testing.assert_allclose(exported.call(X[:rows]), model(X[:rows]), atol=1e-6)


def test_several_inputs_and_an_explicit_signature():
    a, b = px.Input((4,)), px.Input((2,))
    model = px.Model([a, b], px.layers.Concatenate()([a, px.layers.Dense(2)(b)]))
    xs = [X[:, :2].repeat(2, axis=1), X[:, :2]]
    np.testing.assert_allclose(_export.exported(model).call(xs), model(xs), atol=1e-6)
    spec = [jax.ShapeDtypeStruct((7, 4), np.float32), jax.ShapeDtypeStruct((7, 2), np.float32)]
    assert _export.exported(model, spec).in_avals[0].shape == (7, 4)


def test_tensorflow_formats_are_refused_saying_what_to_use(tmp_path, trained):
    model = trained
    for format in ("tf_saved_model", "onnx"):
        with pytest.raises(ExportError, match=f"format='{format}'.*Use format='jax'"):
            model.export(tmp_path / "m", format=format)
    assert list(tmp_path.iterdir()) == []


def test_export_writes_the_serialized_artifact_on_a_url(trained):
    """Written, read back and served without the model's code: equal to predict."""
    model = trained
    path = f"memory://phalanx-export-{uuid.uuid4().hex}/m.jax"
    model.export(path)
    with gfile.GFile(path, "rb") as f:
        served = jax.export.deserialize(bytearray(f.read()))
    assert str(served.in_avals[0].shape) == "(b, 3)"
    for rows in (3, 16):
        np.testing.assert_allclose(
            served.call(X[:rows]), model.predict(X[:rows], verbose=0), atol=1e-6
        )


def test_export_to_a_local_file_is_served_by_a_process_without_phalanx(tmp_path, trained):
    """A server: a fresh Python that imports jax only, deserializes the file and calls it."""
    model = trained
    model.export(tmp_path / "m.jax")
    np.save(tmp_path / "x.npy", X)
    script = (
        "import sys, jax, numpy as np\n"
        "assert 'phalanx' not in sys.modules\n"
        "served = jax.export.deserialize(bytearray(open(sys.argv[1] + '/m.jax', 'rb').read()))\n"
        "np.save(sys.argv[1] + '/y.npy', np.asarray(served.call(np.load(sys.argv[1] + '/x.npy'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, env=env, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model.predict(X, verbose=0), atol=1e-6)
