"""Every ```python block in README.md and docs/*.md runs as written, in a fresh process.

A block runs alone, as a reader would paste it, in an empty temporary directory,
on one CPU device. Two HTML comments on the line before a block change that
(docs/decisions.md, "Documentation"):

- ``<!-- continues -->``: the block continues the previous python block of the
  same file; it runs after it, in the same process.
- ``<!-- devices: N -->``: run with N simulated CPU devices (what
  ``phalanx --devices N`` gives).
- ``<!-- slow -->``: the block takes several seconds (pytest's ``slow`` mark;
  ``-m "not slow"`` skips it, CI runs it).

Several marks go in one comment or in consecutive ones.

A block passes when it exits 0 and writes nothing to stderr: a warning, a log line, or a
traceback at exit ("Exception ignored in ...", a thread's error) is what a reader would see
and fails it as an error would.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests_support import child_xla_flags

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", flags=re.S | re.M)
MARKS = re.compile(r"(?:<!--[^>]*-->\s*)+$")
MARK = re.compile(r"continues|slow|devices:\s*\d+")
TIMEOUT_S = 180


@dataclasses.dataclass
class Block:
    file: str
    line: int
    code: str
    devices: int = 1
    slow: bool = False

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _blocks() -> list[Block]:
    blocks = []
    for doc in DOCS:
        text = doc.read_text()
        previous: Block | None = None
        for fence in FENCE.finditer(text):
            if fence.group(1) != "python":
                continue
            before = text[: fence.start()]
            comments = MARKS.search(before)
            marks = MARK.findall(comments.group(0)) if comments else []
            line = before.count("\n") + 1
            block = Block(doc.relative_to(ROOT).as_posix(), line, fence.group(2))
            for mark in marks:
                if mark == "continues":
                    assert previous is not None, f"{block.id}: nothing before it to continue"
                    block.code = previous.code + "\n" + block.code
                    block.devices = previous.devices
                elif mark == "slow":
                    block.slow = True
                else:
                    block.devices = int(mark.split(":")[1])
            blocks.append(block)
            previous = block
    return blocks


BLOCKS = _blocks()


def _env(devices: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PHALANX_", "SLURM_", "TPU_", "XLA_"))
        and k not in ("TF_CONFIG", "JOB_COMPLETION_INDEX")
    }
    env["JAX_PLATFORMS"] = "cpu"
    # The suite's compile flags (tests/conftest.py: faster XLA:CPU compiles, same results);
    # no device count but the block's own.
    env["XLA_FLAGS"] = child_xla_flags()
    if devices > 1:
        env["XLA_FLAGS"] += f" --xla_force_host_platform_device_count={devices}"
    return env


def test_blocks_are_found():
    files = {b.file for b in BLOCKS}
    assert {"README.md", "docs/input_pipelines.md", "docs/tfrecord.md"} <= files, files


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in BLOCKS],
)
def test_python_block_runs_as_written(block, tmp_path):
    run = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=_env(block.devices),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert run.returncode == 0, (
        f"{block.id}: the block exited {run.returncode}, expected 0 "
        f"({block.devices} CPU device(s), cwd an empty folder). Fix the block, or mark it "
        f"`<!-- continues -->` if it continues the one before.\n{run.stderr[-3000:]}"
    )
    assert not run.stderr, (
        f"{block.id}: the block exited 0 but wrote to stderr (a warning, a log line or a "
        "traceback at exit, which a reader would see); expected nothing there. Fix the block "
        f"or the code that writes it:\n{run.stderr[-3000:]}"
    )


@pytest.mark.parametrize(
    "code",
    [
        "import warnings\nwarnings.warn('deprecated')\n",  # a warning
        "import sys\nprint('note', file=sys.stderr)\n",  # a log line on stderr
        "import atexit\natexit.register(lambda: 1 / 0)\n",  # a traceback at exit, status 0
    ],
    ids=["warning", "stderr", "traceback-at-exit"],
)
def test_a_block_that_exits_0_but_writes_to_stderr_fails(code, tmp_path):
    with pytest.raises(AssertionError, match="exited 0 but wrote to stderr"):
        test_python_block_runs_as_written(Block("README.md", 1, code), tmp_path)
