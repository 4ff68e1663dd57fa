"""Who the processes are: cluster resolvers, ``initialize()``, simulated devices, the watchdog.

A resolver says which processes form the job and where process 0 (JAX's
coordinator) listens; ``initialize()`` connects them (``jax.distributed``)
with short deadlines and messages that name what is missing. ``resolve()``
picks a resolver from the environment: ``PHALANX_*`` (set by ``phalanx
launch``), ``TF_CONFIG``, Slurm, Kubernetes, a TPU VM, or none.
"""

from ._cpu import CPU_DEVICES_ENV as CPU_DEVICES_ENV
from ._cpu import cpu_device_count_from_env as cpu_device_count_from_env
from ._cpu import set_cpu_device_count as set_cpu_device_count

# The ._devices names (device names, which `phalanx.distribute`, `phalanx.config` and
# `phalanx.data` resolve alike) are for phalanx's own packages: absent from __all__.
from ._devices import PLATFORMS as PLATFORMS
from ._devices import DeviceSpec as DeviceSpec
from ._devices import LogicalDevice as LogicalDevice
from ._devices import PhysicalDevice as PhysicalDevice
from ._devices import device as device
from ._devices import resolve_device as resolve_device
from ._devices import resolve_devices as resolve_devices
from ._devices import simulate_tpu as simulate_tpu
from ._devices import simulated_tpu_cores as simulated_tpu_cores
from ._env import EnvClusterResolver as EnvClusterResolver
from ._initialize import connect_to_cluster as connect_to_cluster
from ._initialize import initialize as initialize
from ._initialize import initialize_tpu_system as initialize_tpu_system
from ._initialize import is_initialized as is_initialized
from ._initialize import shutdown as shutdown
from ._kubernetes import KubernetesClusterResolver as KubernetesClusterResolver
from ._resolve import resolve as resolve
from ._resolver import ClusterResolver as ClusterResolver
from ._resolver import SimpleClusterResolver as SimpleClusterResolver
from ._slurm import SlurmClusterResolver as SlurmClusterResolver
from ._slurm import expand_hostlist as expand_hostlist
from ._spec import ClusterSpec as ClusterSpec
from ._tf_config import TFConfigClusterResolver as TFConfigClusterResolver
from ._tpu import TPUClusterResolver as TPUClusterResolver
from ._watchdog import Watchdog as Watchdog
from ._watchdog import watchdog as watchdog

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the local launcher
# that `phalanx launch`/`run` drive.
from ._launcher import TIMEOUT_EXIT as TIMEOUT_EXIT
from ._launcher import LaunchSpec as LaunchSpec
from ._launcher import launch as launch
from ._resolver import split_address as split_address

__all__ = [
    "CPU_DEVICES_ENV",
    "ClusterResolver",
    "ClusterSpec",
    "EnvClusterResolver",
    "KubernetesClusterResolver",
    "SimpleClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "TPUClusterResolver",
    "Watchdog",
    "connect_to_cluster",
    "cpu_device_count_from_env",
    "expand_hostlist",
    "initialize",
    "initialize_tpu_system",
    "is_initialized",
    "resolve",
    "set_cpu_device_count",
    "shutdown",
    "watchdog",
]
