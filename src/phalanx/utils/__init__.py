"""Keras 3's ``keras.utils``: seeds, labels, sequences, windows, splits, text folders, downloads.

One idea per module: ``set_random_seed`` (``_random_seed``), ``to_categorical``
(``_categorical``), ``PyDataset`` (``_py_dataset``), ``pad_sequences`` (``_sequences``),
``timeseries_dataset_from_array`` (``_timeseries``), ``split_dataset`` (``_split``),
``text_dataset_from_directory`` (``_text_dataset``), ``get_file`` (``_get_file``),
``pack_x_y_sample_weight``/``unpack_x_y_sample_weight`` (``_packing``), ``normalize``
(``_numerical``) and ``clear_session`` (``_session``).
"""

from ._categorical import to_categorical as to_categorical
from ._get_file import get_file as get_file
from ._numerical import normalize as normalize
from ._packing import pack_x_y_sample_weight as pack_x_y_sample_weight
from ._packing import unpack_x_y_sample_weight as unpack_x_y_sample_weight
from ._py_dataset import PyDataset as PyDataset
from ._random_seed import set_random_seed as set_random_seed
from ._sequences import pad_sequences as pad_sequences
from ._session import clear_session as clear_session
from ._split import split_dataset as split_dataset
from ._text_dataset import text_dataset_from_directory as text_dataset_from_directory
from ._timeseries import timeseries_dataset_from_array as timeseries_dataset_from_array

__all__ = [
    "PyDataset",
    "clear_session",
    "get_file",
    "normalize",
    "pack_x_y_sample_weight",
    "pad_sequences",
    "set_random_seed",
    "split_dataset",
    "text_dataset_from_directory",
    "timeseries_dataset_from_array",
    "to_categorical",
    "unpack_x_y_sample_weight",
]
