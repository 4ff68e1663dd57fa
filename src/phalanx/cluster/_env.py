"""``EnvClusterResolver``: the ``PHALANX_*`` variables that ``phalanx launch`` sets.

Any launcher (a shell loop, a scheduler's job template) can set them too:

================================  ============================================
``PHALANX_COORDINATOR_ADDRESS``   ``host:port`` of process 0 (required)
``PHALANX_NUM_PROCESSES``         the number of processes (required)
``PHALANX_PROCESS_ID``            this process's index, 0-based (required)
``PHALANX_LOCAL_DEVICE_IDS``      accelerator ids for this process, ``0,1`` (optional)
``PHALANX_CPU_DEVICES``           simulated CPU devices per process (optional)
``PHALANX_JOB_SECRET``            the job's secret for the roll call (optional;
                                  ``phalanx launch`` generates one per job)
================================  ============================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import ClusterConfigError
from ._cpu import CPU_DEVICES_ENV
from ._resolver import DEFAULT_TASK_TYPE, ClusterResolver, env_int
from ._spec import ClusterSpec

COORDINATOR_ENV = "PHALANX_COORDINATOR_ADDRESS"
NUM_PROCESSES_ENV = "PHALANX_NUM_PROCESSES"
PROCESS_ID_ENV = "PHALANX_PROCESS_ID"
LOCAL_DEVICE_IDS_ENV = "PHALANX_LOCAL_DEVICE_IDS"
# the launcher's folder for this job (watchdog reports, the ledger), set for each process
RUN_DIR_ENV = "PHALANX_RUN_DIR"

REQUIRED = (COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV)


class EnvClusterResolver(ClusterResolver):
    """Reads the cluster from the ``PHALANX_*`` environment variables.

    ``phalanx launch`` sets them for each process it starts; set them yourself
    to run one process per machine by hand (see the module's table).

    Args:
      environ: the mapping to read (default ``os.environ``); for tests.

    Raises:
      ClusterConfigError: a required variable is missing or malformed.

    Examples:
      >>> env = {"PHALANX_COORDINATOR_ADDRESS": "127.0.0.1:4000",
      ...        "PHALANX_NUM_PROCESSES": "2", "PHALANX_PROCESS_ID": "1"}
      >>> EnvClusterResolver(env).process_id
      1
    """

    def __init__(self, environ: Mapping[str, str] | None = None):
        env = os.environ if environ is None else environ
        missing = [name for name in REQUIRED if not env.get(name, "").strip()]
        if missing:
            raise ClusterConfigError(
                f"EnvClusterResolver needs {', '.join(REQUIRED)}; {', '.join(missing)} "
                "not set. `phalanx launch` sets them; or set all three for each process."
            )
        self._set_processes(
            env[COORDINATOR_ENV].strip(),
            env_int(NUM_PROCESSES_ENV, minimum=1, environ=env),
            env_int(PROCESS_ID_ENV, minimum=0, environ=env),
            environ=env,
        )
        self._local_device_ids = _device_ids(env.get(LOCAL_DEVICE_IDS_ENV, ""))
        self._cpu_devices = env_int(CPU_DEVICES_ENV, minimum=1, environ=env)

    @staticmethod
    def is_present(environ: Mapping[str, str] | None = None) -> bool:
        """True when any of the required ``PHALANX_*`` variables is set."""
        env = os.environ if environ is None else environ
        return any(env.get(name, "").strip() for name in REQUIRED)

    def cluster_spec(self) -> ClusterSpec:
        """Returns ``{"worker": {0: coordinator_address}}``: only process 0's address is known."""
        return ClusterSpec({DEFAULT_TASK_TYPE: {0: self.coordinator_address}})

    def missing_hint(self) -> str:
        """Advice naming the variables each process needs."""
        return (
            f"Each process needs {COORDINATOR_ENV}={self.coordinator_address}, "
            f"{NUM_PROCESSES_ENV}={self.num_processes} and its own {PROCESS_ID_ENV} "
            f"(0..{self.num_processes - 1}); `phalanx launch -n {self.num_processes}` sets them."
        )


def _device_ids(raw: str) -> tuple[int, ...] | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        return tuple(int(x) for x in raw.split(","))
    except ValueError:
        raise ClusterConfigError(
            f"{LOCAL_DEVICE_IDS_ENV} must be comma-separated integers such as '0,1', got {raw!r}."
        ) from None
