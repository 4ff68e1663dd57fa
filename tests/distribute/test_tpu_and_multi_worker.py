"""TPUStrategy's defaults and errors; MultiWorkerMirroredStrategy in one process."""

import warnings

import jax
import numpy as np
import pytest

import phalanx
from phalanx.distribute import CommunicationOptions


def test_tpu_strategy_without_tpu_says_what_to_do():
    with pytest.raises(RuntimeError, match=r"found no TPU.*8 cpu device.*jax\[tpu\].*simulate"):
        phalanx.TPUStrategy()


def test_tpu_strategy_warns_once_about_batch_multiple_of_128():
    s = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    assert s.compute_dtype == "bfloat16"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.shard_batch(np.ones((64, 2), np.float32))
        s.shard_batch(np.ones((64, 2), np.float32))
        s.shard_batch(np.ones((8 * 128, 2), np.float32))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert "per-replica batch is 8, not a multiple of 128" in messages[0]
    assert "global batch of 1024" in messages[0]


def test_tpu_strategy_compute_dtype_validated():
    with pytest.raises(ValueError, match="compute_dtype"):
        phalanx.TPUStrategy(compute_dtype="float16", experimental_simulate_on_cpu=True)


def test_multi_worker_without_cluster_is_one_process():
    s = phalanx.MultiWorkerMirroredStrategy()
    assert s.num_replicas_in_sync == jax.device_count()
    assert s.cluster_resolver is None
    assert "1 process(es)" in repr(s)


def test_communication_options_validated():
    with pytest.raises(ValueError, match="timeout_seconds"):
        CommunicationOptions(timeout_seconds=-1)


def test_communication_timeout_is_the_watchdog_deadline():
    from phalanx.cluster import watchdog

    before = watchdog.timeout
    try:
        phalanx.MultiWorkerMirroredStrategy(
            communication_options=CommunicationOptions(timeout_seconds=42.0)
        )
        assert watchdog.timeout == 42.0
    finally:
        watchdog.configure(timeout=before)


def test_device_tpu_names_a_simulated_core():
    s = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    with phalanx.device("/TPU:0") as d:
        x = jax.numpy.ones(3)
    assert d == s.devices[0] and x.devices() == {s.devices[0]}
    with phalanx.device("/device:TPU:7") as d:
        pass
    assert d == s.devices[7]


SIMULATED_SCRIPT = """
import jax, phalanx
print("mirrored", phalanx.MirroredStrategy().num_replicas_in_sync)
print("multi_worker", phalanx.MultiWorkerMirroredStrategy().num_replicas_in_sync)
s = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
print("tpu", s.num_replicas_in_sync)
with phalanx.device("/TPU:0") as d:
    print("device", d == s.devices[0])
"""


def test_phalanx_cpu_devices_gives_every_strategy_its_replicas(tmp_path):
    """``PHALANX_CPU_DEVICES=8 python script.py``: the same 8 replicas for every strategy."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PHALANX_CPU_DEVICES": "8", "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run(
        [sys.executable, "-c", SIMULATED_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "mirrored",
        "8",
        "multi_worker",
        "8",
        "tpu",
        "8",
        "device",
        "True",
    ]
