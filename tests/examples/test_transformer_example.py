"""examples/transformer_classifier.py builds a functional transformer and trains it with fit."""

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformer_classifier.py"


def test_transformer_example_trains_under_mirrored_strategy(capsys):
    spec = importlib.util.spec_from_file_location("transformer_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(epochs=6, verbose=0)  # bounded: about 15 s here
    losses = result["history"]["loss"]
    assert losses[-1] < losses[0] / 2
    assert result["test_accuracy"] > 0.8
    out = capsys.readouterr().out
    assert "Number of devices: 8" in out
    assert "block1_attention (MultiHeadAttention)" in out and "Connected to" in out
