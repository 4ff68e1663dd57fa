"""Keras-style layers built on flax.nnx, with shape inference on first use.

Each layer is an ``nnx.Module`` holding its Keras configuration; it creates
its nnx children (``nnx.Linear``, ``nnx.Conv``, ``nnx.BatchNorm``, ...) when it
learns its input shape (``build``). Stack them in :class:`phalanx.train.Sequential`.
"""

from ._activation_layers import ELU as ELU
from ._activation_layers import LeakyReLU as LeakyReLU
from ._activation_layers import Permute as Permute
from ._activation_layers import ReLU as ReLU
from ._activation_layers import RepeatVector as RepeatVector
from ._activation_layers import Softmax as Softmax
from ._activations import get as get_activation
from ._attention import MultiHeadAttention as MultiHeadAttention
from ._convolutional import Conv1D as Conv1D
from ._convolutional import Conv2D as Conv2D
from ._core import Activation as Activation
from ._core import Dense as Dense
from ._core import Embedding as Embedding
from ._core import Input as Input
from ._core import InputLayer as InputLayer
from ._core import Masking as Masking
from ._layer import Layer as Layer
from ._merging import Add as Add
from ._merging import Average as Average
from ._merging import Concatenate as Concatenate
from ._merging import Maximum as Maximum
from ._merging import Minimum as Minimum
from ._merging import Multiply as Multiply
from ._merging import Subtract as Subtract
from ._normalization import BatchNormalization as BatchNormalization
from ._normalization import LayerNormalization as LayerNormalization
from ._pooling import AveragePooling2D as AveragePooling2D
from ._pooling import GlobalAveragePooling1D as GlobalAveragePooling1D
from ._pooling import GlobalAveragePooling2D as GlobalAveragePooling2D
from ._pooling import GlobalMaxPooling1D as GlobalMaxPooling1D
from ._pooling import GlobalMaxPooling2D as GlobalMaxPooling2D
from ._pooling import MaxPooling2D as MaxPooling2D
from ._recurrent import GRU as GRU
from ._recurrent import LSTM as LSTM
from ._recurrent import RNN as RNN
from ._recurrent import Bidirectional as Bidirectional
from ._recurrent import SimpleRNN as SimpleRNN
from ._recurrent_cells import GRUCell as GRUCell
from ._recurrent_cells import LSTMCell as LSTMCell
from ._recurrent_cells import SimpleRNNCell as SimpleRNNCell
from ._regularization import Dropout as Dropout
from ._regularization import GaussianDropout as GaussianDropout
from ._regularization import GaussianNoise as GaussianNoise
from ._regularization import SpatialDropout1D as SpatialDropout1D
from ._regularization import SpatialDropout2D as SpatialDropout2D
from ._reshaping import Flatten as Flatten
from ._reshaping import Reshape as Reshape
from ._reshaping import ZeroPadding1D as ZeroPadding1D
from ._reshaping import ZeroPadding2D as ZeroPadding2D

# Keras's other names for the same classes (keras.layers.MaxPool2D is MaxPooling2D).
AvgPool2D = AveragePooling2D
Convolution1D = Conv1D
Convolution2D = Conv2D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
MaxPool2D = MaxPooling2D

__all__ = [
    "ELU",
    "LeakyReLU",
    "Permute",
    "ReLU",
    "RepeatVector",
    "Softmax",
    "Bidirectional",
    "GRU",
    "GRUCell",
    "LSTM",
    "LSTMCell",
    "Masking",
    "RNN",
    "SimpleRNN",
    "SimpleRNNCell",
    "Activation",
    "Add",
    "Average",
    "AveragePooling2D",
    "AvgPool2D",
    "Convolution1D",
    "Convolution2D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "MaxPool2D",
    "BatchNormalization",
    "Concatenate",
    "Conv1D",
    "Conv2D",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "Input",
    "InputLayer",
    "Layer",
    "LayerNormalization",
    "MaxPooling2D",
    "Maximum",
    "Minimum",
    "MultiHeadAttention",
    "Multiply",
    "Reshape",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "Subtract",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "get_activation",
]
