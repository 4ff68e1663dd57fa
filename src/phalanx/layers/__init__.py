"""Keras-style layers built on flax.nnx, with shape inference on first use.

Each layer is an ``nnx.Module`` holding its Keras configuration; it creates
its nnx children (``nnx.Linear``, ``nnx.Conv``, ``nnx.BatchNorm``, ...) when it
learns its input shape (``build``). Stack them in `phalanx.train.Sequential`.
"""

from ..activations import get as get_activation
from ._activation_layers import ELU as ELU
from ._activation_layers import LeakyReLU as LeakyReLU
from ._activation_layers import Permute as Permute
from ._activation_layers import PReLU as PReLU
from ._activation_layers import ReLU as ReLU
from ._activation_layers import RepeatVector as RepeatVector
from ._activation_layers import Softmax as Softmax
from ._attention import MultiHeadAttention as MultiHeadAttention
from ._conv_lstm import ConvLSTM1D as ConvLSTM1D
from ._conv_lstm import ConvLSTM2D as ConvLSTM2D
from ._conv_lstm import ConvLSTM3D as ConvLSTM3D
from ._conv_transpose import Conv1DTranspose as Conv1DTranspose
from ._conv_transpose import Conv2DTranspose as Conv2DTranspose
from ._conv_transpose import Conv3DTranspose as Conv3DTranspose
from ._convolutional import Conv1D as Conv1D
from ._convolutional import Conv2D as Conv2D
from ._convolutional import Conv3D as Conv3D
from ._core import Activation as Activation
from ._core import Dense as Dense
from ._core import Embedding as Embedding
from ._core import Identity as Identity
from ._core import Input as Input
from ._core import InputLayer as InputLayer
from ._core import Lambda as Lambda
from ._core import Masking as Masking
from ._depthwise_separable import DepthwiseConv1D as DepthwiseConv1D
from ._depthwise_separable import DepthwiseConv2D as DepthwiseConv2D
from ._depthwise_separable import SeparableConv1D as SeparableConv1D
from ._depthwise_separable import SeparableConv2D as SeparableConv2D
from ._dot_attention import AdditiveAttention as AdditiveAttention
from ._dot_attention import Attention as Attention
from ._einsum_dense import EinsumDense as EinsumDense
from ._hashing import Hashing as Hashing
from ._index_lookup import IntegerLookup as IntegerLookup
from ._index_lookup import StringLookup as StringLookup
from ._layer import Layer as Layer
from ._merging import Add as Add
from ._merging import Average as Average
from ._merging import Concatenate as Concatenate
from ._merging import Dot as Dot
from ._merging import Maximum as Maximum
from ._merging import Minimum as Minimum
from ._merging import Multiply as Multiply
from ._merging import Subtract as Subtract
from ._merging import add as add
from ._merging import average as average
from ._merging import concatenate as concatenate
from ._merging import dot as dot
from ._merging import maximum as maximum
from ._merging import minimum as minimum
from ._merging import multiply as multiply
from ._merging import subtract as subtract
from ._normalization import BatchNormalization as BatchNormalization
from ._normalization import GroupNormalization as GroupNormalization
from ._normalization import LayerNormalization as LayerNormalization
from ._normalization import RMSNormalization as RMSNormalization
from ._normalization import UnitNormalization as UnitNormalization
from ._pooling import AveragePooling1D as AveragePooling1D
from ._pooling import AveragePooling2D as AveragePooling2D
from ._pooling import AveragePooling3D as AveragePooling3D
from ._pooling import GlobalAveragePooling1D as GlobalAveragePooling1D
from ._pooling import GlobalAveragePooling2D as GlobalAveragePooling2D
from ._pooling import GlobalAveragePooling3D as GlobalAveragePooling3D
from ._pooling import GlobalMaxPooling1D as GlobalMaxPooling1D
from ._pooling import GlobalMaxPooling2D as GlobalMaxPooling2D
from ._pooling import GlobalMaxPooling3D as GlobalMaxPooling3D
from ._pooling import MaxPooling1D as MaxPooling1D
from ._pooling import MaxPooling2D as MaxPooling2D
from ._pooling import MaxPooling3D as MaxPooling3D
from ._preprocessing import CategoryEncoding as CategoryEncoding
from ._preprocessing import CenterCrop as CenterCrop
from ._preprocessing import Normalization as Normalization
from ._preprocessing import Rescaling as Rescaling
from ._preprocessing import Resizing as Resizing
from ._random_image import RandomBrightness as RandomBrightness
from ._random_image import RandomContrast as RandomContrast
from ._random_image import RandomCrop as RandomCrop
from ._random_image import RandomFlip as RandomFlip
from ._random_image import RandomRotation as RandomRotation
from ._random_image import RandomTranslation as RandomTranslation
from ._random_image import RandomZoom as RandomZoom
from ._recurrent import GRU as GRU
from ._recurrent import LSTM as LSTM
from ._recurrent import RNN as RNN
from ._recurrent import Bidirectional as Bidirectional
from ._recurrent import SimpleRNN as SimpleRNN
from ._recurrent_cells import GRUCell as GRUCell
from ._recurrent_cells import LSTMCell as LSTMCell
from ._recurrent_cells import SimpleRNNCell as SimpleRNNCell
from ._regularization import ActivityRegularization as ActivityRegularization
from ._regularization import AlphaDropout as AlphaDropout
from ._regularization import Dropout as Dropout
from ._regularization import GaussianDropout as GaussianDropout
from ._regularization import GaussianNoise as GaussianNoise
from ._regularization import SpatialDropout1D as SpatialDropout1D
from ._regularization import SpatialDropout2D as SpatialDropout2D
from ._regularization import SpatialDropout3D as SpatialDropout3D
from ._reshaping import Cropping1D as Cropping1D
from ._reshaping import Cropping2D as Cropping2D
from ._reshaping import Cropping3D as Cropping3D
from ._reshaping import Flatten as Flatten
from ._reshaping import Reshape as Reshape
from ._reshaping import UpSampling1D as UpSampling1D
from ._reshaping import UpSampling2D as UpSampling2D
from ._reshaping import UpSampling3D as UpSampling3D
from ._reshaping import ZeroPadding1D as ZeroPadding1D
from ._reshaping import ZeroPadding2D as ZeroPadding2D
from ._reshaping import ZeroPadding3D as ZeroPadding3D
from ._spectral_normalization import SpectralNormalization as SpectralNormalization
from ._text_vectorization import TextVectorization as TextVectorization
from ._time_distributed import TimeDistributed as TimeDistributed

