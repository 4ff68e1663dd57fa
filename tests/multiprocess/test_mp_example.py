"""``phalanx launch -n 2 --devices-per-process 2 -- examples/multi_worker.py`` runs as documented."""

import re
from pathlib import Path

import pytest
from mp_procs import Launcher

EXAMPLE = Path(__file__).parents[2] / "examples" / "multi_worker.py"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_multi_worker_example_through_the_launcher():
    launcher = Launcher("-n", "2", "--devices-per-process", "2", "--", str(EXAMPLE))
    code, out, err, seconds = launcher.finish(timeout=80)
    print(f"examples/multi_worker.py, 2 processes x 2 devices: {seconds:.1f} s")
    assert code == 0, out + err
    said = dict(
        re.findall(r"^\[(\d)\] process \1 of 2, 4 replicas: .*test accuracy ([\d.]+)$", out, re.M)
    )
    assert said.keys() == {"0", "1"}, out
    assert said["0"] == said["1"] and float(said["0"]) > 0.8, said
    assert "[0] Epoch 5/5" in out and "[1] Epoch" not in out  # process 0 alone prints progress
