"""``tf.distribute.cluster_resolver``'s names, for programs that spell them that way.

TensorFlow's TPU programs write ``tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')``;
with the rename ``tf.distribute`` -> ``phalanx.distribute`` that line runs as
written. Each name here is the same object as in `phalanx.cluster`.

Examples:
  >>> import phalanx
  >>> phalanx.distribute.cluster_resolver.TPUClusterResolver is phalanx.cluster.TPUClusterResolver
  True
"""

from ..cluster import ClusterResolver as ClusterResolver
from ..cluster import ClusterSpec as ClusterSpec
from ..cluster import KubernetesClusterResolver as KubernetesClusterResolver
from ..cluster import SimpleClusterResolver as SimpleClusterResolver
from ..cluster import SlurmClusterResolver as SlurmClusterResolver
from ..cluster import TFConfigClusterResolver as TFConfigClusterResolver
from ..cluster import TPUClusterResolver as TPUClusterResolver

__all__ = [
    "ClusterResolver",
    "ClusterSpec",
    "KubernetesClusterResolver",
    "SimpleClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "TPUClusterResolver",
]
