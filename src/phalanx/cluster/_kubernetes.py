"""``KubernetesClusterResolver``: the cluster of an Indexed Job or a JobSet.

No Kubernetes API call is made: everything comes from the environment and
the pod's host name, so the pod needs no service-account permissions.

=============================  ===============================================
``JOB_COMPLETION_INDEX``       the pod's index in its Job; Kubernetes sets it in
                               every pod of a Job with ``completionMode: Indexed``
``PHALANX_NUM_PROCESSES``      the number of processes (required): the Job's
                               ``completions``, times the replicas for a JobSet
``PHALANX_COORDINATOR_ADDRESS``  ``host:port`` of process 0 (optional; see below)
``PHALANX_COORDINATOR_PORT``   the port when the address is derived (default 8476)
``JOB_INDEX``                  JobSet only: the Job's index among its replicas, from
                               the annotation ``jobset.sigs.k8s.io/job-index``
``REPLICATED_JOB_REPLICAS``    JobSet only: the number of Jobs, from the annotation
                               ``jobset.sigs.k8s.io/replicatedjob-replicas``
=============================  ===============================================

For a JobSet, map the two annotations to variables with the downward API
(``valueFrom.fieldRef.fieldPath: metadata.annotations['jobset.sigs.k8s.io/job-index']``);
the process id is then ``JOB_INDEX * pods_per_job + JOB_COMPLETION_INDEX``.

Without ``PHALANX_COORDINATOR_ADDRESS`` the coordinator is derived from the
pod's fully qualified host name, which a headless Service (the pod template's
``subdomain``; JobSet's ``network.enableDNSHostnames``) makes resolvable:
an Indexed Job's pod ``train-3.svc.ns.svc.cluster.local`` has coordinator
``train-0.svc.ns.svc.cluster.local``; a JobSet pod ``js-workers-1-3.js...`` has
``js-workers-0-0.js...``.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping

from ..errors import ClusterConfigError
from ._env import COORDINATOR_ENV, NUM_PROCESSES_ENV
from ._resolver import DEFAULT_TASK_TYPE, ClusterResolver, env_int
from ._spec import ClusterSpec

COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_INDEX_ENV = "JOB_INDEX"
REPLICAS_ENV = "REPLICATED_JOB_REPLICAS"
PORT_ENV = "PHALANX_COORDINATOR_PORT"
DEFAULT_PORT = 8476


class KubernetesClusterResolver(ClusterResolver):
    """Reads the cluster of a Kubernetes Indexed Job or JobSet from the pod's environment.

    Args:
      num_processes: overrides ``PHALANX_NUM_PROCESSES``.
      coordinator_address: overrides ``PHALANX_COORDINATOR_ADDRESS``.
      port: the coordinator port when the address is derived (default
        ``PHALANX_COORDINATOR_PORT`` or 8476).
      hostname: this pod's fully qualified host name (default ``socket.getfqdn()``).
      rpc_layer: the prefix ``master()`` uses.
      environ: the mapping to read (default ``os.environ``); for tests.

    Raises:
      ClusterConfigError: a variable is missing or inconsistent, or the host
        name does not end in the index (set ``PHALANX_COORDINATOR_ADDRESS``).

    Examples:
      >>> env = {"JOB_COMPLETION_INDEX": "2", "PHALANX_NUM_PROCESSES": "4"}
      >>> r = KubernetesClusterResolver(environ=env, hostname="train-2.train-svc")
      >>> r.process_id, r.coordinator_address
      (2, 'train-0.train-svc:8476')
    """

    def __init__(
        self,
        *,
        num_processes: int | None = None,
        coordinator_address: str | None = None,
        port: int | None = None,
        hostname: str | None = None,
        rpc_layer: str | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        index = env_int(COMPLETION_INDEX_ENV, environ=env)
        if index is None:
            raise ClusterConfigError(
                f"KubernetesClusterResolver needs {COMPLETION_INDEX_ENV}: run the pods as a Job "
                "with `completionMode: Indexed` (or a JobSet)."
            )
        n = (
            num_processes
            if num_processes is not None
            else env_int(NUM_PROCESSES_ENV, minimum=1, environ=env)
        )
        if n is None:
            raise ClusterConfigError(
                f"KubernetesClusterResolver needs the number of processes: set {NUM_PROCESSES_ENV} "
                "in the pod template to the Job's `completions` (times the replicas of a JobSet)."
            )
        job_index = env_int(JOB_INDEX_ENV, environ=env) or 0
        replicas = env_int(REPLICAS_ENV, minimum=1, environ=env) or 1
        if n % replicas:
            raise ClusterConfigError(
                f"{NUM_PROCESSES_ENV}={n} does not divide over {REPLICAS_ENV}={replicas} Jobs."
            )
        self.pods_per_job = n // replicas
        self.hostname = hostname if hostname is not None else socket.getfqdn()
        address = coordinator_address or env.get(COORDINATOR_ENV, "").strip()
        if not address:
            port = port if port is not None else env_int(PORT_ENV, minimum=1, environ=env)
            address = f"{_coordinator_host(self.hostname, index, job_index)}:{port or DEFAULT_PORT}"
        self.rpc_layer = rpc_layer
        self._set_processes(address, n, job_index * self.pods_per_job + index)

    @staticmethod
    def is_present(environ: Mapping[str, str] | None = None) -> bool:
        """True when ``JOB_COMPLETION_INDEX`` is set (an Indexed Job's pod)."""
        env = os.environ if environ is None else environ
        return bool(env.get(COMPLETION_INDEX_ENV, "").strip())

    def cluster_spec(self) -> ClusterSpec:
        """Returns ``{"worker": {0: coordinator, process_id: this pod's host}}``."""
        port = self.coordinator_address.rsplit(":", 1)[1]
        tasks = {0: self.coordinator_address, self.process_id: f"{self.hostname}:{port}"}
        return ClusterSpec({DEFAULT_TASK_TYPE: tasks})

    def missing_hint(self) -> str:
        """Advice for pods that never arrive."""
        return (
            f"Check that the Job runs {self.num_processes} pods at once (parallelism = "
            "completions), that a headless Service makes the pods' host names resolvable, "
            "and that the coordinator port is open between pods."
        )


def _coordinator_host(fqdn: str, index: int, job_index: int) -> str:
    host, dot, domain = fqdn.partition(".")
    jobset = re.fullmatch(rf"(.+)-{job_index}-{index}", host)
    if job_index and jobset:  # JobSet pod <jobset>-<replicated job>-<job index>-<pod index>
        return f"{jobset.group(1)}-0-0{dot}{domain}"
    indexed = re.fullmatch(rf"(.+)-{index}", host)
    if not indexed:
        raise ClusterConfigError(
            f"Cannot derive the coordinator from this pod's host name {fqdn!r}: an Indexed Job's "
            f"pod is named <job>-{index}. Set {COORDINATOR_ENV}=<process 0's host>:<port>."
        )
    return f"{indexed.group(1)}-0{dot}{domain}"
