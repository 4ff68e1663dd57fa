"""`phalanx info --memory`: the platform's memory counters per device, and a model's bytes
per device replicated vs sharded from XLA's memory analysis of its compiled training step."""

import json

from cli_support import phalanx as run_phalanx

import phalanx.cli

# phalanx demo's model: Dense(64 -> 128) and Dense(128 -> 10), float32.
DEMO_PARAMS = 64 * 128 + 128 + 128 * 10 + 10
# On 8 sharded devices both kernels are split in 8 (axis of 128); biases stay whole.
DEMO_SHARDED_8 = (64 * 128 + 128 * 10) // 8 * 4 + (128 + 10) * 4


def test_memory_json_on_8_simulated_devices(capsys):
    assert phalanx.cli.main(["info", "--memory", "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert [d["memory_stats"] for d in memory["devices"]] == [None] * 8  # CPU reports none
    assert memory["model_name"] == "demo" and memory["batch_size"] == 64
    replicated, sharded = memory["model"]
    assert (replicated["layout"], sharded["layout"]) == ("replicated", "sharded")
    assert replicated["params"] == sharded["params"] == DEMO_PARAMS
    assert replicated["parameters"] == DEMO_PARAMS * 4
    assert sharded["parameters"] == DEMO_SHARDED_8
    # Adam's two moments (and a step count) split as the parameters are
    assert 2 * DEMO_PARAMS * 4 <= replicated["optimizer_state"] < 2 * DEMO_PARAMS * 4 + 64
    assert sharded["optimizer_state"] < replicated["optimizer_state"] / 5
    for row in (replicated, sharded):
        state = row["parameters"] + row["optimizer_state"]
        assert row["arguments"] >= state and row["temporaries"] > 0
        assert (
            row["peak"] == row["arguments"] + row["outputs"] - row["aliased"] + row["temporaries"]
        )
    assert sharded["arguments"] < replicated["arguments"] / 2


def test_memory_text_through_the_command():
    result = run_phalanx("--devices", "2", "info", "--memory", "--model", "mlp")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "num_replicas_in_sync  2" in out  # the usual report comes first
    assert "cpu:0 .. cpu:1 (2): not reported by the platform (cpu: memory_stats() is None)" in out
    assert "model 'mlp': TensorFlow's MNIST tutorial model" in out and "101,770 params" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[-2:]}
    assert rows["replicated"][1:3] == ["397.54", "KB"]  # 101,770 x 4 bytes
    assert rows["sharded"][1:3] == ["199.04", "KB"]  # the kernels halved, biases whole


def test_memory_batch_must_split_over_the_devices(capsys):
    assert phalanx.cli.main(["info", "--memory", "--batch-size", "12"]) == 2
    err = capsys.readouterr().err
    assert "--batch-size must be a positive multiple of the 8 local devices" in err
    assert "got 12" in err and "Try --batch-size 64" in err


def test_model_and_batch_size_without_memory_are_refused(capsys):
    for flags in (["--model", "transformer"], ["--batch-size", "64"]):
        assert phalanx.cli.main(["info", *flags]) == 2
        assert "choose what --memory analyses; add --memory" in capsys.readouterr().err
