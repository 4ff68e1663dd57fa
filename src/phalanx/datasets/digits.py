"""The 1797 real 8x8 handwritten digits (UCI), shipped inside phalanx (no download).

The data file is ``data/digits.u8.gz`` (46 KB): the rows scikit-learn's
``load_digits()`` returns, in the same order; its source, licence (CC BY 4.0) and
format are in ``data/DIGITS_SOURCE.md``. Reading it runs no code from the file:
gzip, then raw bytes.
"""

from __future__ import annotations

import gzip
import hashlib
from importlib import resources

import numpy as np

from phalanx.errors import DataLossError

_FILE = "digits.u8.gz"
_ROWS, _COLS = 1797, 65
_SHA256 = "68aea062d35a127749050fa0e52dca09d6569ac08092c925610e0954e172dde2"

Split = tuple[np.ndarray, np.ndarray]


def load_data(test_fraction: float = 0.2, seed: int = 0) -> tuple[Split, Split]:
    """Loads the digits as ``(x_train, y_train), (x_test, y_test)``.

    Images are float32 ``[N, 64]`` scaled to ``[0, 1]`` (the raw values are 0-16);
    labels int32 ``[N]``. The split is a seeded shuffle, stratified by nothing.

    Args:
      test_fraction: the share of examples held out, in (0, 1).
      seed: the shuffle's seed.

    Examples:
      >>> (x, y), (xt, yt) = load_data()
      >>> x.shape, xt.shape
      ((1438, 64), (359, 64))
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}.")
    rows = _rows()
    x = rows[:, :64].astype(np.float32) / np.float32(16.0)
    y = rows[:, 64].astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) - round(len(x) * test_fraction)
    train, test = order[:cut], order[cut:]
    return (x[train], y[train]), (x[test], y[test])


def _rows() -> np.ndarray:
    """The shipped file's ``[1797, 65]`` uint8 rows, checked against its SHA-256."""
    path = resources.files("phalanx.datasets").joinpath("data", _FILE)
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as e:
        raise DataLossError(
            f"The digits data shipped with phalanx ({path}) cannot be read: {e}. "
            "Reinstall phalanx (pip install --force-reinstall phalanx)."
        ) from e
    if hashlib.sha256(raw).hexdigest() != _SHA256 or len(raw) != _ROWS * _COLS:
        raise DataLossError(
            f"The digits data shipped with phalanx ({path}) is damaged (its SHA-256 is not "
            f"{_SHA256}). Reinstall phalanx (pip install --force-reinstall phalanx)."
        )
    return np.frombuffer(raw, np.uint8).reshape(_ROWS, _COLS)


__all__ = ["load_data"]
