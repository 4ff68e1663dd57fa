"""Bad cluster descriptions (``phalanx.cluster``): each raises a phalanx error naming the
variable or value that is wrong. Resolvers read the mappings given; nothing connects."""

import json

import pytest
from catalog import Case, run

from phalanx.cluster import (
    EnvClusterResolver,
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    expand_hostlist,
)
from phalanx.cluster._rendezvous import bind_host, host_roll_call
from phalanx.errors import ClusterConfigError, InitializationError, UnsupportedClusterError


def _env(**kw):
    base = {
        "PHALANX_COORDINATOR_ADDRESS": "127.0.0.1:4000",
        "PHALANX_NUM_PROCESSES": "2",
        "PHALANX_PROCESS_ID": "0",
    }
    base.update(kw)
    return EnvClusterResolver({k: v for k, v in base.items() if v is not None})


def _tf(config):
    return TFConfigClusterResolver(
        tf_config=json.dumps(config) if not isinstance(config, str) else config
    )


def _task(index, kind="worker"):
    return _tf({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": kind, "index": index}})


def _slurm(**kw):
    env = {
        "SLURM_JOB_NODELIST": "n[1-2]",
        "SLURM_PROCID": "0",
        "SLURM_NTASKS": "2",
        "SLURM_JOB_ID": "7",
    }
    env.update(kw)
    return SlurmClusterResolver(environ={k: v for k, v in env.items() if v is not None})


CASES = [
    # PHALANX_* variables
    Case(
        "env port 99999",
        lambda: _env(PHALANX_COORDINATOR_ADDRESS="127.0.0.1:99999"),
        ClusterConfigError,
        r"'127.0.0.1:99999' is 99999, outside 1..65535",
    ),
    Case(
        "env port 0",
        lambda: _env(PHALANX_COORDINATOR_ADDRESS="h:0"),
        ClusterConfigError,
        r"is 0, outside 1..65535",
    ),
    Case(
        "env no port",
        lambda: _env(PHALANX_COORDINATOR_ADDRESS="127.0.0.1"),
        ClusterConfigError,
        r"host:port.*'127.0.0.1'",
    ),
    Case(
        "env missing id",
        lambda: _env(PHALANX_PROCESS_ID=None),
        ClusterConfigError,
        r"PHALANX_PROCESS_ID not set",
    ),
    Case(
        "env id not int",
        lambda: _env(PHALANX_PROCESS_ID="one"),
        ClusterConfigError,
        r"PHALANX_PROCESS_ID must be an integer >= 0, got 'one'",
    ),
    Case(
        "env id negative",
        lambda: _env(PHALANX_PROCESS_ID="-1"),
        ClusterConfigError,
        r"PHALANX_PROCESS_ID .* '-1'",
    ),
    Case(
        "env id out of range",
        lambda: _env(PHALANX_PROCESS_ID="2"),
        ClusterConfigError,
        r"process_id=2 with num_processes=2",
    ),
    Case(
        "env zero processes",
        lambda: _env(PHALANX_NUM_PROCESSES="0"),
        ClusterConfigError,
        r"PHALANX_NUM_PROCESSES must be an integer >= 1, got '0'",
    ),
    Case(
        "env device ids",
        lambda: _env(PHALANX_LOCAL_DEVICE_IDS="0,x"),
        ClusterConfigError,
        r"PHALANX_LOCAL_DEVICE_IDS .* '0,x'",
    ),
    Case(
        "env cpu devices",
        lambda: _env(PHALANX_CPU_DEVICES="0"),
        ClusterConfigError,
        r"PHALANX_CPU_DEVICES must be an integer >= 1, got '0'",
    ),
    Case(
        "simple process id float",
        lambda: SimpleClusterResolver("h:1", 2, 0.5),
        ClusterConfigError,
        r"process_id must be an int >= 0, got 0.5",
    ),
    Case(
        "simple bad address",
        lambda: SimpleClusterResolver("h:port", 2, 0),
        ClusterConfigError,
        r"'h:port'",
    ),
    # TF_CONFIG
    Case(
        "tf_config index not int",
        lambda: _task("x"),
        ClusterConfigError,
        r"task.index must be an integer >= 0.*got 'x'",
    ),
    Case(
        "tf_config index negative", lambda: _task(-1), ClusterConfigError, r"task.index .* got -1"
    ),
    Case("tf_config index float", lambda: _task(1.5), ClusterConfigError, r"task.index .* got 1.5"),
    Case("tf_config index out of job", lambda: _task(5), ClusterConfigError, r"index 5"),
    Case("tf_config not json", lambda: _tf("{cluster"), ClusterConfigError, r"TF_CONFIG"),
    Case(
        "tf_config unknown task type",
        lambda: _task(0, kind="painter"),
        ClusterConfigError,
        r"'painter'",
    ),
    Case(
        "tf_config evaluator",
        lambda: _tf({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": 0}}),
        UnsupportedClusterError,
        r"evaluator",
    ),
    Case(
        "tf_config address without port",
        lambda: _tf({"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 0}}),
        ClusterConfigError,
        r"'a'",
    ),
    # Slurm
    Case(
        "slurm huge node list",
        lambda: expand_hostlist("n[0-99999999]"),
        ClusterConfigError,
        r"'n\[0-99999999\]' names 100000000 or more hosts; at most 65536",
    ),
    Case(
        "slurm nested product",
        lambda: expand_hostlist("a[0-999]b[0-999]"),
        ClusterConfigError,
        r"names 1000000 or more hosts",
    ),
    Case(
        "slurm many items",
        lambda: expand_hostlist(",".join(f"n[0-9999]x{i}" for i in range(8))),
        ClusterConfigError,
        r"names 70000 or more hosts",
    ),
    Case(
        "slurm unbalanced",
        lambda: expand_hostlist("n[1-2"),
        ClusterConfigError,
        r"Unbalanced brackets.*'n\[1-2'",
    ),
    Case(
        "slurm descending",
        lambda: expand_hostlist("n[5-2]"),
        ClusterConfigError,
        r"Descending range '5-2'",
    ),
    Case(
        "slurm malformed range",
        lambda: expand_hostlist("n[a-b]"),
        ClusterConfigError,
        r"Malformed range 'a-b'",
    ),
    Case(
        "slurm tasks per node repeat",
        lambda: _slurm(SLURM_TASKS_PER_NODE="1(x99999999)"),
        ClusterConfigError,
        r"'1\(x99999999\)' describes 99999999 nodes, the node list 2",
    ),
    Case(
        "slurm tasks per node malformed",
        lambda: _slurm(SLURM_TASKS_PER_NODE="two"),
        ClusterConfigError,
        r"Malformed SLURM_TASKS_PER_NODE 'two'",
    ),
    Case(
        "slurm procid not int",
        lambda: _slurm(SLURM_PROCID="x"),
        ClusterConfigError,
        r"SLURM_PROCID .* 'x'",
    ),
    # Roll call
    Case(
        "bind unresolvable host",
        lambda: bind_host("no-such-host.invalid", environ={}),
        InitializationError,
        r"cannot resolve the coordinator host 'no-such-host.invalid'",
    ),
    Case(
        "bind foreign address",
        lambda: host_roll_call(1, 2, timeout=1, address="192.0.2.77:1", hint="", bind="192.0.2.77"),
        InitializationError,
        r"on 192.0.2.77: that is not an address of this machine.*PHALANX_COORDINATOR_BIND_ADDRESS",
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_cluster_input(case):
    run(case)
