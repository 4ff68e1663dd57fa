"""Weights files that are not what they claim: each load fails with a phalanx error naming the
file and what is wrong, before reading more than the model's own size, and never suggests
unpickling."""

import io
import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from flax import nnx

from phalanx.errors import WeightsFileError
from phalanx.saving import _npz as _weights

B, W = "['b'].value", "['w'].value"


def _state():
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(np.zeros((4, 3), np.float32))
            self.b = nnx.Param(np.zeros((3,), np.float32))

    return nnx.state(M(), nnx.Param)


def test_round_trip(tmp_path):
    state = _state()
    _weights.save(tmp_path / "w.npz", state)
    loaded = _weights.load(tmp_path / "w.npz", state)
    assert [np.asarray(x).shape for x in __import__("jax").tree.leaves(loaded)] == [(3,), (4, 3)]


def test_random_bytes_are_not_a_weights_file_and_pickle_is_never_suggested(tmp_path):
    path = tmp_path / "random.npz"
    path.write_bytes(np.random.default_rng(0).bytes(1000))
    with pytest.raises(WeightsFileError, match="random.npz.*not a weights file") as e:
        _weights.load(path, _state())
    assert "allow_pickle" not in str(e.value) and "pickle" not in str(e.value).lower()


def test_a_truncated_file_names_the_path(tmp_path):
    path = tmp_path / "cut.npz"
    _weights.save(path, _state())
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(WeightsFileError, match=r"cut\.npz.*(truncated|not a weights file)"):
        _weights.load(path, _state())


def test_a_pickled_member_is_refused_without_unpickling(tmp_path):
    path = tmp_path / "pickled.npz"
    np.savez(path, **{B: np.array([object()], dtype=object), W: np.zeros((4, 3))})
    with pytest.raises(WeightsFileError, match=r"\['b'\].*dtype object") as e:
        _weights.load(path, _state())
    assert "allow_pickle" not in str(e.value)


def test_a_wrong_dtype_is_named(tmp_path):
    path = tmp_path / "strings.npz"
    np.savez(path, **{B: np.array(["a", "b", "c"]), W: np.zeros((4, 3))})
    with pytest.raises(WeightsFileError, match=r"\['b'\].*dtype <U1.*numbers"):
        _weights.load(path, _state())


def test_a_directory_is_named(tmp_path):
    with pytest.raises(WeightsFileError, match="is a directory"):
        _weights.load(tmp_path, _state())


def test_a_path_component_that_is_a_file_is_named_on_save(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(WeightsFileError, match=r"file.* is a file, not a directory"):
        _weights.save(tmp_path / "file" / "w.npz", _state())


def test_wrong_names_and_shapes_are_named(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, **{B: np.zeros(3), W: np.zeros((5, 3))})
    with pytest.raises(WeightsFileError, match=r"\['w'\].*shape \(5, 3\).*\(4, 3\)"):
        _weights.load(path, _state())
    np.savez(path, **{B: np.zeros(3), "['x'].value": np.zeros((4, 3))})
    with pytest.raises(
        WeightsFileError, match=r"missing \[\"\['w'\]\.value\"\], unexpected \[\"\['x'\]\.value\"\]"
    ):
        _weights.load(path, _state())


def test_a_member_whose_data_is_shorter_than_its_header_says(tmp_path):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.zeros((4, 3), np.float32))
    path = tmp_path / "short.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{W}.npy", buffer.getvalue()[:-8])
        b = io.BytesIO()
        np.lib.format.write_array(b, np.zeros(3, np.float32))
        z.writestr(f"{B}.npy", b.getvalue())
    with pytest.raises(WeightsFileError, match=r"\['w'\]\.value in .*short\.npz.*cannot be read"):
        _weights.load(path, _state())


@pytest.mark.timeout(120)
def test_a_1_mb_npz_claiming_1_gib_is_rejected_in_bounded_memory(tmp_path):
    """The headers are checked before any data is read (1 GiB of zeros, deflated to ~1 MB)."""
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z, z.open(f"{W}.npy", "w") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (1 << 28,)}
        )
        zeros = bytes(16 << 20)
        for _ in range(64):
            f.write(zeros)
    assert path.stat().st_size < 4 << 20
    script = textwrap.dedent(
        f"""
        import json, resource
        import numpy as np
        from flax import nnx
        from phalanx.saving import _npz as _weights
        class M(nnx.Module):
            def __init__(self):
                self.w = nnx.Param(np.zeros((4, 3), np.float32))
        state = nnx.state(M(), nnx.Param)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            _weights.load({str(path)!r}, state)
            result = "loaded"
        except Exception as e:
            result = f"{{type(e).__name__}}: {{e}}"
        extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        print(json.dumps({{"extra_mb": extra, "result": result}}))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=100
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    print(out)
    assert out["extra_mb"] < 200, out
    assert out["result"].startswith("WeightsFileError"), out
    assert "bomb.npz" in out["result"] and "shape (268435456,)" in out["result"], out
