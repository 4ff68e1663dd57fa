"""2 processes saving one checkpoint: process 0 writes only once every process has chosen the
same path (``_background.same_path``).

A ``CheckpointManager`` numbers a save from the checkpoints it finds in its folder; a process
that arrived after process 0's rename numbered it one higher and reported a checkpoint that
does not exist (seen in CI: process 0 saved ckpt_2 before preemption, process 1 ckpt_3).
"""

import re

import pytest
from mp_procs import launch


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", [[], ["--async"]], ids=["sync", "async"])
def test_a_late_process_numbers_the_same_checkpoint(tmp_path, mode):
    _, out, err, _ = launch("manager_race.py", tmp_path / "ckpts", *mode, devices=1, timeout=90)
    saved = {p: re.findall(rf"\[{p}\] saved (\S+)", out + err) for p in (0, 1)}
    want = [str(tmp_path / "ckpts" / f"ckpt_{n}") for n in (1, 2, 3)]
    assert saved[0] == saved[1] == want, saved
    listed = re.findall(r"\[(\d)\] listed (.+)", out + err)
    assert sorted(listed) == [("0", "['ckpt_2', 'ckpt_3']"), ("1", "['ckpt_2', 'ckpt_3']")]
    assert sorted(p.name for p in (tmp_path / "ckpts").iterdir()) == ["ckpt_2", "ckpt_3"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_processes_saving_to_different_paths_are_refused_alike(tmp_path):
    _, out, err, _ = launch(
        "manager_race.py", tmp_path / "ckpts", "--different-paths", devices=1, timeout=90
    )
    for p in (0, 1):
        assert re.search(
            rf"\[{p}\] refused: The processes saved a checkpoint to different", out + err
        )
    # Issue 27 item 8: the message says what replaces TF's write_filepath recipe.
    assert "give every process the chief's path" in out + err
    assert not (tmp_path / "ckpts").exists() or not any((tmp_path / "ckpts").iterdir())
