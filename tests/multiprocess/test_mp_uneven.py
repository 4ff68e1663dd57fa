"""Per-process inputs of unequal lengths stop every process together, with a warning."""

import pytest
from mp_procs import launch, load


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_unequal_shares_stop_all_processes_in_step(tmp_path):
    _, out, err, _ = launch("uneven.py", tmp_path)
    shares = load(tmp_path)
    # 4 batches each epoch on the shorter process, x 2 epochs: 8 steps on both.
    assert [int(s["steps"]) for s in shares] == [8, 8]
    assert "processes [0] had more batches than the others" in out + err
