"""``SlurmClusterResolver``: the cluster from the variables ``srun`` sets.

Read, in order of preference:

=============================================  =====================================
``SLURM_STEP_NODELIST`` / ``SLURM_JOB_NODELIST``  the nodes, e.g. ``node[01-04,07]``
``SLURM_PROCID``                                 this task's rank (the process id)
``SLURM_STEP_NUM_TASKS`` / ``SLURM_NTASKS``      the number of tasks (processes)
``SLURM_LOCALID``                                this task's rank on its node
``SLURM_STEP_TASKS_PER_NODE`` / ``SLURM_TASKS_PER_NODE``  e.g. ``2(x3),1``
``SLURM_JOB_ID``                                 picks the default port
=============================================  =====================================

Run one task per process with ``srun`` (``srun -n 8 python train.py``); a batch
script itself is one process, not the job's tasks. The coordinator is the first
node of the list (where task 0 runs) at ``port_base``, by default JAX's choice
``61440 + SLURM_JOB_ID % 4096`` so that jobs sharing a node do not collide.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..errors import ClusterConfigError
from ._resolver import DEFAULT_TASK_TYPE, ClusterResolver, env_int
from ._spec import ClusterSpec

NODELIST_ENVS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
NTASKS_ENVS = ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS")
TASKS_PER_NODE_ENVS = ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
# Slurm itself handles at most 65533 nodes: a list naming more is not Slurm's.
MAX_HOSTS = 65536


class SlurmClusterResolver(ClusterResolver):
    """Reads the cluster from Slurm's variables (``tf.distribute.cluster_resolver.SlurmClusterResolver``).

    Args:
      port_base: the coordinator's port (task ``i`` of a node is listed at
        ``port_base + i`` in ``cluster_spec()``); default derived from ``SLURM_JOB_ID``.
      gpus_per_task: accelerators per task; task ``l`` of a node then uses
        devices ``l*g .. l*g+g-1``. By default a node with one task uses all
        its devices and a node with several gives task ``l`` device ``l`` (as JAX).
      rpc_layer: the prefix ``master()`` uses.
      environ: the mapping to read (default ``os.environ``); for tests.

    Raises:
      ClusterConfigError: a variable is missing or malformed.

    Examples:
      >>> env = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_PROCID": "3",
      ...        "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_JOB_ID": "7"}
      >>> r = SlurmClusterResolver(port_base=9000, environ=env)
      >>> r.coordinator_address, r.num_processes, r.process_id, r.master()
      ('gpu01:9000', 4, 3, 'gpu02:9001')
    """

    def __init__(
        self,
        *,
        port_base: int | None = None,
        gpus_per_task: int | None = None,
        rpc_layer: str | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        nodelist = _first(env, NODELIST_ENVS)
        procid = env_int("SLURM_PROCID", environ=env)
        ntasks = next((env_int(n, minimum=1, environ=env) for n in NTASKS_ENVS if env.get(n)), None)
        if nodelist is None or procid is None or ntasks is None:
            raise ClusterConfigError(
                "SlurmClusterResolver needs SLURM_JOB_NODELIST (or SLURM_STEP_NODELIST), "
                "SLURM_PROCID and SLURM_NTASKS; run the script with `srun`."
            )
        self.nodes = expand_hostlist(nodelist)
        per_node = _tasks_per_node(_first(env, TASKS_PER_NODE_ENVS), ntasks, len(self.nodes))
        self._ranks = [
            (node, local)
            for node, n in zip(self.nodes, per_node, strict=True)
            for local in range(n)
        ]
        if len(self._ranks) != ntasks:
            raise ClusterConfigError(
                f"Slurm says {ntasks} tasks but its tasks per node {per_node} add up to "
                f"{len(self._ranks)} on nodes {self.nodes}."
            )
        self.port_base = port_base if port_base is not None else _default_port(env)
        self.rpc_layer = rpc_layer
        self._set_processes(f"{self.nodes[0]}:{self.port_base}", ntasks, procid)
        local = env_int("SLURM_LOCALID", environ=env)
        local = self._ranks[procid][1] if local is None else local
        self._local_device_ids = _device_ids(local, gpus_per_task, per_node[self._node_index()])

    @staticmethod
    def is_present(environ: Mapping[str, str] | None = None) -> bool:
        """True when ``SLURM_PROCID``, ``SLURM_NTASKS`` and a node list are set."""
        env = os.environ if environ is None else environ
        return bool(
            env.get("SLURM_PROCID")
            and _first(env, NODELIST_ENVS)
            and any(env.get(n) for n in NTASKS_ENVS)
        )

    def _node_index(self) -> int:
        return self.nodes.index(self._ranks[self.process_id][0])

    def cluster_spec(self) -> ClusterSpec:
        """Returns ``{"worker": ["node:port_base+local_rank", ...]}`` in task order."""
        return ClusterSpec(
            {DEFAULT_TASK_TYPE: [f"{n}:{self.port_base + i}" for n, i in self._ranks]}
        )

    def missing_hint(self) -> str:
        """Advice: start the tasks with srun."""
        return (
            f"Start every task with `srun` (srun -n {self.num_processes} python script.py); "
            "a batch script on its own is one process."
        )


def expand_hostlist(hostlist: str) -> list[str]:
    """Expands a Slurm host list: ``node[01-04,07]``, ``a[1-2],b3``, ``r[1-2]-n[1-2]``.

    Args:
      hostlist: Slurm's compressed host list.

    Returns:
      The host names in order, zero padding kept.

    Raises:
      ClusterConfigError: unbalanced brackets, a malformed range, or more than
        ``MAX_HOSTS`` hosts (checked before expanding).

    Examples:
      >>> expand_hostlist("node[01-03,07],login1")
      ['node01', 'node02', 'node03', 'node07', 'login1']
    """
    hosts: list[str] = []
    for item in _split_top_level(hostlist.strip()):
        if item:
            hosts.extend(_expand_one(item, hostlist))
            _check_count(len(hosts), hostlist)
    if not hosts:
        raise ClusterConfigError(f"Slurm's node list {hostlist!r} names no host.")
    return hosts


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth < 0 or depth > 1:
            raise ClusterConfigError(f"Unbalanced brackets in Slurm's node list {text!r}.")
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ClusterConfigError(f"Unbalanced brackets in Slurm's node list {text!r}.")
    parts.append(text[start:].strip())
    return parts


def _expand_one(item: str, whole: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end() :]
    middles, rests = _expand_ranges(match.group(1), whole), _expand_one(tail, whole)
    _check_count(len(middles) * len(rests), whole)
    return [head + middle + rest for middle in middles for rest in rests]


def _check_count(count: int, whole: str) -> None:
    if count > MAX_HOSTS:
        raise ClusterConfigError(
            f"Slurm's node list {_short(whole)} names {count} or more hosts; at most "
            f"{MAX_HOSTS} are supported (Slurm's own limit is 65533). Check "
            "SLURM_JOB_NODELIST / SLURM_STEP_NODELIST."
        )


def _short(text: str, limit: int = 80) -> str:
    return (
        repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"
    )


def _expand_ranges(spec: str, whole: str) -> list[str]:
    out = []
    for part in spec.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise ClusterConfigError(f"Malformed range {part!r} in Slurm's node list {whole!r}.")
        lo, hi = match.group(1), match.group(2) or match.group(1)
        if int(hi) < int(lo):
            raise ClusterConfigError(f"Descending range {part!r} in Slurm's node list {whole!r}.")
        width = len(lo)
        _check_count(len(out) + int(hi) - int(lo) + 1, whole)
        out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return out


def _tasks_per_node(raw: str | None, ntasks: int, nnodes: int) -> list[int]:
    if not raw:  # block distribution: the first nodes take one more when it does not divide
        base, extra = divmod(ntasks, nnodes)
        return [base + (i < extra) for i in range(nnodes)]
    runs: list[tuple[int, int]] = []
    for part in raw.split(","):
        match = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not match:
            raise ClusterConfigError(
                f"Malformed SLURM_TASKS_PER_NODE {_short(raw)} (expected '2(x3),1')."
            )
        runs.append((int(match.group(1)), int(match.group(2) or 1)))
    described = sum(repeat for _, repeat in runs)  # counted before anything is expanded
    if described != nnodes:
        raise ClusterConfigError(
            f"SLURM_TASKS_PER_NODE {_short(raw)} describes {described} nodes, the node list "
            f"{nnodes}."
        )
    return [count for count, repeat in runs for _ in range(repeat)]


def _default_port(env: Mapping[str, str]) -> int:
    job_id = env_int("SLURM_JOB_ID", environ=env) or 0
    return job_id % 4096 + (65535 - 4096 + 1)


def _device_ids(
    local: int, gpus_per_task: int | None, tasks_on_node: int
) -> tuple[int, ...] | None:
    if gpus_per_task is not None:
        return tuple(range(local * gpus_per_task, (local + 1) * gpus_per_task))
    return None if tasks_on_node <= 1 else (local,)


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((env[n] for n in names if env.get(n, "").strip()), None)
