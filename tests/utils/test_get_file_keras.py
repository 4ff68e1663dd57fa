"""``phalanx.utils.get_file``: Keras 3's cache paths, hash checks and safe extraction.

The machine is offline: files are served by an ``http.server`` on 127.0.0.1 in a thread,
and as ``file://`` URLs. Keras's own ``get_file`` needs no TensorFlow, so the paths and the
cache's contents are compared with it; the rest ports keras/src/utils/file_utils_test.py.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import socket
import tarfile
import threading
import warnings
import zipfile

import keras
import pytest
from keras.src.utils import file_utils as keras_file_utils

from phalanx.errors import DownloadError, FileHashError, UtilsArgumentError
from phalanx.utils import _get_file, get_file

TEXT = b"Float like a butterfly, sting like a bee."


def _tar(members: dict[str, bytes], mode="w:gz", links=()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


class _Server:
    """Serves ``files`` (path -> bytes); ``/short/...`` announces more bytes than it sends,
    ``/stall/...`` sends half the body, then waits until the test ends."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                kind, _, path = self.path.lstrip("/").partition("/")
                body = server.files.get(path if kind in ("short", "stall") else self.path[1:])
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body) * (2 if kind == "short" else 1)))
                self.end_headers()
                if kind == "stall":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    server.release.wait(10)
                    return
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{path}"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    s.files.update(
        {
            "test.txt": TEXT,
            "test.tar.gz": _tar({"test.txt": TEXT, "sub/b.txt": b"b"}),
            "test.zip": _zip({"test.txt": TEXT}),
        }
    )
    yield s
    s.close()


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _tree(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files
    )


CASES = [
    ("test.txt", {"fname": "test.txt"}),
    ("test.txt", {}),  # the name from the URL
    ("test.zip", {"fname": "test", "extract": True}),  # test/ and test_archive
    ("test.tar.gz", {"fname": "test.tar.gz", "extract": True}),  # test_extracted/
    ("test.tar.gz", {"extract": True}),  # test.tar.gz/ and test.tar.gz_archive
    ("test.tar.gz", {"fname": "test.txt.tar.gz", "untar": True}),
    ("test.zip", {"fname": "data", "extract": True, "archive_format": "zip"}),
    ("test.zip", {"fname": "data", "extract": True, "archive_format": "tar"}),  # no match
]


@pytest.mark.parametrize(("served", "kwargs"), CASES)
def test_paths_and_cache_contents_are_keras(tmp_path, server, served, kwargs, recwarn):
    ours, theirs = tmp_path / "phalanx", tmp_path / "keras"
    ours.mkdir(), theirs.mkdir()  # Keras falls back to /tmp/.keras for a missing folder
    origin = server.url(served)
    path = get_file(origin=origin, cache_dir=str(ours), **kwargs)
    want = keras.utils.get_file(origin=origin, cache_dir=str(theirs), **kwargs)
    assert os.path.relpath(path, ours) == os.path.relpath(want, theirs)
    assert _tree(ours) == _tree(theirs)  # no temporary file left behind
    for name in _tree(ours):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes()
    if kwargs.get("archive_format") == "tar":
        assert "Could not extract archive." in str(recwarn.pop(UserWarning).message)


def test_file_urls_with_hashes_and_extraction_as_keras_tests(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "test.tar.gz").write_bytes(_tar({"test.txt": TEXT}))
    (src / "test.zip").write_bytes(_zip({"test.txt": TEXT}))
    (src / "test.txt").write_bytes(TEXT)
    for name in ("test.tar.gz", "test.zip", "test.txt"):
        dest = str(tmp_path / name.replace(".", "_"))  # an absolute cache_subdir is used as is
        md5 = hashlib.md5((src / name).read_bytes()).hexdigest()
        extract = name != "test.txt"
        path = get_file(
            "test", (src / name).as_uri(), md5_hash=md5, extract=extract, cache_subdir=dest
        )
        archive = f"{path}_archive" if extract else path
        assert _get_file.validate_file(archive, md5)
        if extract:
            assert (tmp_path / dest / "test" / "test.txt").read_bytes() == TEXT
    path = get_file(
        "test.txt.tar.gz", (src / "test.tar.gz").as_uri(), untar=True, cache_subdir=dest
    )
    assert path == os.path.join(dest, "test_extracted")
    assert os.path.exists(os.path.join(path, "test.txt"))


