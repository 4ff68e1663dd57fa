"""The digits shipped inside phalanx: the same rows as scikit-learn's, offline, no sklearn."""

import subprocess
import sys

import numpy as np
import pytest

from phalanx.datasets import digits
from phalanx.errors import DataLossError


def test_split_covers_every_example_once():
    (x, y), (xt, yt) = digits.load_data(test_fraction=0.25, seed=1)
    assert len(x) + len(xt) == 1797 and len(xt) == round(1797 * 0.25)
    assert x.dtype == np.float32 and x.shape[1] == 64 and x.min() >= 0.0 and x.max() <= 1.0
    assert y.dtype == np.int32 and set(np.unique(y)) == set(range(10))
    both = np.concatenate([np.concatenate([x, xt]), np.concatenate([y, yt])[:, None]], axis=1)
    assert len(np.unique(both, axis=0)) == len(np.unique(digits._rows(), axis=0))


def test_same_rows_as_scikit_learn_where_it_is_installed():
    datasets = pytest.importorskip("sklearn.datasets", reason="scikit-learn not installed")
    bunch = datasets.load_digits()
    rows = digits._rows()
    np.testing.assert_array_equal(rows[:, :64], bunch.data.astype(np.uint8))
    np.testing.assert_array_equal(rows[:, 64], bunch.target)


def test_loading_imports_no_scikit_learn():
    code = (
        "import sys; from phalanx.datasets import digits; digits.load_data(); "
        "assert 'sklearn' not in sys.modules, 'sklearn imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_damaged_file_says_reinstall(monkeypatch):
    monkeypatch.setattr(digits, "_SHA256", "0" * 64)
    with pytest.raises(DataLossError, match="damaged.*Reinstall phalanx"):
        digits.load_data()


def test_bad_test_fraction():
    with pytest.raises(ValueError, match=r"test_fraction must be in \(0, 1\), got 1.5"):
        digits.load_data(test_fraction=1.5)
