"""Resolvers parse their environments without a cluster; resolve() picks them in order."""

import json

import pytest

from phalanx import errors
from phalanx.cluster import (
    ClusterResolver,
    ClusterSpec,
    EnvClusterResolver,
    KubernetesClusterResolver,
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    TPUClusterResolver,
    expand_hostlist,
    resolve,
)

# TF_CONFIG -----------------------------------------------------------------------

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2223"], "evaluator": ["e:1"]}


@pytest.mark.parametrize(
    ("task", "process_id"),
    [
        ({"type": "chief", "index": 0}, 0),
        ({"type": "worker", "index": 0}, 1),
        ({"type": "worker", "index": 1}, 2),
    ],
)
def test_tf_config_chief_is_process_zero_workers_follow(monkeypatch, task, process_id):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": task}))
    r = TFConfigClusterResolver()
    assert (r.process_id, r.num_processes, r.coordinator_address) == (process_id, 3, "h0:2222")
    assert (r.task_type, r.task_id) == (task["type"], task["index"])
    assert r.cluster_spec().as_dict() == CLUSTER
    assert r.master() == f"grpc://{CLUSTER[task['type']][task['index']]}"
    assert r.master(rpc_layer="") == CLUSTER[task["type"]][task["index"]]


def test_tf_config_without_chief_uses_worker_zero():
    r = TFConfigClusterResolver(
        tf_config={"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}
    )
    assert (r.coordinator_address, r.num_processes, r.process_id) == ("a:1", 2, 1)


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}}, "evaluator.*side job"),
        (
            {"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
            r"ParameterServerStrategy\) is not supported",
        ),
    ],
)
def test_tf_config_refuses_evaluator_and_ps(config, match):
    with pytest.raises(errors.UnsupportedClusterError, match=match):
        TFConfigClusterResolver(tf_config=config)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("{not json", "not valid JSON"),
        ('{"task": {"type": "worker", "index": 0}}', "no 'cluster'"),
        ('{"cluster": {"worker": ["a:1", "b:1"]}}', "no 'task'"),
        (
            '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}',
            "not in its cluster",
        ),
        (
            '{"cluster": {"worker": ["nohost"]}, "task": {"type": "worker", "index": 0}}',
            "host:port",
        ),
    ],
)
def test_tf_config_errors_say_what_is_wrong(raw, match):
    with pytest.raises(errors.ClusterConfigError, match=match):
        TFConfigClusterResolver(tf_config=raw)


def test_tf_config_unset(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(errors.ClusterConfigError, match="TF_CONFIG environment variable"):
        TFConfigClusterResolver()


# Slurm ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hostlist", "hosts"),
    [
        ("node01", ["node01"]),
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("a[1-2],b3", ["a1", "a2", "b3"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("x[001-002],y[9,11]", ["x001", "x002", "y9", "y11"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("h1, h2", ["h1", "h2"]),
    ],
)
def test_expand_hostlist(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("bad", ["node[01-03", "node]1[", "node[a-b]", "node[5-3]", ""])
def test_expand_hostlist_errors(bad):
    with pytest.raises(errors.ClusterConfigError):
        expand_hostlist(bad)


def _slurm(**extra):
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": "node[01-02],login7",
        "SLURM_NTASKS": "5",
        "SLURM_TASKS_PER_NODE": "2(x2),1",
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
    }
    env.update(extra)
    return env


def test_slurm_block_distribution_and_default_port():
    r = SlurmClusterResolver(environ=_slurm())
    port = 4242 % 4096 + 61440  # JAX's choice, so jobs sharing a node differ
    assert r.coordinator_address == f"node01:{port}"
    assert (r.num_processes, r.process_id, r.task_type, r.task_id) == (5, 3, "worker", 3)
    assert r.cluster_spec().as_dict() == {
        "worker": [
            f"node01:{port}",
            f"node01:{port + 1}",
            f"node02:{port}",
            f"node02:{port + 1}",
            f"login7:{port}",
        ]
    }
    assert r.local_device_ids == (1,)  # several tasks per node: one device each, as JAX


def test_slurm_step_variables_win_and_port_base():
    env = _slurm(
        SLURM_STEP_NODELIST="c[5-6]",
        SLURM_STEP_NUM_TASKS="2",
        SLURM_STEP_TASKS_PER_NODE="1(x2)",
        SLURM_PROCID="1",
        SLURM_LOCALID="0",
    )
    r = SlurmClusterResolver(port_base=9000, gpus_per_task=4, environ=env)
    assert (r.coordinator_address, r.num_processes, r.process_id) == ("c5:9000", 2, 1)
    assert r.master() == "c6:9000"
    assert r.local_device_ids == (0, 1, 2, 3)


def test_slurm_even_split_without_tasks_per_node():
    env = _slurm(SLURM_JOB_NODELIST="n[1-2]", SLURM_NTASKS="4", SLURM_PROCID="2")
    del env["SLURM_TASKS_PER_NODE"]
    r = SlurmClusterResolver(environ=env)
    assert [a.split(":")[0] for a in r.cluster_spec().job_tasks("worker")] == [
        "n1",
        "n1",
        "n2",
        "n2",
    ]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"SLURM_PROCID": None}, "SLURM_PROCID"),
        ({"SLURM_NTASKS": "x"}, "SLURM_NTASKS must be an integer"),
        ({"SLURM_TASKS_PER_NODE": "2(x4)"}, "describes 4 nodes"),
        ({"SLURM_PROCID": "5"}, "process_id must be in"),
    ],
)
def test_slurm_errors(change, match):
    env = {k: v for k, v in {**_slurm(), **change}.items() if v is not None}
    with pytest.raises(errors.ClusterConfigError, match=match):
        SlurmClusterResolver(environ=env)


