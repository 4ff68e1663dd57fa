"""scikit-learn's 1797 real 8x8 handwritten digits, bundled with it (no download)."""

from __future__ import annotations

import numpy as np

Split = tuple[np.ndarray, np.ndarray]


def load_data(test_fraction: float = 0.2, seed: int = 0) -> tuple[Split, Split]:
    """Loads the digits as ``(x_train, y_train), (x_test, y_test)``.

    Images are float32 ``[N, 64]`` scaled to ``[0, 1]`` (the raw values are 0-16);
    labels int32 ``[N]``. The split is a seeded shuffle, stratified by nothing.

    Args:
      test_fraction: the share of examples held out, in (0, 1).
      seed: the shuffle's seed.

    Example:
      >>> (x, y), (xt, yt) = load_data()
      >>> x.shape, xt.shape
      ((1438, 64), (359, 64))
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}.")
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    y = bunch.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = len(x) - round(len(x) * test_fraction)
    train, test = order[:cut], order[cut:]
    return (x[train], y[train]), (x[test], y[test])


__all__ = ["load_data"]
