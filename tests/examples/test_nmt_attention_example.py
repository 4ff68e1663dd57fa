"""examples/nmt_attention.py trains under MirroredStrategy and TPUStrategy, with Keras 3's
loss curve from the same initial weights."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = pytest.importorskip("keras")

import phalanx  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nmt_attention.py"
LAYERS = ("source_embedding", "encoder", "target_embedding", "decoder", "w1", "w2", "v", "out")


def _example():
    spec = importlib.util.spec_from_file_location("nmt_attention_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # two strategies, each compiling the encoder-decoder step
def test_nmt_example_trains_under_both_strategies(capsys):
    results = _example().main(examples=32, epochs=3, batch_size=16, fused=2)
    for name in ("MirroredStrategy", "TPUStrategy"):
        loss = results[name]["loss"]
        assert len(loss) == 3 and loss[-1] < loss[0]
    # TPUStrategy on CPU computes in float32 here, as MirroredStrategy: the same curve.
    np.testing.assert_allclose(
        results["TPUStrategy"]["loss"], results["MirroredStrategy"]["loss"], rtol=1e-4
    )
    assert "Number of devices: 8" in capsys.readouterr().out


@pytest.mark.slow  # Keras 3's fit and phalanx's on 2 replicas
def test_nmt_loss_curve_equals_keras_from_the_same_weights():
    nmt = _example()
    x, y = nmt.make_data(64)
    keras.utils.set_random_seed(0)
    k = nmt.translator(keras)
    k({name: v[:2] for name, v in x.items()})
    weights = {name: getattr(k, name).get_weights() for name in LAYERS}
    k.compile(optimizer=keras.optimizers.Adam(0.01), loss=nmt.masked_loss)
    kh = k.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0).history
    assert kh["loss"][-1] < kh["loss"][0]
    import jax

    strategy = phalanx.MirroredStrategy(jax.devices()[:2])
    ph = nmt.train(strategy, x, y, epochs=3, batch_size=16, weights=weights, fused=4)["history"]
    np.testing.assert_allclose(ph["loss"], kh["loss"], rtol=2e-5)
