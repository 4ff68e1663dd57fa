"""initialize() in this (already started, 8-device) test process: the checks before JAX."""

import pytest

from phalanx import errors
from phalanx.cluster import (
    SimpleClusterResolver,
    connect_to_cluster,
    initialize,
    initialize_tpu_system,
    is_initialized,
    shutdown,
)
from phalanx.cluster._initialize import current_resolver

CLUSTER_VARS = ("PHALANX_COORDINATOR_ADDRESS", "PHALANX_NUM_PROCESSES", "PHALANX_PROCESS_ID", "PHALANX_CPU_DEVICES", "TF_CONFIG", "SLURM_PROCID", "JOB_COMPLETION_INDEX", "TPU_WORKER_HOSTNAMES")  # fmt: skip


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    for name in CLUSTER_VARS:
        monkeypatch.delenv(name, raising=False)
    yield
    shutdown()


def test_no_cluster_is_one_process():
    assert initialize() is None
    assert not is_initialized() and current_resolver() is None


def test_after_jax_started_the_error_says_how_to_fix_it():
    resolver = SimpleClusterResolver("127.0.0.1:1234", num_processes=2, process_id=1)
    with pytest.raises(errors.BackendAlreadyStartedError, match="first thing in the script"):
        initialize(resolver)


def test_one_process_cluster_is_idempotent_and_refuses_another():
    one = SimpleClusterResolver("127.0.0.1:1234", num_processes=1, process_id=0)
    assert initialize(one) is one
    assert initialize(SimpleClusterResolver("127.0.0.1:1234", 1, 0)) is one  # same cluster
    assert connect_to_cluster(one) is one and initialize_tpu_system(one) is one
    with pytest.raises(errors.ClusterMismatchError, match="shutdown"):
        initialize(SimpleClusterResolver("127.0.0.1:999", 1, 0))
    shutdown()
    assert current_resolver() is None
