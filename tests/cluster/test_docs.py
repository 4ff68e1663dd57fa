"""docs/many_machines.md (the README's "Many machines" section): its Python blocks run."""

import re
from pathlib import Path

import pytest

import phalanx

DOC = Path(__file__).resolve().parents[2] / "docs" / "many_machines.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_blocks_run(index, monkeypatch, capsys):
    for name in ("PHALANX_COORDINATOR_ADDRESS", "PHALANX_NUM_PROCESSES", "PHALANX_PROCESS_ID", "TF_CONFIG", "SLURM_PROCID", "JOB_COMPLETION_INDEX"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    block = BLOCKS[index]
    exec(compile(block, f"many_machines.md[block {index}]", "exec"), {"__name__": "__doc__"})
    capsys.readouterr()


def test_every_variable_named_in_the_doc_is_read_by_the_code():
    src = Path(phalanx.__file__).parent / "cluster"
    code = "".join(p.read_text() for p in src.glob("*.py"))
    for name in set(
        re.findall(r"`((?:PHALANX|SLURM|JOB|TPU|REPLICATED)_[A-Z_]+)`", DOC.read_text())
    ):
        assert name in code, (
            f"docs/many_machines.md names {name}, which phalanx.cluster never reads"
        )
