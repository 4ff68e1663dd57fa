"""``ClusterSpec``: the jobs and task addresses of a cluster, as TensorFlow names them.

JAX needs only the coordinator's address; the full list of tasks is kept for
code written against ``tf.train.ClusterSpec`` (logging, ``master()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TaskList = Sequence[str] | Mapping[int, str]


class ClusterSpec:
    """The tasks of a cluster by job name (``tf.train.ClusterSpec``'s read-only surface).

    Args:
      cluster: ``{job_name: [address, ...]}`` (dense: task ``i`` is the
        ``i``-th address) or ``{job_name: {task_index: address}}`` (sparse:
        only some tasks' addresses are known).

    Raises:
      TypeError: ``cluster`` is not a mapping of job names to lists or dicts.

    Examples:
      >>> spec = ClusterSpec({"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]})
      >>> spec.jobs, spec.num_tasks("worker"), spec.task_address("worker", 1)
      (['chief', 'worker'], 2, 'h2:2222')
    """

    def __init__(self, cluster: Mapping[str, TaskList] | ClusterSpec | None = None):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        self._jobs: dict[str, dict[int, str]] = {}
        self._sparse: set[str] = set()
        for job, tasks in (cluster or {}).items():
            if isinstance(tasks, Mapping):
                self._jobs[str(job)] = {int(i): str(a) for i, a in sorted(tasks.items())}
                self._sparse.add(str(job))
            elif isinstance(tasks, Sequence) and not isinstance(tasks, str):
                self._jobs[str(job)] = {i: str(a) for i, a in enumerate(tasks)}
            else:
                raise TypeError(
                    f"ClusterSpec expects {{job: [address, ...]}} or {{job: {{index: address}}}}, "
                    f"got {tasks!r} ({type(tasks).__name__}) for job {job!r}."
                )

    @property
    def jobs(self) -> list[str]:
        """The job names, in insertion order."""
        return list(self._jobs)

    def as_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """Returns ``{job: [address, ...]}``, or ``{job: {index: address}}`` for sparse jobs."""
        return {
            job: dict(tasks) if job in self._sparse else [tasks[i] for i in sorted(tasks)]
            for job, tasks in self._jobs.items()
        }

    def num_tasks(self, job_name: str) -> int:
        """Returns the number of tasks of ``job_name`` whose address is known."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """Returns the task indices of ``job_name``, sorted."""
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """Returns the address (``host:port``) of one task.

        Raises:
          ValueError: the job or the task index is not in the spec.
        """
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise ValueError(
                f"No task {task_index} in job {job_name!r}: it has tasks {sorted(tasks)}."
            )
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> list[str | None]:
        """Returns the addresses of ``job_name``'s tasks, ``None`` where unknown (sparse)."""
        tasks = self._job(job_name)
        return [tasks.get(i) for i in range(max(tasks, default=-1) + 1)]

    def _job(self, job_name: str) -> dict[int, str]:
        if job_name not in self._jobs:
            raise ValueError(f"No job {job_name!r} in the cluster; its jobs are {self.jobs}.")
        return self._jobs[job_name]

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"