def test_cache_reuse_hash_invalidation_and_force_download(tmp_path, capsys):
    src = tmp_path / "test.txt"
    src.write_bytes(TEXT)
    origin, cache = src.as_uri(), str(tmp_path / "cache")
    old = hashlib.sha256(TEXT).hexdigest()
    path = get_file("test.txt", origin, file_hash=old, cache_dir=cache)
    assert "Downloading data from file://" in capsys.readouterr().out
    src.write_bytes(b"Float like a zeppelin.")
    new = hashlib.sha256(b"Float like a zeppelin.").hexdigest()
    assert get_file("test.txt", origin, cache_dir=cache) == path
    assert _read(path) == TEXT and capsys.readouterr().out == ""  # cached
    assert get_file("test.txt", origin, file_hash=new, cache_dir=cache) == path
    assert "because the auto file hash does not match the original value" in capsys.readouterr().out
    assert _get_file.hash_file(path) == new
    src.write_bytes(TEXT)
    get_file("test.txt", origin, force_download=True, cache_dir=cache)
    assert _get_file.hash_file(path) == old
    assert "Downloading" in capsys.readouterr().out
    md5 = hashlib.md5(TEXT).hexdigest()
    assert get_file("test.txt", origin, file_hash=md5, hash_algorithm="md5", cache_dir=cache)
    assert capsys.readouterr().out == ""  # "auto" and "md5" both recognize the cached file
    assert get_file("test.txt", origin, file_hash=md5, cache_dir=cache) == path


def test_a_wrong_hash_raises_and_keeps_nothing(tmp_path):
    src = tmp_path / "test.txt"
    src.write_bytes(TEXT)
    cache = tmp_path / "cache"
    with pytest.raises(FileHashError, match="Incomplete or corrupted file detected.*file://"):
        get_file("test.txt", src.as_uri(), file_hash="0" * 64, cache_dir=str(cache))
    with pytest.raises(ValueError, match="The md5 file hash does not match"):
        get_file("test.txt", src.as_uri(), md5_hash="0" * 32, cache_dir=str(cache))
    assert _tree(cache) == []  # Keras keeps the corrupted file; phalanx does not


def test_default_cache_is_keras_home(tmp_path, monkeypatch):
    src = tmp_path / "a.txt"
    src.write_bytes(TEXT)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    path = get_file(origin=src.as_uri())
    assert path == str(tmp_path / "home" / "datasets" / "a.txt")
    monkeypatch.delenv("KERAS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "user").mkdir()
    assert get_file(origin=src.as_uri(), cache_subdir="x") == str(
        tmp_path / "user" / ".keras" / "x" / "a.txt"
    )


def test_fetch_failures_name_the_url_and_leave_the_cache_clean(tmp_path, server, monkeypatch):
    monkeypatch.setattr(_get_file, "TIMEOUT_S", 0.3)
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError, match=r"URL fetch failure on http://127.*/missing: 404"):
        get_file(origin=server.url("missing"), cache_dir=str(cache))
    with pytest.raises(DownloadError, match=r"on http://127.*/short/test.txt: .*incomplete"):
        get_file(origin=server.url("short/test.txt"), cache_dir=str(cache))
    with pytest.raises(DownloadError, match=r"on http://127.*/stall/test.txt: .*timed out"):
        get_file(origin=server.url("stall/test.txt"), cache_dir=str(cache))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError, match=rf"on http://127.0.0.1:{port}/x.txt: .*refused"):
        get_file(origin=f"http://127.0.0.1:{port}/x.txt", cache_dir=str(cache))
    assert isinstance(DownloadError("x"), OSError)
    assert _tree(cache) == []
    # A failed re-download keeps the cached file whole.
    good = get_file("test.txt", server.url("test.txt"), cache_dir=str(cache))
    with pytest.raises(DownloadError):
        get_file(
            "test.txt", server.url("stall/test.txt"), force_download=True, cache_dir=str(cache)
        )
    assert _read(good) == TEXT and _tree(cache) == ["datasets/test.txt"]


