"""The IDX file format of MNIST (LeCun's): a big-endian header, then raw values."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Reads an IDX file (optionally ``.gz``) into a numpy array.

    Raises:
      ValueError: the file is not IDX or is shorter than its header says.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise ValueError(
            f"{str(path)!r} is not an IDX file: it should start with two zero bytes, a type "
            f"code in {sorted(_DTYPES)} and the number of dimensions; got {data[:4]!r}."
        )
    ndim = data[3]
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_DTYPES[data[2]])
    offset = 4 + 4 * ndim
    expected = int(np.prod(dims)) * dtype.itemsize
    if len(data) - offset < expected:
        raise ValueError(
            f"{str(path)!r} is truncated: its header says {dims} values ({expected} bytes) but "
            f"{len(data) - offset} bytes follow. Download it again."
        )
    return np.frombuffer(data, dtype, count=int(np.prod(dims)), offset=offset).reshape(dims)


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """Writes ``array`` as an IDX file (uint8 or big-endian int32/float32/float64)."""
    array = np.asarray(array)
    codes = {
        np.dtype(np.uint8): 0x08,
        np.dtype(np.int8): 0x09,
        np.dtype(">i2"): 0x0B,
        np.dtype(">i4"): 0x0C,
        np.dtype(">f4"): 0x0D,
        np.dtype(">f8"): 0x0E,
    }
    dtype = array.dtype.newbyteorder(">") if array.dtype.itemsize > 1 else array.dtype
    header = bytes([0, 0, codes[dtype], array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape
    )
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(header + array.astype(dtype).tobytes())
