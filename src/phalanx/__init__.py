"""phalanx: synchronous distributed training with tf.distribute's semantics on JAX/XLA.

The same script trains on one CPU, on the devices of one machine and on many
machines. The public names mirror TensorFlow's
``tf.distribute``; see the README's name table.
"""

from . import activations as activations
from . import backend as backend
from . import callbacks as callbacks
from . import checkpoint as checkpoint
from . import cluster as cluster
from . import config as config
from . import constraints as constraints
from . import data as data
from . import datasets as datasets
from . import distribute as distribute
from . import errors as errors
from . import initializers as initializers
from . import layers as layers
from . import losses as losses
from . import metrics as metrics
from . import mixed_precision as mixed_precision
from . import models as models
from . import optimizers as optimizers
from . import regularizers as regularizers
from . import utils as utils
from .distribute import InputContext as InputContext
from .distribute import InputOptions as InputOptions
from .distribute import Mirrored as Mirrored
from .distribute import MirroredStrategy as MirroredStrategy
from .distribute import MultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy
from .distribute import OneDeviceStrategy as OneDeviceStrategy
from .distribute import PerReplica as PerReplica
from .distribute import ReduceOp as ReduceOp
from .distribute import ReplicaContext as ReplicaContext
from .distribute import Strategy as Strategy
from .distribute import TPUStrategy as TPUStrategy
from .distribute import ValueContext as ValueContext
from .distribute import compute_average_loss as compute_average_loss
from .distribute import device as device
from .distribute import get_replica_context as get_replica_context
from .distribute import get_strategy as get_strategy
from .distribute import has_strategy as has_strategy
from .distribute import in_cross_replica_context as in_cross_replica_context
from .distribute import scale_regularization_loss as scale_regularization_loss
from .layers import Input as Input
from .models import Model as Model
from .models import Sequential as Sequential

__version__ = "0.1.0"

__all__ = [
    "Input",
    "InputContext",
    "Model",
    "Sequential",
    "InputOptions",
    "Mirrored",
    "MirroredStrategy",
    "MultiWorkerMirroredStrategy",
    "OneDeviceStrategy",
    "PerReplica",
    "ReduceOp",
    "ReplicaContext",
    "Strategy",
    "TPUStrategy",
    "ValueContext",
    "activations",
    "backend",
    "callbacks",
    "checkpoint",
    "cluster",
    "config",
    "compute_average_loss",
    "data",
    "datasets",
    "device",
    "distribute",
    "errors",
    "get_replica_context",
    "get_strategy",
    "has_strategy",
    "in_cross_replica_context",
    "layers",
    "mixed_precision",
    "losses",
    "metrics",
    "models",
    "optimizers",
    "constraints",
    "initializers",
    "regularizers",
    "scale_regularization_loss",
    "utils",
]