def test_argument_errors_are_keras(tmp_path):
    cache = str(tmp_path)
    with pytest.raises(UtilsArgumentError, match='Please specify the "origin" argument'):
        get_file("a.txt", cache_dir=cache)
    with pytest.raises(ValueError, match="Paths are no longer accepted as the `fname`"):
        get_file(os.path.join("a", "b.txt"), "file:///x", cache_dir=cache)
    with pytest.raises(ValueError, match="Can't parse the file name from the origin"):
        get_file(origin="http://127.0.0.1:1/", cache_dir=cache)
    with pytest.raises(UtilsArgumentError, match="`hash_algorithm` must be one of.*'sha1'"):
        get_file("a", "file:///x", file_hash="0", hash_algorithm="sha1", cache_dir=cache)


def _members(filter_fn, archive_path, base):
    with tarfile.open(archive_path) as tar, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = [m.name for m in filter_fn(tar.getmembers(), base)]
    return names, sorted(str(w.message) for w in caught)


def test_unsafe_members_are_skipped_as_keras_filter(tmp_path, server):
    os.symlink(".", tmp_path / "link")
    evil = _tar(
        {"ok.txt": b"ok", "../evil.txt": b"x", "/abs.txt": b"x", "link/../escaped.txt": b"x"},
        links=[("inside", "ok.txt"), ("out", "../../etc/passwd"), ("abs", "/etc/passwd")],
    )
    (tmp_path / "evil.tar").write_bytes(evil)
    base = str(tmp_path)
    ours = _members(_get_file._safe_tarinfos, tmp_path / "evil.tar", base)
    assert ours == _members(keras_file_utils.filter_safe_tarinfos, tmp_path / "evil.tar", base)
    assert ours[0] == ["ok.txt", "inside"]
    assert "Skipping invalid path during archive extraction: '../evil.txt'." in ours[1]
    server.files["evil.tar.gz"] = _tar(
        {"ok.txt": b"ok", "../evil.txt": b"x"}, links=[("out", "../../../evil.txt")]
    )
    server.files["evil.zip"] = _zip({"ok.txt": b"ok", "../evil.txt": b"x"})
    for name in ("evil.tar.gz", "evil.zip"):
        cache = tmp_path / name.replace(".", "_")
        with pytest.warns(UserWarning) as caught:
            path = get_file("evil", server.url(name), extract=True, cache_dir=str(cache))
        skipped = {str(w.message).split(": ")[1] for w in caught}
        assert skipped == ({"'../evil.txt'.", "'out'."} if "tar" in name else {"'../evil.txt'."})
        assert (cache / "datasets" / "evil" / "ok.txt").read_bytes() == b"ok"
        assert not (cache / "datasets" / "evil.txt").exists()
        assert not (cache / "evil.txt").exists() and path == str(cache / "datasets" / "evil")


def test_a_failed_extraction_removes_the_folder(tmp_path, monkeypatch):
    (tmp_path / "a.tar").write_bytes(_tar({"a.txt": b"a"}, mode="w"))

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tarfile.TarFile, "extractall", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        _get_file.extract_archive(tmp_path / "a.tar", tmp_path / "out", "tar")
    assert not (tmp_path / "out").exists()
    assert _get_file.extract_archive(tmp_path / "a.tar", tmp_path / "out", None) is False
