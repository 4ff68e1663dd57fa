"""``TPUClusterResolver``: the hosts of a Cloud TPU VM slice, found as JAX finds them.

On a TPU VM each host runs one process that drives its local TPU chips; a pod
slice has several hosts. The hosts come from (in order):

* GKE: ``TPU_PROCESS_ADDRESSES`` or ``TPU_WORKER_HOSTNAMES`` (comma-separated)
  and ``TPU_WORKER_ID`` (this host's index), which GKE sets in TPU pods;
* GCE TPU VMs: the metadata server's ``worker-network-endpoints`` and
  ``agent-worker-number`` attributes (skipped when ``TPU_SKIP_MDS_QUERY`` is set);
* multislice: ``MEGASCALE_COORDINATOR_ADDRESS``, ``MEGASCALE_NUM_SLICES`` and
  ``MEGASCALE_SLICE_ID`` (from the environment, or the ``tpu-env`` metadata).

The coordinator is host 0 of slice 0 (or ``MEGASCALE_COORDINATOR_ADDRESS``) at
port 8482, as in ``jax._src.clusters.cloud_tpu_cluster``. The older "TPU Node"
architecture, where a separate machine reaches the TPU over gRPC
(``grpc://10.0.0.2:8470``, ``COLAB_TPU_ADDR``), cannot run JAX programs.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Callable, Mapping

from ..errors import ClusterConfigError, UnsupportedClusterError
from ._resolver import DEFAULT_TASK_TYPE, ClusterResolver, tpu_chip_count
from ._spec import ClusterSpec

logger = logging.getLogger("phalanx.cluster")

DEFAULT_PORT = 8482  # jax._src.clusters.cloud_tpu_cluster.coordinator_port
_HOST_ENVS = ("TPU_PROCESS_ADDRESSES", "TPU_WORKER_HOSTNAMES")
_VM_ENVS = (*_HOST_ENVS, "TPU_WORKER_ID", "TPU_ACCELERATOR_TYPE")

Metadata = Callable[[str], str | None]

_TPU_NODE = (
    "{what} is a TPU Node: a TPU reached over gRPC from another machine. JAX (and so "
    "phalanx) runs on TPU VMs, where the TPU chips are attached to the machine that runs "
    "Python. Create a TPU VM (`gcloud compute tpus tpu-vm create ...`; on Colab/Kaggle pick "
    "a 'TPU VM' runtime), run the script there, and use TPUClusterResolver() with no argument."
)


class TPUClusterResolver(ClusterResolver):
    """Finds the local TPU chips and the other hosts of a TPU VM slice (``tf.distribute.cluster_resolver.TPUClusterResolver``).

    Args:
      tpu: None, ``""`` or ``"local"`` for this TPU VM. A TPU name is accepted
        (and ignored) when this machine is a TPU VM; a ``grpc://`` address is
        a TPU Node and refused.
      zone: accepted for TensorFlow's signature; unused.
      project: accepted for TensorFlow's signature; unused.
      port: the coordinator's port on host 0.
      environ: the mapping to read (default ``os.environ``); for tests.
      metadata: a function from a GCE metadata attribute name to its text (or
        None); default queries the metadata server with a short timeout.

    Raises:
      UnsupportedClusterError: ``tpu`` is a remote TPU Node (``grpc://...``,
        ``COLAB_TPU_ADDR``), or a TPU name given off a TPU VM.
      ClusterConfigError: this machine is not a TPU VM, or its variables are malformed.

    Examples:
      >>> env = {"TPU_WORKER_HOSTNAMES": "t-0,t-1,t-2,t-3", "TPU_WORKER_ID": "2"}
      >>> r = TPUClusterResolver(environ=env)
      >>> r.process_id, r.num_processes, r.coordinator_address
      (2, 4, 't-0:8482')
    """

    def __init__(
        self,
        tpu: str | None = None,
        zone: str | None = None,
        project: str | None = None,
        *,
        port: int = DEFAULT_PORT,
        environ: Mapping[str, str] | None = None,
        metadata: Metadata | None = None,
    ):
        del zone, project
        env = os.environ if environ is None else environ
        on_vm = _on_tpu_vm(env)
        _refuse_tpu_node(tpu, env, on_vm)
        if not on_vm:
            raise ClusterConfigError(
                "TPUClusterResolver found no TPU: this machine has no TPU chips and none of "
                f"{', '.join(_VM_ENVS)} is set. Run on a Cloud TPU VM; to test TPU code on CPU, "
                "leave the resolver out and build TPUStrategy(experimental_simulate_on_cpu=True) "
                "on simulated devices (PHALANX_CPU_DEVICES=8), or use MirroredStrategy."
            )
        read = metadata or (_gce_metadata if _may_query_metadata(env) else _no_metadata)
        hosts, worker = _slice_hosts(env, read)
        slices, slice_id, megascale = _slices(env, read)
        self.hosts = hosts
        self.port = port
        self.tpu = tpu
        coordinator = megascale.split(":")[0] if megascale else hosts[0]
        self._set_processes(
            f"{coordinator}:{port}", len(hosts) * slices, slice_id * len(hosts) + worker
        )
        self._first_in_slice = slice_id * len(hosts)

    @staticmethod
    def is_present(environ: Mapping[str, str] | None = None) -> bool:
        """True on a TPU VM: TPU chips on the PCI bus, or GKE's TPU variables."""
        return _on_tpu_vm(os.environ if environ is None else environ)

    @classmethod
    def connect(
        cls, tpu: str | None = None, zone: str | None = None, project: str | None = None
    ) -> TPUClusterResolver:
        """Builds the resolver and calls ``initialize()`` with it (TensorFlow's ``connect``).

        Returns:
          The resolver.
        """
        from ._initialize import (
            initialize,
        )  # local: _initialize resolves clusters through this module

        resolver = cls(tpu, zone, project)
        initialize(resolver)
        return resolver

    def cluster_spec(self) -> ClusterSpec:
        """Returns this slice's hosts as ``{"worker": {process_id: "host:port"}}``."""
        tasks = {self._first_in_slice + i: f"{h}:{self.port}" for i, h in enumerate(self.hosts)}
        tasks.setdefault(0, self.coordinator_address)
        return ClusterSpec({DEFAULT_TASK_TYPE: tasks})

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict[str, int]:
        """Returns ``{"TPU": n}``: the TPU devices of this host."""
        return super().num_accelerators(task_type, task_id, config_proto)

    def missing_hint(self) -> str:
        """Advice: run the same command on every host of the slice."""
        return (
            "Run the script on every host of the TPU slice at once, e.g. "
            "`gcloud compute tpus tpu-vm ssh NAME --worker=all --command='python train.py'`."
        )


