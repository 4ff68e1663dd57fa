"""examples/transformer_classifier.py builds a functional transformer and trains it with fit."""

import importlib.util
from pathlib import Path

import phalanx

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformer_classifier.py"


def test_transformer_example_trains_under_mirrored_strategy(capsys, monkeypatch):
    fits = []
    fit = phalanx.Model.fit
    monkeypatch.setattr(
        phalanx.Model, "fit", lambda self, *a, **kw: fits.append(kw) or fit(self, *a, **kw)
    )
    spec = importlib.util.spec_from_file_location("transformer_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(epochs=6, verbose=0)  # bounded: about 15 s here
    losses = result["history"]["loss"]
    assert losses[-1] < losses[0] / 2
    assert result["test_accuracy"] > 0.8
    # validation is held out from the training examples: the test set is only evaluated
    (kwargs,) = fits
    assert kwargs.get("validation_data") is None and kwargs["validation_split"] == 0.1
    assert "val_accuracy" in result["history"]
    out = capsys.readouterr().out
    assert "Number of devices: 8" in out
    assert "block1_attention (MultiHeadAttention)" in out and "Connected to" in out
