"""examples/gan.py trains by fit with its overridden train_step and two optimizers."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gan.py"


@pytest.mark.slow  # compiles the GAN's two-part step (about 10 s on 2 cores)
def test_gan_example_trains_both_parts(capsys):
    spec = importlib.util.spec_from_file_location("gan_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(examples=128, epochs=3, batch_size=32)
    history = result["history"]
    assert set(history) == {"d_loss", "g_loss"}
    assert all(len(v) == 3 and np.isfinite(v).all() for v in history.values())
    # The discriminator learns to tell the bars from the generator's images; the
    # generator's loss (its images called fake) rises meanwhile.
    assert history["d_loss"][-1] < history["d_loss"][0]
    assert history["g_loss"][-1] > history["g_loss"][0]
    assert result["generated"].shape == (4, 8, 8, 1)
    assert "Number of devices: 8" in capsys.readouterr().out
