"""``ClusterResolver``: who the processes are, with TensorFlow's surface and JAX's needs.

A resolver answers two sets of questions. TensorFlow's (``cluster_spec()``,
``task_type``, ``task_id``, ``master()``, ``num_accelerators()``,
``rpc_layer``), so code written for ``tf.distribute.cluster_resolver`` keeps
working; and JAX's (``coordinator_address``, ``num_processes``,
``process_id``, ``local_device_ids``), which is all that ``initialize()`` uses.

Resolvers read their environment once, when they are built, and never start
JAX's backends: a resolver can be built and inspected before ``initialize()``.
"""

from __future__ import annotations

import abc
import glob
import os
import re
from collections.abc import Sequence

import jax
from jax._src import xla_bridge

from ..errors import ClusterConfigError
from ._spec import ClusterSpec

DEFAULT_TASK_TYPE = "worker"
JOB_SECRET_ENV = "PHALANX_JOB_SECRET"


class ClusterResolver(abc.ABC):
    """Base class of every resolver (``tf.distribute.cluster_resolver.ClusterResolver``).

    Subclasses set ``_coordinator_address``, ``_num_processes`` and
    ``_process_id`` (through ``_set_processes``) and implement
    ``cluster_spec()``. Process 0 hosts JAX's coordinator service.

    Attributes:
      rpc_layer: the protocol prefix ``master()`` puts before an address
        (``"grpc"``), or None. JAX does not use it.
    """

    rpc_layer: str | None = None
    _local_device_ids: tuple[int, ...] | None = None
    _cpu_devices: int | None = None
    _job_secret: str | None = None
    _task_type: str | None = None  # set by the setter or a subclass; None: the default
    _task_id: int | None = None  # None: the process id

    def _set_processes(
        self, coordinator_address: str, num_processes: int, process_id: int, *, environ=None
    ):
        env = os.environ if environ is None else environ
        self._job_secret = env.get(JOB_SECRET_ENV, "").strip() or None
        self._coordinator_address = check_address(coordinator_address, where=type(self).__name__)
        self._num_processes = _check_int("num_processes", num_processes, minimum=1)
        self._process_id = _check_int("process_id", process_id, minimum=0)
        if self._process_id >= self._num_processes:
            raise ClusterConfigError(
                f"{type(self).__name__}: process_id must be in [0, num_processes), got "
                f"process_id={process_id} with num_processes={num_processes}."
            )

    # JAX's questions -------------------------------------------------------

    @property
    def coordinator_address(self) -> str:
        """``host:port`` of JAX's coordinator service, which process 0 starts."""
        return self._coordinator_address

    @property
    def num_processes(self) -> int:
        """The number of processes in the job (JAX processes, TensorFlow tasks)."""
        return self._num_processes

    @property
    def process_id(self) -> int:
        """This process's index in ``[0, num_processes)``; 0 hosts the coordinator."""
        return self._process_id

    @property
    def local_device_ids(self) -> tuple[int, ...] | None:
        """The accelerator ids this process may use, or None for all visible ones."""
        return self._local_device_ids

    @property
    def cpu_devices(self) -> int | None:
        """Simulated CPU devices per process (``PHALANX_CPU_DEVICES``), or None."""
        return self._cpu_devices

    @property
    def job_secret(self) -> str | None:
        """The job's secret (``PHALANX_JOB_SECRET`` when the resolver was built), or None.

        The roll call of ``initialize()`` admits only processes that sign their
        hello with it; ``phalanx launch`` generates one per job. Never printed.
        """
        return self._job_secret

    # TensorFlow's questions --------------------------------------------------

    @abc.abstractmethod
    def cluster_spec(self) -> ClusterSpec:
        """Returns the cluster's jobs and task addresses."""

    @property
    def task_type(self) -> str:
        """This task's job name (``"chief"`` or ``"worker"``); settable as in TensorFlow."""
        return DEFAULT_TASK_TYPE if self._task_type is None else self._task_type

    @task_type.setter
    def task_type(self, value: str) -> None:
        self._task_type = value

    @property
    def task_id(self) -> int:
        """This task's index within its job; settable as in TensorFlow."""
        return self.process_id if self._task_id is None else self._task_id

    @task_id.setter
    def task_id(self, value: int) -> None:
        self._task_id = value

    @property
    def environment(self) -> str:
        """The environment TensorFlow reads from ``TF_CONFIG`` (``""`` elsewhere)."""
        return ""

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: str | None = None
    ) -> str:
        """Returns a task's address with the rpc layer prefix (``grpc://host:port``).

        Args:
          task_type: the job; defaults to this task's.
          task_id: the task index; defaults to this task's.
          rpc_layer: the prefix; defaults to ``self.rpc_layer``.

        Returns:
          The address, or ``""`` when the spec does not know it (as TensorFlow).
        """
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        spec = self.cluster_spec()
        if task_type not in spec.jobs or task_id not in spec.task_indices(task_type):
            return ""
        address = spec.task_address(task_type, task_id)
        layer = self.rpc_layer if rpc_layer is None else rpc_layer
        return f"{layer}://{address}" if layer else address

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto=None
    ) -> dict[str, int]:
        """Returns this process's accelerators by kind, e.g. ``{"GPU": 8}`` (``{}`` on CPU).

        Safe before ``initialize()``: when JAX has not started its backends the
        count comes from the hardware (TPU chips on the PCI bus, NVIDIA device
        files, ``CUDA_VISIBLE_DEVICES``, ``local_device_ids``), not from JAX.
        ``task_type``, ``task_id`` and ``config_proto`` are accepted for
        TensorFlow's signature; only this process's devices are counted.
        """
        del task_type, task_id, config_proto
        return local_accelerators(self.local_device_ids)

    # Reporting ----------------------------------------------------------------

    def describe(self) -> str:
        """Returns one line for logs: the resolver, this process and the coordinator."""
        return (
            f"{type(self).__name__}: process {self.process_id} of {self.num_processes}, "
            f"coordinator {self.coordinator_address}"
        )

    def missing_hint(self) -> str:
        """Returns advice for when processes never arrive (how this cluster starts them)."""
        return (
            f"Start all {self.num_processes} processes with the same coordinator address and "
            f"process ids 0..{self.num_processes - 1}."
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(coordinator_address={self.coordinator_address!r}, "
            f"num_processes={self.num_processes}, process_id={self.process_id})"
        )


class SimpleClusterResolver(ClusterResolver):
    """A cluster given explicitly (``tf.distribute.cluster_resolver.SimpleClusterResolver``).

    Args:
      coordinator_address: ``host:port`` of process 0, where JAX's coordinator
        service listens; every process passes the same.
      num_processes: the number of processes in the job.
      process_id: this process's index in ``[0, num_processes)``.
      local_device_ids: accelerator ids this process may use (None: all).
      cluster_spec: the TensorFlow-style spec; by default a sparse
        ``{"worker": {0: coordinator_address}}`` (only process 0's address is known).
      task_type: the job name ``task_type`` reports.
      task_id: the index ``task_id`` reports (default: ``process_id``).
      rpc_layer: the prefix ``master()`` uses.

    Raises:
      ClusterConfigError: an address without a port, or a process id out of range.

    Examples:
      >>> r = SimpleClusterResolver("10.0.0.1:1234", num_processes=2, process_id=1)
      >>> r.coordinator_address, r.num_processes, r.process_id, r.master(task_id=0)
      ('10.0.0.1:1234', 2, 1, '10.0.0.1:1234')
    """

    def __init__(
        self,
        coordinator_address: str,
        num_processes: int,
        process_id: int,
        *,
        local_device_ids: Sequence[int] | None = None,
        cluster_spec: ClusterSpec | dict | None = None,
        task_type: str = DEFAULT_TASK_TYPE,
        task_id: int | None = None,
        rpc_layer: str | None = None,
    ):
        self._set_processes(coordinator_address, num_processes, process_id)
        self._local_device_ids = None if local_device_ids is None else tuple(local_device_ids)
        self._spec = ClusterSpec(cluster_spec or {task_type: {0: self.coordinator_address}})
        self._task_type = task_type
        self._task_id = process_id if task_id is None else task_id
        self.rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        """Returns the spec given, or ``{"worker": {0: coordinator_address}}``."""
        return self._spec


# Helpers shared by the resolvers ------------------------------------------------

_ADDRESS = re.compile(r"^(?:[a-z0-9+.-]+://)?(\[[0-9a-fA-F:.]+\]|[^:\[\]/\s]+):(\d{1,5})$")


def split_address(address: str) -> tuple[str, int]:
    """Splits ``host:port`` (``[v6]:port`` too; a ``grpc://`` prefix is dropped).

    Raises:
      ClusterConfigError: not ``host:port`` with a port in 1..65535.
    """
    match = _ADDRESS.match(str(address).strip())
    if match and not 0 < int(match.group(2)) < 65536:
        raise ClusterConfigError(
            f"The port of the coordinator address {address!r} is {int(match.group(2))}, outside "
            "1..65535; give a TCP port such as '10.0.0.1:1234'."
        )
    if not match:
        raise ClusterConfigError(
            f"Expected a coordinator address 'host:port' (e.g. '10.0.0.1:1234'), got {address!r}."
        )
    return match.group(1).strip("[]"), int(match.group(2))


def check_address(address: str, *, where: str) -> str:
    """Returns ``address`` as ``host:port`` without a scheme, or raises naming ``where``."""
    try:
        host, port = split_address(address)
    except ClusterConfigError as e:
        raise ClusterConfigError(f"{where}: {e}") from None
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_int(name: str, value, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ClusterConfigError(f"{name} must be an int >= {minimum}, got {value!r}.")
    return value


def env_int(name: str, *, minimum: int = 0, environ=None) -> int | None:
    """Reads an integer environment variable; None when unset or empty.

    Raises:
      ClusterConfigError: the variable is not an integer ``>= minimum``.
    """
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ClusterConfigError(f"{name} must be an integer >= {minimum}, got {raw!r}.")
    return value


def local_accelerators(local_device_ids: Sequence[int] | None = None) -> dict[str, int]:
    """Counts this machine's accelerators without starting JAX (see ``num_accelerators``)."""
    if xla_bridge.backends_are_initialized():
        counts: dict[str, int] = {}
        for d in jax.local_devices():
            if d.platform != "cpu":
                counts[d.platform.upper()] = counts.get(d.platform.upper(), 0) + 1
        return counts
    tpus = tpu_chip_count()
    if tpus:
        return {"TPU": tpus}
    gpus = _nvidia_gpu_count()
    if local_device_ids is not None:
        gpus = min(gpus, len(local_device_ids))
    return {"GPU": gpus} if gpus else {}


def tpu_chip_count() -> int:
    """Returns the number of TPU chips on this machine's PCI bus (0 off TPU VMs)."""
    try:
        from jax._src import hardware_utils  # local: inside the try (a private JAX module)

        return int(hardware_utils.num_available_tpu_chips_and_device_id()[0])
    except Exception:  # a jax without hardware_utils, or an unreadable /sys
        return 0


def _nvidia_gpu_count() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    present = len(glob.glob("/dev/nvidia[0-9]*"))
    if visible is None:
        return present
    ids = [v for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    return min(len(ids), present)
