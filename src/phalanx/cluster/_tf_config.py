"""``TFConfigClusterResolver``: the cluster from TensorFlow's ``TF_CONFIG`` variable.

``TF_CONFIG`` is JSON such as::

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
     "task": {"type": "worker", "index": 0}}

Process ids follow the jobs: the chief is process 0 and the workers follow
in order (worker ``i`` is process ``i + 1``; without a chief, worker ``i`` is
process ``i``). JAX's coordinator listens at the chief's address (or worker
0's): the port that TensorFlow's gRPC server would have used. Evaluator and
parameter-server (``ps``) tasks have no place in synchronous all-reduce
training and are refused with a message; an ``evaluator`` job listed in the
cluster is ignored by the chief and the workers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ..errors import ClusterConfigError, PhalanxError, UnsupportedClusterError
from ._resolver import ClusterResolver
from ._spec import ClusterSpec

TF_CONFIG_ENV = "TF_CONFIG"
_SYNC_JOBS = ("chief", "worker")
_REFUSED = {
    "evaluator": (
        "an evaluator is a side job that reads checkpoints while others train; phalanx "
        "trains synchronously only. Run evaluation as its own single-process job (TF_CONFIG "
        "unset) over the checkpoints, or call model.evaluate() inside the training job."
    ),
    "ps": (
        "parameter-server training (ParameterServerStrategy) is not supported; phalanx "
        "trains with synchronous all-reduce. List only 'chief' and 'worker' tasks."
    ),
}


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster from ``TF_CONFIG`` (``tf.distribute.cluster_resolver.TFConfigClusterResolver``).

    Args:
      task_type: overrides ``TF_CONFIG``'s ``task.type``.
      task_id: overrides ``TF_CONFIG``'s ``task.index``.
      rpc_layer: the prefix ``master()`` uses (default: ``TF_CONFIG``'s
        ``rpc_layer``, else ``"grpc"``).
      environment: overrides ``TF_CONFIG``'s ``environment``.
      tf_config: the JSON text or dict to read instead of the variable; for tests.

    Raises:
      ClusterConfigError: ``TF_CONFIG`` is unset, not JSON, or inconsistent.
      UnsupportedClusterError: this task is an evaluator or the cluster has ``ps`` tasks.

    Examples:
      >>> r = TFConfigClusterResolver(tf_config={
      ...     "cluster": {"chief": ["h0:2222"], "worker": ["h1:2222"]},
      ...     "task": {"type": "worker", "index": 0}})
      >>> r.process_id, r.num_processes, r.coordinator_address, r.master()
      (1, 2, 'h0:2222', 'grpc://h1:2222')
    """

    def __init__(
        self,
        task_type: str | None = None,
        task_id: int | None = None,
        rpc_layer: str | None = None,
        environment: str | None = None,
        *,
        tf_config: str | Mapping | None = None,
    ):
        try:
            self._read(task_type, task_id, rpc_layer, environment, tf_config)
        except PhalanxError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
            raise ClusterConfigError(
                f"TF_CONFIG is malformed ({type(e).__name__}: {e}); expected "
                '{"cluster": {"chief": ["host:port"], "worker": ["host:port", ...]}, '
                '"task": {"type": "worker", "index": 0}}.'
            ) from None

    def _read(self, task_type, task_id, rpc_layer, environment, tf_config) -> None:
        config = _load(tf_config)
        cluster = config.get("cluster") or {}
        if not isinstance(cluster, Mapping) or not cluster:
            raise ClusterConfigError(
                f"TF_CONFIG has no 'cluster' (got {config!r}); expected "
                '{"cluster": {"chief": [...], "worker": [...]}, "task": {"type": ..., "index": ...}}.'
            )
        task = config.get("task") or {}
        self._task_type = task_type or task.get("type") or _only_task(cluster)
        self._task_id = _task_index(task_id if task_id is not None else task.get("index", 0))
        self.rpc_layer = rpc_layer or config.get("rpc_layer") or "grpc"
        self._environment = (
            environment if environment is not None else config.get("environment", "")
        )
        self._spec = ClusterSpec(cluster)
        self._check_supported()
        order = [(job, i) for job in _SYNC_JOBS if job in cluster for i in range(len(cluster[job]))]
        if (self._task_type, self._task_id) not in order:
            raise ClusterConfigError(
                f"TF_CONFIG's task {self._task_type!r} index {self._task_id} is not in its "
                f"cluster {self._spec.as_dict()}."
            )
        coordinator = self._spec.task_address(*order[0])
        self._set_processes(coordinator, len(order), order.index((self._task_type, self._task_id)))

    def _check_supported(self) -> None:
        if self._task_type in _REFUSED:
            raise UnsupportedClusterError(
                f"TF_CONFIG makes this process a {self._task_type!r} task: "
                + _REFUSED[self._task_type]
            )
        if "ps" in self._spec.jobs:
            raise UnsupportedClusterError("TF_CONFIG's cluster has 'ps' tasks: " + _REFUSED["ps"])
        unknown = [j for j in self._spec.jobs if j not in (*_SYNC_JOBS, "evaluator")]
        if unknown or self._task_type not in _SYNC_JOBS:
            raise ClusterConfigError(
                f"TF_CONFIG jobs must be 'chief' and 'worker' (and an ignored 'evaluator'); got "
                f"jobs {self._spec.jobs} with task type {self._task_type!r}."
            )
        if len(self._spec.as_dict().get("chief", [])) > 1:
            raise ClusterConfigError(
                f"TF_CONFIG lists {self._spec.num_tasks('chief')} chiefs; a cluster has at most one."
            )

    @property
    def environment(self) -> str:
        """``TF_CONFIG``'s ``environment`` (``""`` when absent)."""
        return self._environment

    def cluster_spec(self) -> ClusterSpec:
        """Returns ``TF_CONFIG``'s ``cluster`` as a ``ClusterSpec``."""
        return self._spec

    def missing_hint(self) -> str:
        """Advice: every chief and worker needs its own TF_CONFIG."""
        return (
            "Start one process per chief and worker listed in TF_CONFIG, each with the same "
            "'cluster' and its own 'task'."
        )


def _load(tf_config: str | Mapping | None) -> dict:
    if isinstance(tf_config, Mapping):
        return dict(tf_config)
    raw = tf_config if tf_config is not None else os.environ.get(TF_CONFIG_ENV, "")
    if not raw.strip():
        raise ClusterConfigError(
            "TFConfigClusterResolver needs the TF_CONFIG environment variable; it is not set."
        )
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ClusterConfigError(f"TF_CONFIG is not valid JSON ({e}): {raw[:200]!r}") from None
    if not isinstance(config, dict):
        raise ClusterConfigError(f"TF_CONFIG must be a JSON object, got {raw[:200]!r}.")
    return config


def _only_task(cluster: Mapping) -> str:
    tasks = [job for job, addresses in cluster.items() for _ in addresses]
    if len(tasks) == 1:
        return tasks[0]
    raise ClusterConfigError(
        f"TF_CONFIG has no 'task' but its cluster has {len(tasks)} tasks; add "
        '"task": {"type": "worker", "index": N} to say which one this process is.'
    )


def _task_index(raw) -> int:
    """``task.index`` as an int >= 0 (an integer string too, as TensorFlow accepts)."""
    try:
        value = int(raw) if isinstance(raw, int | str) and not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value is None or value < 0:
        raise ClusterConfigError(
            f"TF_CONFIG's task.index must be an integer >= 0 (this task's index in its job), "
            f'got {raw!r}. Write it as "task": {{"type": "worker", "index": 0}}.'
        )
    return value
