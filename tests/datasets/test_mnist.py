"""The MNIST loader on small IDX and npz files written here (no network)."""

import io

import numpy as np
import pytest

from phalanx.datasets import mnist
from phalanx.datasets._idx import read_idx, write_idx


def _write_idx_set(directory, n_train=5, n_test=3, gz=False):
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, n_train, dtype=np.uint8),
        "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    suffix = ".gz" if gz else ""
    for key, name in mnist.IDX_FILES.items():
        write_idx(directory / f"{name}{suffix}", arrays[key])
    return arrays


@pytest.mark.parametrize("gz", [False, True])
def test_loads_idx_files(tmp_path, gz):
    arrays = _write_idx_set(tmp_path, gz=gz)
    (x, y), (xt, yt) = mnist.load_data(tmp_path, download=False)
    np.testing.assert_array_equal(x, arrays["x_train"])
    np.testing.assert_array_equal(y, arrays["y_train"])
    np.testing.assert_array_equal(xt, arrays["x_test"])
    np.testing.assert_array_equal(yt, arrays["y_test"])
    assert x.dtype == np.uint8 and x.shape == (5, 28, 28)


def test_idx_header_is_lecuns(tmp_path):
    write_idx(tmp_path / "labels", np.array([1, 2, 3], np.uint8))
    raw = (tmp_path / "labels").read_bytes()
    assert raw[:8] == bytes([0, 0, 8, 1, 0, 0, 0, 3])
    np.testing.assert_array_equal(read_idx(tmp_path / "labels"), [1, 2, 3])


def test_loads_npz(tmp_path):
    data = {
        k: np.zeros((2, 28, 28) if k.startswith("x") else (2,), np.uint8) for k in mnist.IDX_FILES
    }
    np.savez(tmp_path / "mnist.npz", **data)
    (x, _), (xt, _) = mnist.load_data(tmp_path, download=False)
    assert x.shape == (2, 28, 28) and xt.shape == (2, 28, 28)


def test_missing_data_says_what_to_do(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"No MNIST data in .*train-images-idx3-ubyte.*digits"
    ):
        mnist.load_data(tmp_path, download=False)


def test_offline_download_gives_clear_error(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(mnist.urllib.request, "urlopen", offline)
    with pytest.raises(ConnectionError, match=r"Could not download MNIST.*offline"):
        mnist.load_data(tmp_path)
    assert not list(tmp_path.glob("*.part"))


def test_truncated_and_foreign_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match="is not an IDX file"):
        read_idx(tmp_path / "bad")
    write_idx(tmp_path / "ok", np.zeros((4, 3), np.uint8))
    (tmp_path / "cut").write_bytes((tmp_path / "ok").read_bytes()[:-2])
    with pytest.raises(ValueError, match="is truncated"):
        read_idx(tmp_path / "cut")


def _npz_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    zeros = np.zeros((2, 28, 28), np.uint8)
    np.savez(buf, x_train=zeros, y_train=np.uint8([1, 2]), x_test=zeros, y_test=np.uint8([3, 4]))
    return buf.getvalue()


class _Response(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


@pytest.mark.parametrize("terminal", [True, False])
def test_download_shows_a_progress_bar_on_a_terminal(tmp_path, monkeypatch, capsys, terminal):
    import hashlib

    data = _npz_bytes()
    monkeypatch.setattr(mnist, "SHA256", hashlib.sha256(data).hexdigest())
    monkeypatch.setattr(mnist.urllib.request, "urlopen", lambda *a, **k: _Response(data))
    monkeypatch.setenv("TTY_COMPATIBLE", "1" if terminal else "0")
    monkeypatch.setenv("TTY_INTERACTIVE", "1" if terminal else "0")
    (_, y), _ = mnist.load_data(tmp_path)
    assert y.tolist() == [1, 2]
    err = capsys.readouterr().err
    if terminal:
        assert "downloading mnist.npz" in err and f"{len(data) / 1000:.1f}" in err, err
    else:
        assert "downloading" not in err
