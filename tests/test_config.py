"""phalanx.config: tf.config's device listing, as the seeds call it."""

import jax
import pytest

import phalanx
from phalanx.errors import DeviceNotFoundError


def test_logical_devices_are_the_simulated_cpus_named_as_tensorflow():
    cpus = phalanx.config.list_logical_devices("CPU")
    assert [d.name for d in cpus] == [f"/device:CPU:{i}" for i in range(8)]
    assert {d.device_type for d in cpus} == {"CPU"}
    # No GPU here; a simulated TPUStrategy made earlier in the process adds its TPU cores.
    assert phalanx.config.list_logical_devices() == cpus + phalanx.config.list_logical_devices(
        "TPU"
    )
    assert phalanx.config.list_logical_devices("gpu") == []
    # A name goes back into phalanx.device and the strategies, as in TensorFlow.
    strategy = phalanx.MirroredStrategy(devices=[d.name for d in cpus[:2]])
    assert strategy.num_replicas_in_sync == 2
    with phalanx.device(cpus[3].name) as device:
        assert device == jax.devices()[3]


def test_physical_devices_count_the_machine_not_the_simulated_devices():
    assert phalanx.config.list_physical_devices() == [
        phalanx.config.PhysicalDevice("/physical_device:CPU:0", "CPU")
    ]
    assert not phalanx.config.list_physical_devices("GPU")  # the seeds' "is there a GPU?"


def test_simulated_tpu_cores_are_logical_tpu_devices():
    strategy = phalanx.TPUStrategy(experimental_simulate_on_cpu=True)
    try:
        tpus = phalanx.config.list_logical_devices("TPU")
        assert len(tpus) == strategy.num_replicas_in_sync
        assert tpus[0] == phalanx.config.LogicalDevice("/device:TPU:0", "TPU")
        assert phalanx.config.list_physical_devices("TPU") == []
        with phalanx.device(tpus[0].name) as device:
            assert device.platform == "cpu"
    finally:
        phalanx.cluster.simulate_tpu(())  # later tests expect no simulated TPU


@pytest.mark.parametrize("kind", ["FPGA", "gpu0", 3])
def test_an_unknown_device_type_says_which_exist(kind):
    with pytest.raises(DeviceNotFoundError, match="expected 'CPU', 'GPU' or 'TPU'"):
        phalanx.config.list_logical_devices(kind)