def _on_tpu_vm(env: Mapping[str, str]) -> bool:
    return any(env.get(name) for name in _VM_ENVS) or tpu_chip_count() > 0


def _refuse_tpu_node(tpu, env: Mapping[str, str], on_vm: bool) -> None:
    if isinstance(tpu, (list, tuple)):
        tpu = tpu[0] if len(tpu) == 1 else ",".join(map(str, tpu))
    if tpu is None and env.get("COLAB_TPU_ADDR"):
        raise UnsupportedClusterError(
            _TPU_NODE.format(what=f"COLAB_TPU_ADDR={env['COLAB_TPU_ADDR']!r}")
        )
    if tpu in (None, "", "local"):
        return
    if str(tpu).startswith("grpc://"):
        raise UnsupportedClusterError(_TPU_NODE.format(what=f"tpu={tpu!r}"))
    if not on_vm:
        raise UnsupportedClusterError(
            f"TPUClusterResolver(tpu={tpu!r}) would look up a TPU by name and reach it over the "
            "network, which is how TPU Nodes work; this machine has no TPU. "
            + _TPU_NODE.format(what="Such a TPU").split(". ", 1)[1]
        )
    logger.info("TPUClusterResolver: on a TPU VM; the name %r is not needed and is ignored.", tpu)


def _slice_hosts(env: Mapping[str, str], read: Metadata) -> tuple[list[str], int]:
    raw = next((env[n] for n in _HOST_ENVS if env.get(n, "").strip()), None)
    worker = env.get("TPU_WORKER_ID", "").strip()
    if raw is None:
        raw = _endpoints(read("worker-network-endpoints"))
        worker = worker or (read("agent-worker-number") or "").strip()
    if not raw:
        return ["localhost"], 0  # a single-host TPU VM without metadata
    hosts = [
        h.strip().rsplit(":", 1)[0] if h.count(":") == 1 else h.strip() for h in raw.split(",")
    ]
    try:
        index = int(worker or 0)
    except ValueError:
        raise ClusterConfigError(f"TPU_WORKER_ID must be an integer, got {worker!r}.") from None
    if not 0 <= index < len(hosts):
        raise ClusterConfigError(
            f"TPU_WORKER_ID={index} is outside the {len(hosts)} hosts {hosts} of this slice."
        )
    return hosts, index


def _endpoints(raw: str | None) -> str | None:
    """``worker-network-endpoints``: host names, or old-style ``name:id:ip`` triples."""
    if not raw:
        return None
    hosts = []
    for worker in raw.strip().split(","):
        parts = worker.split(":")
        hosts.append(parts[2] if len(parts) == 3 else parts[0])
    return ",".join(hosts)


def _slices(env: Mapping[str, str], read: Metadata) -> tuple[int, int, str | None]:
    values = {}
    names = ("MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID", "MEGASCALE_COORDINATOR_ADDRESS")
    tpu_env = None
    for name in names:
        value = env.get(name, "").strip()
        if not value:
            if tpu_env is None:
                tpu_env = _parse_tpu_env(read("tpu-env"))
            value = tpu_env.get(name, "")
        values[name] = value
    try:
        slices = int(values["MEGASCALE_NUM_SLICES"] or 1)
        slice_id = int(values["MEGASCALE_SLICE_ID"] or 0)
    except ValueError:
        raise ClusterConfigError(f"MEGASCALE_* variables must be integers, got {values}.") from None
    return slices, slice_id, values["MEGASCALE_COORDINATOR_ADDRESS"] or None


def _parse_tpu_env(text: str | None) -> dict[str, str]:
    out = {}
    for line in (text or "").splitlines():  # lines such as MEGASCALE_NUM_SLICES: '2'
        if ":" in line:
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip().strip("'\"")
    return out


def _may_query_metadata(env: Mapping[str, str]) -> bool:
    return env.get("TPU_SKIP_MDS_QUERY") is None and tpu_chip_count() > 0


def _no_metadata(key: str) -> str | None:
    del key
    return None


def _gce_metadata(key: str, timeout: float = 5.0) -> str | None:
    """Reads one TPU VM metadata attribute; None when absent or unreachable."""
    host = os.environ.get("GCE_METADATA_IP", "metadata.google.internal")
    request = urllib.request.Request(
        f"http://{host}/computeMetadata/v1/instance/attributes/{key}",
        headers={"Metadata-Flavor": "Google"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode()
    except OSError as e:
        logger.warning("TPU VM metadata %r unavailable (%s).", key, e)
        return None
