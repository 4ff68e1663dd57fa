"""phalanx.io.gfile: tf.io.gfile's names on plain paths, file:// and memory:// URLs; missing extras."""

from __future__ import annotations

import importlib.util
import uuid

import pytest

from phalanx.callbacks import CSVLogger, TensorBoard
from phalanx.cli import main
from phalanx.data import Dataset, TFRecordDataset
from phalanx.errors import FileSystemNotInstalledError, UnknownProtocolError
from phalanx.io import gfile


@pytest.fixture(params=["plain", "file", "memory"])
def root(request, tmp_path):
    """An empty folder: a plain path, a ``file://`` URL or a ``memory://`` URL."""
    if request.param == "memory":
        url = f"memory://gfile-test-{uuid.uuid4().hex}"
        gfile.makedirs(url)
        yield url
        gfile.rmtree(url)
    else:
        yield str(tmp_path) if request.param == "plain" else f"file://{tmp_path}"


def test_files_folders_and_listing(root):
    gfile.makedirs(gfile.join(root, "a", "b"))
    gfile.makedirs(gfile.join(root, "a", "b"))  # exists already: no error
    with gfile.GFile(gfile.join(root, "a", "b", "x.txt"), "w") as f:
        f.write("one\ntwo\n")
    with gfile.GFile(gfile.join(root, "a", "y.bin"), "wb") as f:
        f.write(b"\x00\x01\x02")
    assert gfile.exists(gfile.join(root, "a", "b", "x.txt"))
    assert not gfile.exists(gfile.join(root, "a", "nothing"))
    assert gfile.isdir(gfile.join(root, "a", "b"))
    assert not gfile.isdir(gfile.join(root, "a", "y.bin"))
    assert gfile.listdir(gfile.join(root, "a")) == ["b", "y.bin"]
    assert gfile.glob(gfile.join(root, "a", "*.bin")) == [gfile.join(root, "a", "y.bin")]
    with gfile.GFile(gfile.join(root, "a", "b", "x.txt")) as f:
        assert list(f) == ["one\n", "two\n"]
    with gfile.GFile(gfile.join(root, "a", "y.bin"), "rb") as f:
        assert f.size() == 3 and f.read(2) == b"\x00\x01" and f.tell() == 2
    stat = gfile.stat(gfile.join(root, "a", "y.bin"))
    assert stat.length == 3 and not stat.is_directory
    walked = {(d.removeprefix(root), tuple(ds), tuple(fs)) for d, ds, fs in gfile.walk(root)}
    assert walked == {("", ("a",), ()), ("/a", ("b",), ("y.bin",)), ("/a/b", (), ("x.txt",))}


def test_copy_rename_remove(root):
    src, dst = gfile.join(root, "src.bin"), gfile.join(root, "dst.bin")
    with gfile.GFile(src, "wb") as f:
        f.write(b"payload")
    gfile.copy(src, dst)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        gfile.copy(src, dst)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        gfile.rename(src, dst)
    gfile.rename(src, dst, overwrite=True)
    assert not gfile.exists(src) and gfile.GFile(dst, "rb").read() == b"payload"
    gfile.remove(dst)
    assert gfile.listdir(root) == []
    with pytest.raises(FileNotFoundError):
        gfile.remove(dst)


def test_copy_across_file_systems(tmp_path):
    url = f"memory://gfile-test-{uuid.uuid4().hex}/copy.bin"
    (tmp_path / "local.bin").write_bytes(b"abc")
    gfile.copy(str(tmp_path / "local.bin"), url)
    gfile.copy(url, f"file://{tmp_path}/back.bin")
    assert (tmp_path / "back.bin").read_bytes() == b"abc"
    gfile.remove(url)


def test_gfile_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="mode must be one of"):
        gfile.GFile("memory://x", "rw")


GCS_MISSING = pytest.mark.skipif(
    importlib.util.find_spec("gcsfs") is not None,
    reason="gcsfs is installed here: the missing-extra error cannot be shown for gs://",
)
EXTRA = r'pip install "phalanx\[gcs\]"'


@GCS_MISSING
def test_gs_paths_without_gcsfs_name_the_extra(tmp_path, capsys):
    with pytest.raises(FileSystemNotInstalledError, match=EXTRA):
        Dataset.list_files("gs://bucket/train-*.tfrecord")
    with pytest.raises(FileSystemNotInstalledError, match=f"needs the gcsfs package.*{EXTRA}"):
        list(TFRecordDataset("gs://bucket/train-00000.tfrecord"))
    with pytest.raises(FileSystemNotInstalledError, match=EXTRA):
        gfile.exists("gs://bucket/x")
    with pytest.raises(FileSystemNotInstalledError, match=EXTRA):
        TensorBoard(log_dir="gs://bucket/logs")
    with pytest.raises(FileSystemNotInstalledError, match=EXTRA):
        CSVLogger("gs://bucket/log.csv")
    with pytest.raises(ImportError):  # a phalanx error is also the builtin a caller catches
        gfile.glob("gs://bucket/*")
    assert main(["records", "verify", "gs://bucket/a.tfrecord"]) == 1
    assert "MISSING  gs://bucket/a.tfrecord: " in (out := capsys.readouterr().out)
    assert 'pip install "phalanx[gcs]"' in out


def test_an_unknown_protocol_says_so():
    with pytest.raises(UnknownProtocolError, match="no file system serves the protocol 'nope'"):
        Dataset.list_files("nope://bucket/*.tfrecord")
