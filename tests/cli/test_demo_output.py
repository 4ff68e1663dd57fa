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


def test_no_help_text_holds_markup_backticks():
    """Every command's --help is plain text: no reST/markdown backticks (issue 30 item 10)."""
    import argparse

    import phalanx.cli

    def helps(parser, name):
        yield name, parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from helps(child, f"{name} {sub}")

    found = {name: text for name, text in helps(phalanx.cli.build_parser(), "phalanx")}
    assert len(found) >= 6, sorted(found)
    marked = [name for name, text in found.items() if "`" in text]
    assert not marked, {name: found[name] for name in marked}
