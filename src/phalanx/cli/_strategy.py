"""The one place the ``phalanx`` command chooses a strategy (``demo`` trains with it,
``info`` reports it).

``auto`` means: a cluster described by the environment (``phalanx.cluster.resolve()``)
gives ``MultiWorkerMirroredStrategy``; otherwise several local devices give
``MirroredStrategy`` and one gives ``OneDeviceStrategy``. Choosing connects to
nothing: only ``StrategyChoice.build()`` creates the strategy (and, for
``multi_worker``, joins the cluster).
"""

from __future__ import annotations

import dataclasses

import jax

import phalanx

from ..cluster import resolve

NAMES = ("auto", "one_device", "mirrored", "multi_worker")

_CLASSES = {
    "one_device": "OneDeviceStrategy",
    "mirrored": "MirroredStrategy",
    "multi_worker": "MultiWorkerMirroredStrategy",
}


@dataclasses.dataclass(frozen=True)
class StrategyChoice:
    """A strategy chosen but not yet created.

    Attributes:
      name: ``one_device``, ``mirrored`` or ``multi_worker``.
      reason: why, in a few words (``"auto: 8 local devices, no cluster"``).
      cluster: the resolver found in the environment, or None.
    """

    name: str
    reason: str
    cluster: object | None = None

    @property
    def class_name(self) -> str:
        """The strategy's class name, as ``phalanx`` exports it."""
        return _CLASSES[self.name]

    @property
    def num_replicas_in_sync(self) -> int:
        """The replicas the strategy will have (a cluster: if every process has this many devices)."""
        if self.name == "one_device":
            return 1
        processes = (
            self.cluster.num_processes if self.name == "multi_worker" and self.cluster else 1
        )
        return processes * jax.local_device_count()

    def build(self):
        """Creates the strategy (``multi_worker`` connects to the cluster)."""
        return getattr(phalanx, self.class_name)()


def choose_strategy(requested: str = "auto") -> StrategyChoice:
    """Chooses the strategy for ``requested`` (one of ``NAMES``) in this environment.

    Raises:
      ClusterConfigError: for ``auto`` and ``multi_worker``, the environment
        describes a cluster, badly (the message names the variable).
    """
    if requested not in NAMES:
        raise ValueError(f"strategy must be one of {', '.join(NAMES)}, got {requested!r}.")
    if requested in ("one_device", "mirrored"):  # no cluster to read: a bad one is no matter
        return StrategyChoice(requested, "asked for")
    cluster = resolve()
    if requested == "multi_worker":
        return StrategyChoice(requested, "asked for", cluster)
    if cluster is not None:
        return StrategyChoice("multi_worker", f"auto: {cluster.describe()}", cluster)
    devices = jax.local_device_count()
    plural = "s" if devices > 1 else ""
    name = "mirrored" if devices > 1 else "one_device"
    return StrategyChoice(name, f"auto: {devices} local device{plural}, no cluster")
