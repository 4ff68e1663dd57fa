"""How replicas compute together: strategies, contexts and distributed values."""

from ..cluster import device as device
from ..cluster import resolve_device as resolve_device
from . import cluster_resolver as cluster_resolver
from . import experimental as experimental
from ._context import get_replica_context as get_replica_context
from ._context import get_strategy as get_strategy
from ._context import has_strategy as has_strategy
from ._context import in_cross_replica_context as in_cross_replica_context
from ._cross_device_ops import CrossDeviceOps as CrossDeviceOps
from ._cross_device_ops import HierarchicalCopyAllReduce as HierarchicalCopyAllReduce
from ._cross_device_ops import NcclAllReduce as NcclAllReduce
from ._cross_device_ops import ReductionToOneDevice as ReductionToOneDevice
from ._input import DistributedDataset as DistributedDataset
from ._input import DistributedIterator as DistributedIterator
from ._input import InputContext as InputContext
from ._input import InputOptions as InputOptions
from ._input import InputReplicationMode as InputReplicationMode
from ._layout import DeviceMesh as DeviceMesh
from ._layout import LayoutMap as LayoutMap
from ._loss import compute_average_loss as compute_average_loss
from ._loss import scale_regularization_loss as scale_regularization_loss
from ._mirrored import MirroredStrategy as MirroredStrategy
from ._model_parallel import ModelParallelStrategy as ModelParallelStrategy
from ._multi_worker import CommunicationImplementation as CommunicationImplementation
from ._multi_worker import CommunicationOptions as CommunicationOptions
from ._multi_worker import MultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy
from ._one_device import OneDeviceStrategy as OneDeviceStrategy
from ._reduce_op import ReduceOp as ReduceOp
from ._replica_context import ReplicaContext as ReplicaContext
from ._strategy import Strategy as Strategy
from ._strategy import ValueContext as ValueContext
from ._tpu import TPUStrategy as TPUStrategy
from ._values import Mirrored as Mirrored
from ._values import PerReplica as PerReplica

# isort: split
# For phalanx's own packages (not public API, absent from __all__): placement of host
# arrays on the devices, the layout metadata and the paths a layout map matches, run's
# varying-value checks.
from ._layout import PATH_METADATA as PATH_METADATA
from ._layout import annotate_paths as annotate_paths
from ._one_device import DefaultStrategy as DefaultStrategy
from ._placement import HostBuffer as HostBuffer
from ._placement import host_array as host_array
from ._placement import put as put
from ._placement import put_resident as put_resident
from ._run import check_vma as check_vma
from ._run import is_varying as is_varying

__all__ = [
    "cluster_resolver",
    "experimental",
    "CommunicationImplementation",
    "CommunicationOptions",
    "CrossDeviceOps",
    "HierarchicalCopyAllReduce",
    "MultiWorkerMirroredStrategy",
    "NcclAllReduce",
    "ReductionToOneDevice",
    "TPUStrategy",
    "DeviceMesh",
    "DistributedDataset",
    "DistributedIterator",
    "InputContext",
    "InputOptions",
    "InputReplicationMode",
    "LayoutMap",
    "Mirrored",
    "MirroredStrategy",
    "ModelParallelStrategy",
    "OneDeviceStrategy",
    "PerReplica",
    "ReduceOp",
    "ReplicaContext",
    "Strategy",
    "ValueContext",
    "compute_average_loss",
    "scale_regularization_loss",
    "device",
    "get_replica_context",
    "get_strategy",
    "has_strategy",
    "in_cross_replica_context",
    "resolve_device",
]
