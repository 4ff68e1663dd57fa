"""examples/custom_loop.py runs and trains (the seeds' custom loop, ported)."""

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_loop.py"


def test_custom_loop_example_trains(capsys):
    spec = importlib.util.spec_from_file_location("custom_loop_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main()
    losses = [loss for loss, _ in result["history"].values()]
    assert losses[-1] < losses[0]
    assert result["test_accuracy"] > 0.85
    assert "Number of devices: 8" in capsys.readouterr().out
