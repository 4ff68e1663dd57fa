"""A batch the model or its loss cannot take is refused before the step is traced, with a
short traceback holding no JAX frame (issue 30 item 5): 785 features for a model built for
784, images for a model of flat vectors, one-hot labels for a sparse loss; in fit, evaluate
and predict, from arrays and from a Dataset, for Sequential and functional models."""

import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import phalanx as px
from phalanx.errors import LayerShapeError, LossArgumentError

RNG = np.random.default_rng(0)
X = RNG.random((64, 784), np.float32)
Y = RNG.integers(0, 10, 64)


def _model(functional=False):
    if functional:
        inputs = px.layers.Input(shape=(784,))
        model = px.Model(inputs, px.layers.Dense(10)(inputs))
    else:
        model = px.Sequential([px.layers.Input(shape=(784,)), px.layers.Dense(10)])
    model.compile("adam", px.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _raised(call):
    with pytest.raises((LayerShapeError, LossArgumentError)) as info:
        call()
    frames = traceback.extract_tb(info.value.__traceback__)
    files = [f.filename for f in frames]
    assert len(frames) <= 8, "\n".join(files)
    assert not [f for f in files if f"{os.sep}jax{os.sep}" in f or "flax" in f], files
    return str(info.value)


CASES = {  # name: (x, y, what the message must say)
    "features": (RNG.random((64, 785), np.float32), Y, r"\(None, 784\), received \(\d+, 785\)"),
    "rank": (RNG.random((64, 28, 28), np.float32), Y, r"received \(\d+, 28, 28\).*Flatten"),
    "one-hot": (X, np.eye(10, dtype=np.float32)[Y], r"Targets look one-hot: use categorical"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("entry", ["fit", "evaluate", "predict"])
def test_a_batch_the_model_cannot_take_is_refused_first(case, entry):
    x, y, expected = CASES[case]
    if entry == "predict" and case == "one-hot":
        pytest.skip("predict reads no targets")
    model = _model()
    args = (x,) if entry == "predict" else (x, y)
    message = _raised(lambda: getattr(model, entry)(*args, verbose=0))
    assert __import__("re").search(expected, message), message


@pytest.mark.parametrize("case", ["features", "one-hot"])
def test_a_dataset_and_a_functional_model_too(case):
    x, y, expected = CASES[case]
    data = px.data.Dataset.from_tensor_slices((x, y)).batch(16)
    message = _raised(lambda: _model(functional=True).fit(data, epochs=1, verbose=0))
    assert __import__("re").search(expected.replace(r"\d+", "16"), message), message


def test_the_feature_count_message_says_what_to_do():
    message = _raised(lambda: _model().fit(CASES["features"][0], Y, verbose=0))
    assert "Give x examples of shape (784,)" in message
    assert "layers.Input(shape=(785,))" in message


def test_the_message_comes_first_in_a_script(tmp_path):
    """What a user sees: the script's traceback is a few lines, phalanx's message last."""
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import phalanx as px
            model = px.Sequential([px.layers.Input(shape=(784,)), px.layers.Dense(10)])
            model.compile("adam", "sparse_categorical_crossentropy")
            model.fit(np.zeros((64, 785), np.float32), np.zeros(64, np.int32), verbose=0)
            """
        )
    )
    env = dict(os.environ, PHALANX_CPU_DEVICES="2")
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith("phalanx.errors.LayerShapeError: Sequential"), out.stderr
    assert len([line for line in lines if line.lstrip().startswith("File ")]) <= 8, out.stderr
    assert "JAX" not in out.stderr and "lax" not in out.stderr, out.stderr
