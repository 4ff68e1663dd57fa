"""`phalanx demo` trains and reports; `phalanx info` reports the runtime."""

import json

import jax

import phalanx.cli


def test_demo_trains_reports_and_writes_tensorboard_logs(tmp_path, capsys):
    logdir = tmp_path / "logs"
    code = phalanx.cli.main(
        [
            "demo",
            "--epochs",
            "8",
            "--verbose",
            "0",
            "--strategy",
            "mirrored",
            "--steps-per-execution",
            "4",
            "--logdir",
            str(logdir),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    accuracy = float(out.split("test accuracy: ")[1].split()[0])
    assert accuracy >= 0.9, out
    assert "examples/s" in out
    (run,) = logdir.iterdir()  # a run folder per run, as TensorBoard users expect
    assert f"TensorBoard logs: {run}  (tensorboard --logdir {logdir})" in out, out
    assert list((run / "train").glob("events.out.tfevents.*"))
    assert list((run / "validation").glob("events.out.tfevents.*"))
    again = ["demo", "--epochs", "2", "--verbose", "0", "--strategy", "mirrored"]
    assert phalanx.cli.main([*again, "--logdir", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert "examples/s (epoch 2, validation included" in out, out  # not "epochs 2-2"
    runs = sorted(logdir.iterdir())
    assert len(runs) == 2 and all(list((r / "train").glob("events.*")) for r in runs), runs


def test_demo_batch_that_does_not_split_over_the_replicas_trains(capsys):
    """A global batch of 60 on 8 replicas is padded to 64 with masked rows (as TF's predict
    does; docs/decisions.md), so the demo trains instead of refusing it."""
    code = phalanx.cli.main(
        [
            "demo",
            "--epochs",
            "1",
            "--verbose",
            "0",
            "--batch-size",
            "60",
            "--strategy",
            "mirrored",
            "--logdir",
            "",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    assert 60 % jax.device_count() != 0  # the batch does not split over the replicas


def test_info_json(capsys):
    assert phalanx.cli.main(["info", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["platform"] == "cpu"
    assert facts["global_device_count"] == 8
    assert facts["process_count"] == 1
    assert facts["strategy"] == "MirroredStrategy"  # as `phalanx demo` would choose
    assert facts["num_replicas_in_sync"] == 8


def test_info_shows_the_resolved_cluster_without_connecting(capsys, monkeypatch):
    for name in ("TF_CONFIG", "SLURM_PROCID", "JOB_COMPLETION_INDEX", "PHALANX_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PHALANX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
    monkeypatch.setenv("PHALANX_NUM_PROCESSES", "4")
    monkeypatch.setenv("PHALANX_PROCESS_ID", "2")
    assert phalanx.cli.main(["info", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["cluster"] == "EnvClusterResolver: process 2 of 4, coordinator 10.0.0.1:1234"
    assert facts["process_count"] == 1  # described, not initialized
    monkeypatch.setenv("PHALANX_CLUSTER", "none")
    assert phalanx.cli.main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cluster"].startswith("none")


def test_demo_mnist_offline_says_what_to_do(tmp_path, monkeypatch, capsys):
    from phalanx.datasets import mnist

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(mnist.urllib.request, "urlopen", offline)
    code = phalanx.cli.main(
        [
            "demo",
            "--dataset",
            "mnist",
            "--data-dir",
            str(tmp_path),
            "--verbose",
            "0",
            "--logdir",
            "",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "offline" in err and "digits" in err and "Traceback" not in err