# isort: split
# For phalanx's own packages (not public API, absent from __all__): what `models`, `train`
# and `saving` build on -- the layer protocol's helpers, the symbolic tensors of functional
# models, and the weights' views and Keras paths.
from ._layer import Shape as Shape
from ._layer import build_context as build_context
from ._layer import count_params as count_params
from ._layer import format_shape as format_shape
from ._layer import is_traced as is_traced
from ._layer import normalize_shape as normalize_shape
from ._layer import output_mask as output_mask
from ._layer import random_context as random_context
from ._layer import shapes_match as shapes_match
from ._layer import snake_case as snake_case
from ._layer import takes_mask as takes_mask
from ._output_mask import call_with_mask as call_with_mask
from ._output_mask import recall_mask as recall_mask
from ._output_mask import record_output_mask as record_output_mask
from ._output_mask import remember_mask as remember_mask
from ._symbolic import KerasTensor as KerasTensor
from ._symbolic import Node as Node
from ._symbolic import any_symbolic as any_symbolic
from ._symbolic import is_symbolic as is_symbolic
from ._weights import NON_TRAINABLE as NON_TRAINABLE
from ._weights import TRAINABLE as TRAINABLE
from ._weights import Weight as Weight
from ._weights import claim as claim
from ._weights import keras_path as keras_path
from ._weights import lookup_path as lookup_path
from ._weights import split_state as split_state
from ._weights import trainable_filter as trainable_filter
from ._weights import weight_paths as weight_paths
from ._weights import weight_views as weight_views

# Keras's other names for the same classes (keras.layers.MaxPool2D is MaxPooling2D).
AvgPool1D = AveragePooling1D
AvgPool2D = AveragePooling2D
AvgPool3D = AveragePooling3D
Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution3D = Conv3D
Convolution1DTranspose = Conv1DTranspose
Convolution2DTranspose = Conv2DTranspose
Convolution3DTranspose = Conv3DTranspose
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
MaxPool1D = MaxPooling1D
MaxPool3D = MaxPooling3D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
MaxPool2D = MaxPooling2D


__all__ = [
    "Activation",
    "ActivityRegularization",
    "Add",
    "AdditiveAttention",
    "AlphaDropout",
    "Attention",
    "Average",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "BatchNormalization",
    "Bidirectional",
    "CategoryEncoding",
    "CenterCrop",
    "Concatenate",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv3D",
    "Conv2DTranspose",
    "Conv3DTranspose",
    "ConvLSTM1D",
    "ConvLSTM2D",
    "ConvLSTM3D",
    "Convolution1D",
    "Convolution1DTranspose",
    "Convolution2D",
    "Convolution3D",
    "Convolution2DTranspose",
    "Convolution3DTranspose",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "Dense",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "Dot",
    "Dropout",
    "ELU",
    "EinsumDense",
    "Embedding",
    "Flatten",
    "GRU",
    "GRUCell",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "Hashing",
    "Identity",
    "GroupNormalization",
    "Input",
    "InputLayer",
    "IntegerLookup",
    "LSTM",
    "LSTMCell",
    "Lambda",
    "Layer",
    "LayerNormalization",
    "LeakyReLU",
    "Masking",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "Maximum",
    "Minimum",
    "MultiHeadAttention",
    "Multiply",
    "Normalization",
    "PReLU",
    "Permute",
    "RMSNormalization",
    "RNN",
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomRotation",
    "RandomTranslation",
    "RandomZoom",
    "ReLU",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "Resizing",
    "SeparableConv1D",
    "SeparableConv2D",
    "SimpleRNN",
    "SimpleRNNCell",
    "Softmax",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "SpectralNormalization",
    "StringLookup",
    "Subtract",
    "TextVectorization",
    "TimeDistributed",
    "UnitNormalization",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "add",
    "average",
    "concatenate",
    "dot",
    "get_activation",
    "maximum",
    "minimum",
    "multiply",
    "subtract",
]
