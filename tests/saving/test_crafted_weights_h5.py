"""Crafted ``.weights.h5`` files are refused before a byte of them is read into the model
(issue 29 item 3): external storage and links (which would read another local file into
the weights), declared shapes the model does not have (a gzip kernel declaring 2**28 rows
is a few KB on disk), and arrays that are not numbers. Each error names the file and the
array."""

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import phalanx as px  # noqa: E402
from phalanx.errors import KerasFileError  # noqa: E402


def _model():
    model = px.Sequential([px.layers.Input(shape=(8,)), px.layers.Dense(2)])
    return model


def _write(path, kernel_writer):
    """A Keras 3 layout for ``_model()`` whose kernel ``kernel_writer(vars_group)`` makes."""
    with h5py.File(path, "w") as f:
        group = f.create_group("layers/dense/vars")
        kernel_writer(group)
        group.create_dataset("1", data=np.zeros(2, np.float32))


def test_an_honest_file_loads(tmp_path):
    path = tmp_path / "ok.weights.h5"
    kernel = np.arange(16, dtype=np.float32).reshape(8, 2)
    _write(path, lambda g: g.create_dataset("0", data=kernel))
    model = _model()
    model.load_weights(path)
    np.testing.assert_array_equal(model.get_weights()[0], kernel)


def test_external_raw_storage_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.full(16, 7.0, np.float32).tobytes())
    path = tmp_path / "external.weights.h5"
    _write(
        path,
        lambda g: g.create_dataset("0", shape=(8, 2), dtype="f4", external=[(str(secret), 0, 64)]),
    )
    model = _model()
    before = model.get_weights()
    with pytest.raises(
        KerasFileError, match=r"external\.weights\.h5.*layers/dense/vars/0.*outside"
    ):
        model.load_weights(path)
    for got, want in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["external", "soft"])
def test_links_are_refused(tmp_path, kind):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.create_dataset("k", data=np.ones((8, 2), np.float32))
    path = tmp_path / f"{kind}.weights.h5"

    def writer(group):
        if kind == "external":
            group["0"] = h5py.ExternalLink(str(other), "k")
        else:
            group.file.create_dataset("elsewhere", data=np.ones((8, 2), np.float32))
            group["0"] = h5py.SoftLink("/elsewhere")

    _write(path, writer)
    with pytest.raises(KerasFileError, match=rf"layers/dense/vars/0.*{kind.capitalize()}Link"):
        _model().load_weights(path)


def test_a_huge_declared_shape_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.weights.h5"
    _write(
        path,
        lambda g: g.create_dataset(
            "0", shape=(2**28, 8), dtype="f4", chunks=(1024, 8), compression="gzip"
        ),
    )
    assert path.stat().st_size < 1_000_000
    with pytest.raises(
        KerasFileError, match=r"layer .dense.: .*shape \(268435456, 8\).*expects \(8, 2\)"
    ):
        _model().load_weights(path)


def test_strings_are_not_weights(tmp_path):
    path = tmp_path / "strings.weights.h5"
    strings = np.array([b"x"] * 16, dtype=object).reshape(8, 2)
    _write(path, lambda g: g.create_dataset("0", data=strings, dtype=h5py.string_dtype()))
    with pytest.raises(KerasFileError, match=r"layers/dense/vars/0.*weights are numbers"):
        _model().load_weights(path)
