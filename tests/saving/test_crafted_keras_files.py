"""Crafted ``.keras`` files are refused with a KerasFileError naming the file, in bounded
memory and without a RecursionError (issue 29 item 4): a config nested 100,000 deep,
configs of the wrong shape, a zip whose config.json inflates past the cap."""

import json
import subprocess
import sys
import zipfile

import pytest

import phalanx as px
from phalanx.errors import KerasFileError

pytest.importorskip("h5py")


def _keras_file(path, config_bytes, weights=b""):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", "{}")
        archive.writestr("config.json", config_bytes)
        archive.writestr("model.weights.h5", weights)
    return path


def _sequential(layers):
    return json.dumps({"class_name": "Sequential", "config": {"name": "s", "layers": layers}})


@pytest.mark.parametrize(
    "config, match",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nests too deep|nests deeper"),
        (json.dumps({"a": [[[[]]]] * 2}).replace("[]", "[" * 300 + "]" * 300), "nests deeper"),
        (b"[]", "holds a list"),
        (b'"x"', "holds a str"),
        (b"null", "holds a NoneType"),
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (json.dumps({"class_name": "Sequential", "config": None}), "no model config"),
        (json.dumps({"class_name": "Sequential", "config": {"layers": "x"}}), "no model config"),
        (_sequential([None]), "layer 0 .*class_name"),
        (_sequential(["x"]), "layer 0 .*class_name"),
        (_sequential([{"class_name": "Dense", "config": None}]), "layer 0 .*class_name"),
        (_sequential([{"class_name": 3, "config": {}}]), "layer 0 .*class_name"),
        (
            json.dumps({"class_name": "Functional", "config": {"layers": [], "input_layers": 3}}),
            "does not describe a model",
        ),
        (json.dumps({"class_name": "Custom", "config": {"layers": []}}), "holds a 'Custom'"),
    ],
)
def test_a_crafted_config_is_refused_naming_the_file(tmp_path, config, match):
    path = _keras_file(tmp_path / "crafted.keras", config)
    with pytest.raises(KerasFileError, match=rf"crafted\.keras.*(?:{match})"):
        px.models.load_model(path)


@pytest.mark.slow
def test_a_zip_bomb_is_refused_in_bounded_memory(tmp_path):
    """256 MiB of config.json (4x the cap) in a small zip, read under a 3 GiB address-space limit (the
    8 simulated devices of the test process are not needed: a fresh interpreter)."""
    path = tmp_path / "bomb.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("config.json", "w", force_zip64=True) as member:
            block = b" " * 2**24
            for _ in range(16):
                member.write(block)
        archive.writestr("model.weights.h5", b"")
    assert path.stat().st_size < 4 * 2**20
    script = (
        "import resource, sys\n"
        "from phalanx.models import load_model\n"
        "from phalanx.errors import KerasFileError\n"
        "limit = 3 * 2**30\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "try:\n"
        f"    load_model({str(path)!r})\n"
        "except KerasFileError as e:\n"
        "    print('refused:', e)\n"
        # VmHWM: this process's own peak (ru_maxrss keeps the forking parent's across exec)
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print('peak_kb', peak.split()[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout and "inflates to more than" in done.stdout, done.stdout
    peak_mb = int(done.stdout.split("peak_kb")[1]) / 1024
    assert peak_mb < 1024, f"peak RSS {peak_mb:.0f} MB reading a zip bomb"


def test_an_honest_file_still_loads(tmp_path):
    model = px.Sequential([px.layers.Input(shape=(4,)), px.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    loaded = px.models.load_model(tmp_path / "m.keras")
    for got, want in zip(loaded.get_weights(), model.get_weights(), strict=True):
        assert (got == want).all()