# Kubernetes ----------------------------------------------------------------------


def test_kubernetes_indexed_job_derives_the_coordinator_from_the_host_name():
    env = {"JOB_COMPLETION_INDEX": "3", "PHALANX_NUM_PROCESSES": "4"}
    r = KubernetesClusterResolver(
        environ=env, hostname="train-3.train-svc.default.svc.cluster.local"
    )
    assert r.coordinator_address == "train-0.train-svc.default.svc.cluster.local:8476"
    assert (r.num_processes, r.process_id) == (4, 3)


def test_kubernetes_jobset_global_index_and_port():
    env = {
        "JOB_COMPLETION_INDEX": "1",
        "JOB_INDEX": "2",
        "REPLICATED_JOB_REPLICAS": "3",
        "PHALANX_NUM_PROCESSES": "6",
        "PHALANX_COORDINATOR_PORT": "1234",
    }
    r = KubernetesClusterResolver(environ=env, hostname="js-workers-2-1.js")
    assert (r.process_id, r.num_processes, r.coordinator_address) == (
        5,
        6,
        "js-workers-0-0.js:1234",
    )


def test_kubernetes_explicit_coordinator():
    env = {
        "JOB_COMPLETION_INDEX": "0",
        "PHALANX_NUM_PROCESSES": "2",
        "PHALANX_COORDINATOR_ADDRESS": "lead:99",
    }
    assert (
        KubernetesClusterResolver(environ=env, hostname="whatever").coordinator_address == "lead:99"
    )


@pytest.mark.parametrize(
    ("env", "host", "match"),
    [
        ({"JOB_COMPLETION_INDEX": "0"}, "j-0", "PHALANX_NUM_PROCESSES"),
        ({"PHALANX_NUM_PROCESSES": "2"}, "j-0", "JOB_COMPLETION_INDEX"),
        ({"JOB_COMPLETION_INDEX": "1", "PHALANX_NUM_PROCESSES": "2"}, "laptop", "Cannot derive"),
        (
            {
                "JOB_COMPLETION_INDEX": "1",
                "PHALANX_NUM_PROCESSES": "3",
                "REPLICATED_JOB_REPLICAS": "2",
            },
            "j-1",
            "does not divide",
        ),
    ],
)
def test_kubernetes_errors(env, host, match):
    with pytest.raises(errors.ClusterConfigError, match=match):
        KubernetesClusterResolver(environ=env, hostname=host)


# TPU VM --------------------------------------------------------------------------


def test_tpu_gke_pod_hosts():
    env = {"TPU_WORKER_HOSTNAMES": "t-0,t-1,t-2,t-3", "TPU_WORKER_ID": "2"}
    r = TPUClusterResolver(environ=env)
    assert (r.coordinator_address, r.num_processes, r.process_id) == ("t-0:8482", 4, 2)
    assert r.master() == "t-2:8482"


def test_tpu_gce_metadata_and_multislice():
    metadata = {
        "worker-network-endpoints": "w0:0:10.0.0.1,w1:1:10.0.0.2",
        "agent-worker-number": "1",
        "tpu-env": "MEGASCALE_NUM_SLICES: '2'\nMEGASCALE_SLICE_ID: '1'\nMEGASCALE_COORDINATOR_ADDRESS: '10.9.9.9:8080'",
    }
    r = TPUClusterResolver(environ={"TPU_ACCELERATOR_TYPE": "v5p-16"}, metadata=metadata.get)
    assert (r.num_processes, r.process_id, r.coordinator_address) == (4, 3, "10.9.9.9:8482")
    assert r.cluster_spec().as_dict()["worker"][3] == "10.0.0.2:8482"


