"""``phalanx info`` and ``phalanx demo`` choose the strategy in one place and agree."""

from __future__ import annotations

import json

import pytest
from cli_support import phalanx


def _info(*args: str, **env: str) -> dict:
    run = phalanx(*args, "info", "--json", **env)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("devices, strategy, replicas", [(1, "OneDeviceStrategy", 1), (4, "MirroredStrategy", 4)])  # fmt: skip
def test_info_reports_the_strategy_demo_trains_with(devices, strategy, replicas, tmp_path):
    facts = _info("--devices", str(devices))
    assert facts["strategy"] == strategy
    assert facts["num_replicas_in_sync"] == replicas
    demo = phalanx(
        "--devices", str(devices), "demo", "--epochs", "1", "--verbose", "0", "--logdir", "",
        cwd=tmp_path,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    assert f"on {strategy} ({replicas} replica" in demo.stdout, demo.stdout


def test_info_counts_the_replicas_of_a_described_cluster():
    facts = _info(
        "--devices", "2",
        PHALANX_COORDINATOR_ADDRESS="10.0.0.1:1234", PHALANX_NUM_PROCESSES="3",
        PHALANX_PROCESS_ID="1",
    )  # fmt: skip
    assert facts["strategy"] == "MultiWorkerMirroredStrategy"
    assert facts["num_replicas_in_sync"] == 6  # 3 processes x 2 devices, not connected
    assert facts["process_count"] == 1


@pytest.mark.parametrize("as_json", [False, True])
def test_info_refuses_an_invalid_cluster_configuration(as_json):
    run = phalanx("info", *(["--json"] if as_json else []), TF_CONFIG="{not json")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "phalanx info: invalid cluster configuration: TF_CONFIG is not valid JSON" in run.stderr
    assert "PHALANX_CLUSTER=none" in run.stderr and "Traceback" not in run.stderr
    if as_json:
        assert json.loads(run.stdout)["cluster"].startswith("invalid: TF_CONFIG")


def test_demo_asked_for_one_device_does_not_read_the_cluster(tmp_path):
    run = phalanx(
        "--devices", "1", "demo", "--strategy", "one_device", "--epochs", "1", "--verbose", "0",
        "--logdir", "", cwd=tmp_path, TF_CONFIG="{not json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "on OneDeviceStrategy (1 replica; asked for)" in run.stdout, run.stdout
