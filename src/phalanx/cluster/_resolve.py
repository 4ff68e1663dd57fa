"""``resolve()``: find the cluster this process belongs to, from its environment.

The first that applies wins:

1. ``PHALANX_*`` variables (``phalanx launch``, or set by hand) -> ``EnvClusterResolver``
2. ``TF_CONFIG`` -> ``TFConfigClusterResolver``
3. Slurm (``SLURM_PROCID``, ``SLURM_NTASKS``, a node list) -> ``SlurmClusterResolver``
4. Kubernetes Indexed Job (``JOB_COMPLETION_INDEX``) -> ``KubernetesClusterResolver``
5. a Cloud TPU VM (TPU chips, or GKE's ``TPU_WORKER_*``) -> ``TPUClusterResolver``
6. nothing -> ``None``: one process on the local devices.

``PHALANX_CLUSTER`` forces one: ``env``, ``tf_config``, ``slurm``,
``kubernetes``, ``tpu``, or ``none`` (ignore the environment; one process),
e.g. inside an interactive Slurm allocation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ..errors import ClusterConfigError
from ._env import PROCESS_ID_ENV, EnvClusterResolver
from ._kubernetes import KubernetesClusterResolver
from ._resolver import ClusterResolver
from ._slurm import SlurmClusterResolver
from ._tf_config import TF_CONFIG_ENV, TFConfigClusterResolver
from ._tpu import _HOST_ENVS, TPUClusterResolver

CLUSTER_ENV = "PHALANX_CLUSTER"

Env = Mapping[str, str]


def _env_present(env: Env) -> bool:
    if env.get(PROCESS_ID_ENV, "").strip():
        return True  # a Kubernetes pod may set the other PHALANX_* variables without an id
    return EnvClusterResolver.is_present(env) and not KubernetesClusterResolver.is_present(env)


def _kubernetes_present(env: Env) -> bool:
    # GKE's TPU pods are Indexed Jobs too; their TPU_* variables describe them better.
    return KubernetesClusterResolver.is_present(env) and not any(env.get(n) for n in _HOST_ENVS)


# name -> (is present, build); in resolve()'s order.
_KINDS: dict[str, tuple[Callable[[Env], bool], Callable[[Env], ClusterResolver]]] = {
    "env": (_env_present, lambda env: EnvClusterResolver(env)),
    "tf_config": (
        lambda env: bool(env.get(TF_CONFIG_ENV, "").strip()),
        lambda env: TFConfigClusterResolver(tf_config=env.get(TF_CONFIG_ENV, "")),
    ),
    "slurm": (SlurmClusterResolver.is_present, lambda env: SlurmClusterResolver(environ=env)),
    "kubernetes": (_kubernetes_present, lambda env: KubernetesClusterResolver(environ=env)),
    "tpu": (TPUClusterResolver.is_present, lambda env: TPUClusterResolver(environ=env)),
}


def resolve(environ: Mapping[str, str] | None = None) -> ClusterResolver | None:
    """Returns the resolver for this process's environment, or None for one process.

    See the module docstring for the order. A resolver is returned even for a
    one-process cluster (``num_processes == 1``); ``initialize()`` then has
    nothing to connect.

    Args:
      environ: the mapping to read (default ``os.environ``); for tests.

    Returns:
      A ``ClusterResolver``, or None when no cluster is described.

    Raises:
      ClusterConfigError: the environment describes a cluster but badly (the
        message names the variable), or ``PHALANX_CLUSTER`` is unknown.

    Examples:
      >>> resolve({}) is None
      True
      >>> resolve({"PHALANX_COORDINATOR_ADDRESS": "127.0.0.1:4000",
      ...          "PHALANX_NUM_PROCESSES": "2", "PHALANX_PROCESS_ID": "0"}).num_processes
      2
    """
    env = os.environ if environ is None else environ
    forced = env.get(CLUSTER_ENV, "").strip().lower()
    if forced == "none":
        return None
    if forced:
        if forced not in _KINDS:
            raise ClusterConfigError(
                f"{CLUSTER_ENV}={forced!r} is not one of {', '.join(_KINDS)} or none."
            )
        return _KINDS[forced][1](env)
    for present, build in _KINDS.values():
        if present(env):
            return build(env)
    return None