@pytest.mark.parametrize(
    ("tpu", "env", "match"),
    [
        ("grpc://10.0.0.2:8470", {}, "TPU Node.*TPU VM"),
        (None, {"COLAB_TPU_ADDR": "10.0.0.2:8470"}, "COLAB_TPU_ADDR.*TPU VM"),
        ("my-tpu", {}, "look up a TPU by name.*TPU VM"),
    ],
)
def test_tpu_node_is_refused_with_the_fix(tpu, env, match):
    with pytest.raises(errors.UnsupportedClusterError, match=match):
        TPUClusterResolver(tpu, environ=env)


def test_tpu_off_a_tpu_vm():
    with pytest.raises(errors.ClusterConfigError, match="found no TPU"):
        TPUClusterResolver(environ={})


# PHALANX_*, Simple, ClusterSpec ----------------------------------------------------

ENV = {
    "PHALANX_COORDINATOR_ADDRESS": "127.0.0.1:4000",
    "PHALANX_NUM_PROCESSES": "4",
    "PHALANX_PROCESS_ID": "2",
}


def test_env_resolver():
    r = EnvClusterResolver({**ENV, "PHALANX_CPU_DEVICES": "2", "PHALANX_LOCAL_DEVICE_IDS": "0,1"})
    assert (r.coordinator_address, r.num_processes, r.process_id) == ("127.0.0.1:4000", 4, 2)
    assert (r.cpu_devices, r.local_device_ids) == (2, (0, 1))
    assert r.num_accelerators() == {}  # CPU only, and JAX's backends are not consulted


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"PHALANX_PROCESS_ID": ""}, "PHALANX_PROCESS_ID not set"),
        ({"PHALANX_PROCESS_ID": "4"}, r"process_id must be in \[0, num_processes\)"),
        ({"PHALANX_NUM_PROCESSES": "two"}, "PHALANX_NUM_PROCESSES must be an integer"),
        ({"PHALANX_COORDINATOR_ADDRESS": "127.0.0.1"}, "host:port"),
    ],
)
def test_env_resolver_errors(change, match):
    with pytest.raises(errors.ClusterConfigError, match=match):
        EnvClusterResolver({**ENV, **change})


def test_simple_resolver_and_spec():
    r = SimpleClusterResolver("[::1]:1234", num_processes=2, process_id=0, rpc_layer="grpc")
    assert isinstance(r, ClusterResolver)
    assert r.coordinator_address == "[::1]:1234"
    assert r.master() == "grpc://[::1]:1234"
    assert r.cluster_spec() == ClusterSpec({"worker": {0: "[::1]:1234"}})
    assert "process 0 of 2" in r.describe()
    with pytest.raises(errors.ClusterConfigError, match="process_id must be in"):
        SimpleClusterResolver("h:1", num_processes=2, process_id=2)


def test_cluster_spec_surface():
    spec = ClusterSpec({"worker": ["a:1", "b:2"], "chief": {0: "c:3"}})
    assert spec.jobs == ["worker", "chief"]
    assert spec.as_dict() == {"worker": ["a:1", "b:2"], "chief": {0: "c:3"}}
    assert (
        spec.num_tasks("worker"),
        spec.task_indices("worker"),
        spec.task_address("chief", 0),
    ) == (2, [0, 1], "c:3")
    with pytest.raises(ValueError, match="No job 'ps'"):
        spec.task_address("ps", 0)


# resolve() -----------------------------------------------------------------------

TF = json.dumps({"cluster": {"worker": ["w0:1", "w1:1"]}, "task": {"type": "worker", "index": 1}})
SLURM = _slurm()
K8S = {
    "JOB_COMPLETION_INDEX": "0",
    "PHALANX_NUM_PROCESSES": "2",
    "PHALANX_COORDINATOR_ADDRESS": "j-0.s:1",
}
TPU = {"TPU_WORKER_HOSTNAMES": "t0,t1", "TPU_WORKER_ID": "1"}


@pytest.mark.parametrize(
    ("env", "kind"),
    [
        ({}, None),
        ({**ENV, "TF_CONFIG": TF, **SLURM}, EnvClusterResolver),
        ({"TF_CONFIG": TF, **SLURM, **K8S}, TFConfigClusterResolver),
        ({**SLURM, **K8S, **TPU}, SlurmClusterResolver),
        (K8S, KubernetesClusterResolver),
        ({**K8S, **TPU}, TPUClusterResolver),  # GKE TPU pods are Indexed Jobs too
        (TPU, TPUClusterResolver),
        ({**ENV, "PHALANX_CLUSTER": "none"}, None),
        ({**ENV, **SLURM, "PHALANX_CLUSTER": "slurm"}, SlurmClusterResolver),
    ],
)
def test_resolve_order(env, kind):
    r = resolve(env)
    assert r is None if kind is None else type(r) is kind


def test_resolve_reads_os_environ(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    assert resolve().process_id == 2


def test_resolve_unknown_forced_kind():
    with pytest.raises(errors.ClusterConfigError, match="PHALANX_CLUSTER='mpi' is not one of"):
        resolve({"PHALANX_CLUSTER": "mpi"})
