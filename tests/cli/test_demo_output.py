"""What ``phalanx demo`` says: its defaults, its data splits, and what its throughput means."""

from __future__ import annotations

import re

from cli_support import phalanx


def test_help_shows_every_default():
    run = phalanx("demo", "--help")
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())  # argparse wraps lines
    for default in ("(default: digits)", "(default: 20)", "(default: 64)", "(default: auto)",
                    "(default: logs/demo)", "(default: 1)"):  # fmt: skip
        assert default in text, f"`phalanx demo --help` lacks {default}:\n{run.stdout}"
    assert "default: None" not in text


def test_one_epoch_reports_validation_held_out_test_apart_and_compile_included(tmp_path):
    run = phalanx(
        "demo", "--epochs", "1", "--verbose", "2", "--logdir", "", "--devices", "1",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.stdout
    # 1438 training examples of the 1797: 10% held out for validation, the test set apart.
    assert "1295 train, 143 validation (held out from the training examples), 359 test" in out
    assert re.search(r"val_accuracy: [\d.]+ - val_loss: [\d.]+", out), out  # Keras 3 order
    assert "(359 test examples, never used in training)" in out
    assert "median" not in out and "compilation included" in out, out
