"""Keras-style layers built on flax.nnx, with shape inference on first use.

Each layer is an ``nnx.Module`` holding its Keras configuration; it creates
its nnx children (``nnx.Linear``, ``nnx.Conv``, ``nnx.BatchNorm``, ...) when it
learns its input shape (``build``). Stack them in :class:`phalanx.train.Sequential`.
"""

from ._activations import get as get_activation
from ._conv_layers import AveragePooling2D as AveragePooling2D
from ._conv_layers import Conv2D as Conv2D
from ._conv_layers import GlobalAveragePooling2D as GlobalAveragePooling2D
from ._conv_layers import MaxPooling2D as MaxPooling2D
from ._core_layers import Activation as Activation
from ._core_layers import Dense as Dense
from ._core_layers import Dropout as Dropout
from ._core_layers import Embedding as Embedding
from ._core_layers import Flatten as Flatten
from ._core_layers import Input as Input
from ._core_layers import InputLayer as InputLayer
from ._core_layers import Reshape as Reshape
from ._layer import Layer as Layer
from ._merge_layers import Add as Add
from ._merge_layers import Average as Average
from ._merge_layers import Concatenate as Concatenate
from ._merge_layers import Maximum as Maximum
from ._merge_layers import Minimum as Minimum
from ._merge_layers import Multiply as Multiply
from ._merge_layers import Subtract as Subtract
from ._normalization_layers import BatchNormalization as BatchNormalization
from ._normalization_layers import LayerNormalization as LayerNormalization

__all__ = [
    "Activation",
    "Add",
    "Average",
    "Concatenate",
    "AveragePooling2D",
    "BatchNormalization",
    "Conv2D",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GlobalAveragePooling2D",
    "Input",
    "InputLayer",
    "Layer",
    "LayerNormalization",
    "MaxPooling2D",
    "Maximum",
    "Minimum",
    "Multiply",
    "Reshape",
    "Subtract",
    "get_activation",
]
