"""``MultiWorkerMirroredStrategy``: synchronous replicas on every device of every process.

The same mesh runtime as ``MirroredStrategy`` (DESIGN.md, decision 4), over
``jax.devices()`` of all processes instead of one process's: XLA's collectives
(gloo on CPU, NCCL on GPU, ICI on TPU) carry the all-reduces between them. The
strategy connects the processes when they are not connected yet
(``phalanx.cluster.initialize`` with the resolver given or found by
``resolve()``); without a cluster it is one process on its local devices, as
TensorFlow's is without ``TF_CONFIG``.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

import jax

from ..cluster import initialize, watchdog
from ..errors import DistributeArgumentError
from ._strategy import Strategy

if TYPE_CHECKING:
    from ..cluster import ClusterResolver


class CommunicationImplementation(enum.Enum):
    """Which collective library to use; XLA picks it on every platform (``AUTO``)."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


@dataclasses.dataclass(frozen=True)
class CommunicationOptions:
    """Options of cross-process communication (``tf.distribute.experimental.CommunicationOptions``).

    Attributes:
      bytes_per_pack: accepted for TensorFlow compatibility; XLA packs collectives itself.
      timeout_seconds: TensorFlow's deadline for a collective, in seconds. Here it
        bounds the processes' connection at start-up (``phalanx.cluster.initialize``)
        and is the watchdog's deadline for an execution of ``fit``/``evaluate``/
        ``predict`` (XLA's collectives take no deadline of their own). None keeps
        the defaults (60 s to connect; ``PHALANX_WATCHDOG_TIMEOUT`` or 120 s).
      implementation: accepted for compatibility; XLA chooses the collectives.
    """

    bytes_per_pack: int = 0
    timeout_seconds: float | None = None
    implementation: CommunicationImplementation = CommunicationImplementation.AUTO

    def __post_init__(self):
        t = self.timeout_seconds
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or t <= 0):
            raise DistributeArgumentError(
                f"timeout_seconds must be a positive number or None, got {t!r}."
            )


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous training across processes (``tf.distribute.MultiWorkerMirroredStrategy``).

    Every process runs the same script. Each holds a replica of the model on
    each of its devices; a global batch is split over all replicas of all
    processes, each process feeding its own share.

    Args:
      cluster_resolver: a ``phalanx.cluster.ClusterResolver``; None to find one
        in the environment (``PHALANX_*`` from ``phalanx launch``, ``TF_CONFIG``,
        Slurm, Kubernetes, TPU VM).
      communication_options: ``CommunicationOptions``.
      shard_parameters: keep parameters and optimizer state split over all
        replicas of all processes (ZeRO-3 / FSDP); phalanx only.

    Raises:
      phalanx.errors.InitializationError: the processes could not connect (the
        subclass says which were missing or where nobody listened).

    Examples:
      >>> s = MultiWorkerMirroredStrategy()  # no cluster: this process's devices
      >>> s.num_replicas_in_sync == jax.device_count()
      True
    """

    def __init__(
        self,
        cluster_resolver: ClusterResolver | None = None,
        communication_options: CommunicationOptions | None = None,
        *,
        shard_parameters: bool = False,
    ):
        self.communication_options = communication_options or CommunicationOptions()
        kwargs = {}
        if self.communication_options.timeout_seconds is not None:
            kwargs["initialization_timeout"] = self.communication_options.timeout_seconds
        self.cluster_resolver = initialize(cluster_resolver, **kwargs)
        if self.communication_options.timeout_seconds is not None:
            watchdog.configure(timeout=self.communication_options.timeout_seconds)
        super().__init__(jax.devices(), shard_parameters=shard_parameters)

    def __repr__(self) -> str:
        return (
            f"MultiWorkerMirroredStrategy({jax.process_count()} process(es), "
            f"{self.num_replicas_in_sync} replica(s))"
        )
